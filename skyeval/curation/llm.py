"""One completion per prompt from any model config (`ReferenceConfig`, `HTTPConfig`,
`VLLMConfig` ...): the helper behind rewriting and difficulty labelling."""

from __future__ import annotations

from typing import Any

from skyeval.backends.base import GenerationRequest, GenerationResult, Prompt, SamplingParams, ScalingConfig


def complete(
    model_config: Any,
    prompts: dict[str, Prompt],
    sampling: SamplingParams | None = None,
    scaling: ScalingConfig | None = None,
) -> dict[str, GenerationResult]:
    """`{key: result}` for `{key: prompt}`: builds the backend, generates, closes it.
    Failed requests come back as results with `error` set."""
    backend = model_config.build(scaling or ScalingConfig())
    requests = [GenerationRequest(id=key, prompt=prompt, sample_indices=[0]) for key, prompt in prompts.items()]
    try:
        return {r.id: r for r in backend.generate(requests, sampling or SamplingParams())}
    finally:
        backend.close()
