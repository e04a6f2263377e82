"""`ToolsConfig`: the `tools` config group (`tools=none`, the default, or `tools=python`)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from skyeval.backends.base import operational
from skyeval.errors import ConfigError

TOOLS = ("none", "python")
CONTINUATIONS = ("same_message", "next_message")


@dataclass
class ToolsConfig:
    """What a model may call while it answers (`conf/tools/*.yaml`; docs/tools.md).

    `name`: `none` (no tools: generation as without this section) or `python` (a reply
    that ends with a `code_fence` block has the block run in the sandbox, and what it
    printed is appended in an `output_fence` block before the model goes on).

    - `max_calls`: programs run per sample (4, as Qwen2.5-Math's harness); the reply
      after the last one ends the sample, whatever it holds.
    - `timeout_s`: CPU seconds per call (5, as Qwen2.5-Math's harness); the wall clock
      allows `wall_multiple` times that. `memory_mb`: the call's address space.
    - `output_chars`: an output longer than this keeps its first and last halves around
      a `[... N characters cut ...]` marker (400, as Qwen2.5-Math's harness).
    - `stateful`: each call first re-runs the sample's earlier calls that succeeded, their
      output discarded, so names and imports carry over (as Qwen2.5-Math's and ToRA's
      harnesses do); false: every program stands alone.
    - `continuation`: how a chat model goes on after a tool output: `same_message` (its
      assistant message continues, vLLM's `continue_final_message`; a server that refuses
      it gets the output as the next message from then on) or `next_message` (the output
      is a user message and the model answers in a new assistant message).
    - `workers`: sandbox worker processes running calls (null: one per core); how calls
      are run, not what they produce (left out of the run folder's fingerprint).
    """

    name: str = "none"
    max_calls: int = 4
    timeout_s: float = 5.0
    wall_multiple: float = 3.0
    memory_mb: int = 2048
    output_chars: int = 400
    stateful: bool = True
    continuation: str = "same_message"
    code_fence: str = "```python"
    output_fence: str = "```output"
    close_fence: str = "```"
    workers: int | None = operational()

    def __post_init__(self) -> None:
        def need(ok: bool, key: str, rule: str) -> None:
            if not ok:
                raise ConfigError(f"tools.{key} must be {rule}, got {getattr(self, key)!r}")

        need(self.name in TOOLS, "name", f"one of {', '.join(TOOLS)} (tools=none|python)")
        need(_integer(self.max_calls) and self.max_calls >= 1, "max_calls", "an integer >= 1")
        need(_number(self.timeout_s) and self.timeout_s > 0, "timeout_s", "a number of seconds > 0")
        need(_number(self.wall_multiple) and self.wall_multiple >= 1, "wall_multiple", "a number >= 1")
        need(_integer(self.memory_mb) and self.memory_mb >= 64, "memory_mb", "an integer >= 64")
        need(_integer(self.output_chars) and self.output_chars >= 40, "output_chars", "an integer >= 40")
        need(isinstance(self.stateful, bool), "stateful", "true or false")
        need(self.continuation in CONTINUATIONS, "continuation", f"one of {', '.join(CONTINUATIONS)}")
        for key in ("code_fence", "output_fence", "close_fence"):
            value = getattr(self, key)
            need(isinstance(value, str) and value.strip() == value and bool(value) and "\n" not in value, key,
                 "a non-empty one-line string without surrounding spaces")
        need(self.code_fence != self.output_fence, "output_fence", "different from tools.code_fence")
        need(self.workers is None or (_integer(self.workers) and self.workers >= 1), "workers",
             "null or an integer >= 1")

    @property
    def active(self) -> bool:
        """Whether the model gets a tool (anything but `tools=none`)."""
        return self.name != "none"

    def settings(self) -> dict[str, Any]:
        """The fields that decide what is generated (all but the operational ones)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if not f.metadata.get("operational")}


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
