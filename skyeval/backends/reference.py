"""`model_config=reference`: replays each problem's gold solution as the generation.

No GPU, key or network needed. It is the offline default and the self-check of every
scorer: a scorer that does not give the reference ~100% is broken. It always reports
itself as the model `reference`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Iterator

from skyeval import reasoning
from skyeval.backends.base import (
    GenerationRequest,
    GenerationResult,
    ModelConfig,
    SamplingParams,
    ScalingConfig,
    error_result,
    sample_seed,
)
from skyeval.errors import ConfigError


@dataclass
class ReferenceConfig(ModelConfig):
    """Config of the reference backend (`conf/model_config/reference.yaml`)."""

    model_source: str | None = "reference"

    def __post_init__(self, model: str | None) -> None:
        super().__post_init__(model)
        if self.model_source != "reference":
            raise ConfigError(
                f"model_config.model_source={self.model_source} but no backend is chosen, so the reference backend "
                "(which replays gold answers) would run: pick one with model_config=openai|vllm|ray "
                "(or `type:` in a config file)")

    def build(self, scaling: ScalingConfig | None = None) -> "ReferenceBackend":
        return ReferenceBackend(self)


class ReferenceBackend:
    """Yields `request.reference` for every requested sample, one request at a time. A
    continued sample (a tool loop's next turn) gets an empty completion: the gold
    solution was all of it."""

    def __init__(self, config: ReferenceConfig | None = None) -> None:
        self.config = config or ReferenceConfig()

    def generate(self, requests: Iterable[GenerationRequest], sampling: SamplingParams) -> Iterator[GenerationResult]:
        for request in requests:
            for idx in request.sample_indices:
                seed = sample_seed(sampling.seed, idx)
                if request.continuation is not None:
                    yield GenerationResult(request.id, idx, generation="", finish_reason="stop", seed=seed, text="")
                    continue
                if request.reference is None:
                    yield error_result(request.id, idx, "no reference solution", "NoReference", seed=seed)
                    continue
                thought, answer = reasoning.split(request.reference, self.config.think_tags)
                yield GenerationResult(request.id, idx, generation=answer, reasoning=thought,
                                       finish_reason="stop", seed=seed, text=request.reference)

    def describe(self) -> dict[str, Any]:
        return {"backend": "reference", "model": "reference", "engine": "reference",
                **self.config.described()}

    def close(self) -> None:
        """Nothing to release."""
