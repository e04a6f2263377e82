"""IFEval grading: the 25 instruction checkers and strict/loose verdicts (docs/benchmarks.md)."""

from skyeval.scorers.ifeval.checkers import CHECKERS
from skyeval.scorers.ifeval.grade import instruction_arguments, loose_variants, score_ifeval

__all__ = ["CHECKERS", "instruction_arguments", "loose_variants", "score_ifeval"]
