"""skyeval: evaluate LLMs on reasoning benchmarks and generate training data.

Lazy re-exports only: `import skyeval` imports none of ray, vllm, openai, datasets,
math_verify or torch.
"""

from importlib import import_module
from typing import Any

_EXPORTS = {
    "SkyEnvBuilder": "skyeval.envs.registry",
    "Env": "skyeval.envs.base",
    "MathEnv": "skyeval.envs.math",
    "MathScorer": "skyeval.envs.math",
    "ChoiceScorer": "skyeval.envs.choice",
    "CodeScorer": "skyeval.envs.code",
    "ReadabilityScorer": "skyeval.curation.readability",
    "Template": "skyeval.templates",
    "SamplingParams": "skyeval.backends.base",
    "ScalingConfig": "skyeval.backends.base",
    "ReferenceConfig": "skyeval.backends.reference",
    "HTTPConfig": "skyeval.backends.openai",
    "OpenAIBatchConfig": "skyeval.backends.openai_batch",
    "VLLMConfig": "skyeval.backends.vllm",
    "RayConfig": "skyeval.backends.ray",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'skyeval' has no attribute {name!r}")
    return getattr(import_module(_EXPORTS[name]), name)
