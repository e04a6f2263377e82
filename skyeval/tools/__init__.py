"""Tools a model calls while it answers, and the turn loop that runs them (docs/tools.md)."""

from skyeval.tools.config import ToolsConfig
from skyeval.tools.loop import TurnLoop, needs_loop

__all__ = ["ToolsConfig", "TurnLoop", "needs_loop"]
