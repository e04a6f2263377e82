"""`model_config=reference`: replays each problem's gold solution as the generation.

No GPU, key or network needed. It is the offline default and the self-check of every
scorer: a scorer that does not give the reference ~100% is broken.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from skyeval.backends.base import GenerationRequest, GenerationResult, SamplingParams, ScalingConfig


@dataclass
class ReferenceConfig:
    """Config of the reference backend (`conf/model_config/reference.yaml`)."""

    model_source: str = "reference"

    def build(self, scaling: ScalingConfig | None = None) -> "ReferenceBackend":
        return ReferenceBackend(self.model_source)


class ReferenceBackend:
    """Yields `request.reference` for every requested sample."""

    def __init__(self, model_source: str = "reference") -> None:
        self.model_source = model_source

    def generate(self, requests: Sequence[GenerationRequest], sampling: SamplingParams) -> Iterator[GenerationResult]:
        for request in requests:
            for idx in request.sample_indices:
                if request.reference is None:
                    yield GenerationResult(request.id, idx, error="no reference solution", error_type="NoReference")
                else:
                    yield GenerationResult(request.id, idx, generation=request.reference, finish_reason="stop")

    def describe(self) -> dict[str, Any]:
        return {"backend": "reference", "model": self.model_source}

    def close(self) -> None:
        pass
