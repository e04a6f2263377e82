"""Training data from scored runs (docs/curation.md).

Rejection sampling, best-of-N, rewriting, preference pairs, SFT rows (messages or
ShareGPT, with metadata) and difficulty labels; every row read through one reader
(`skyeval.curation.conversations`); decontamination and dedup
(`skyeval.curation.decontaminate`, `skyeval.curation.dedup`, imported where used: they need
numpy and datasketch)."""

from skyeval.curation.best_of_n import aggregate_question, best_of_n
from skyeval.curation.difficulty import (
    DifficultyParseError,
    DifficultyResult,
    label_difficulty,
    parse_difficulty,
)
from skyeval.curation.llm import Completions, complete, compose_model_config
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
from skyeval.curation.exports import ReasoningFormat, conversation, metadata, sft_row, to_sharegpt
from skyeval.curation.runs import StepLog, load_env, load_scored, run_info, to_dataset

__all__ = [
    "Completions", "DifficultyParseError", "DifficultyResult", "GSM8KRejectionEnv", "MathRejectionEnv",
    "NuminaRejectionEnv", "ReasoningFormat", "Readability", "ReadabilityScorer", "RejectionSampling", "RewriteResult",
    "StepLog", "aggregate_question", "best_of_n", "complete", "compose_model_config", "conversation", "judge",
    "keep_passing", "label_difficulty", "load_env", "load_scored", "metadata", "parse_difficulty", "passes",
    "preference_pairs", "question_pairs", "readability", "response_length", "rewrite", "run_info", "sft_row",
    "to_dataset", "to_sharegpt",
]
