"""Training data from scored runs (docs/curation.md).

Rejection sampling, best-of-N, rewriting, preference pairs, ShareGPT SFT rows and
difficulty labels; decontamination and dedup (`skyeval.curation.decontaminate`,
`skyeval.curation.dedup`, imported where used: they need numpy and datasketch)."""

from skyeval.curation.best_of_n import aggregate_question, best_of_n
from skyeval.curation.difficulty import (
    DifficultyParseError,
    DifficultyResult,
    label_difficulty,
    parse_difficulty,
)
from skyeval.curation.llm import complete, compose_model_config
from skyeval.curation.pairs import preference_pairs, question_pairs, response_length
from skyeval.curation.readability import Readability, ReadabilityScorer, readability
from skyeval.curation.rejection import (
    GSM8KRejectionEnv,
    MathRejectionEnv,
    NuminaRejectionEnv,
    RejectionSampling,
    judge,
    keep_passing,
    passes,
)
from skyeval.curation.rewrite import RewriteResult, rewrite
from skyeval.curation.runs import StepLog, load_env, load_scored, to_dataset
from skyeval.curation.sharegpt import ReasoningFormat, sharegpt_row, to_sharegpt

__all__ = [
    "DifficultyParseError", "DifficultyResult", "GSM8KRejectionEnv", "MathRejectionEnv", "NuminaRejectionEnv",
    "ReasoningFormat", "Readability", "ReadabilityScorer", "RejectionSampling", "RewriteResult", "StepLog", "aggregate_question", "best_of_n", "complete", "compose_model_config", "judge",
    "keep_passing", "label_difficulty", "load_env", "load_scored", "parse_difficulty", "passes", "preference_pairs",
    "question_pairs", "readability", "response_length", "rewrite", "sharegpt_row", "to_dataset", "to_sharegpt",
]
