"""Grading beyond the rules: a model as judge where the math rules cannot decide (docs/grading.md).

`GradingConfig` is the `grading:` section; `rule_verdict` reads the rules' three-way
verdict; `judge_pairs` asks a judge model about (problem, gold, answer) triples."""

from skyeval.grading.config import MODES, GradingConfig
from skyeval.grading.judge import Judge, JudgeCache, Judgement, JudgeItem, judge_pairs
from skyeval.grading.verdicts import parse_verdict, rule_verdict

__all__ = ["MODES", "GradingConfig", "Judge", "JudgeCache", "JudgeItem", "Judgement", "judge_pairs",
           "parse_verdict", "rule_verdict"]
