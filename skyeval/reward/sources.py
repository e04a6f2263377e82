"""Which env grades a trainer's `data_source` (verl's parquet column): the one table.

Keys are compared case-insensitively. Our own env names map to themselves; the others are
the dataset ids verl's example preprocessing scripts write (`examples/data_preprocess`)
and common hub ids of the same benchmarks. Code sources are ours only: other
preprocessors write tests in formats our sandbox grader does not read."""

from __future__ import annotations

import difflib

from skyeval.errors import ConfigError

DATA_SOURCES: dict[str, str] = {
    "openai/gsm8k": "gsm8k",
    "gsm8k": "gsm8k",
    "lighteval/math": "math500",
    "digitallearninggmbh/math-lighteval": "math500",
    "hendrycks/competition_math": "math500",
    "huggingfaceh4/math-500": "math500",
    "math": "math500",
    "math_dapo": "math500",
    "math-dapo": "math500",
    "bytedtsinghua-sia/dapo-math-17k": "math500",
    "deepscaler": "math500",
    "agentica-org/deepscaler-preview-dataset": "math500",
    "aime": "aime24",
    "ai-mo/aimo-validation-aime": "aime24",
    "math-ai/aime25": "aime25",
    "ai-mo/numinamath-cot": "numina",
    "idavidrein/gpqa": "gpqa_diamond",
    "tiger-lab/mmlu-pro": "mmlu_pro",
    "allenai/ai2_arc": "arc_c",
}


def env_for(data_source: str) -> str:
    """The env name for `data_source`; an unknown one is a ConfigError naming the closest."""
    from skyeval.envs.registry import SkyEnvBuilder

    key = str(data_source).strip().lower()
    names = SkyEnvBuilder.names()
    by_key = {name.lower(): name for name in names}  # env names keep their case (gaokao2024_I)
    if key in by_key:
        return by_key[key]
    if key in DATA_SOURCES:
        return DATA_SOURCES[key]
    known = sorted(set(names) | set(DATA_SOURCES))
    close = difflib.get_close_matches(key, known, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    raise ConfigError(f"no skyeval env grades data_source {data_source!r}.{hint} Known: env names and "
                      f"{sorted(DATA_SOURCES)} (skyeval/reward/sources.py)")
