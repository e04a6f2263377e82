"""`model_config=ray`: data-parallel vLLM replicas through Ray Data.

`ray.data.llm.build_processor(vLLMEngineProcessorConfig(...))` runs `num_replicas`
engine actors (each `tensor_parallel_size` GPUs, or one CPU bundle with `use_cpu`).
Prompts are rendered to token ids on the driver by `skyeval.backends.vllm.render_prompt`
(so both vLLM backends send identical tokens), one row per wanted sample with its own
seed; Ray's chat-template, tokenize and detokenize stages are off. Output rows are
streamed back as blocks finish. Each `generate` call starts its own replicas.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

from skyeval.backends.base import (
    VLLM_INSTALL,
    GenerationRequest,
    GenerationResult,
    SamplingParams,
    ScalingConfig,
    require,
    sample_seed,
)
from skyeval.backends.vllm import (
    error_result,
    load_tokenizer,
    render_prompt,
    sampling_kwargs,
    vllm_version,
)

log = logging.getLogger(__name__)

OUTPUT_COLUMNS = ["id", "sample_idx", "generated_text", "num_input_tokens", "num_generated_tokens", "__inference_error__"]


@dataclass
class RayConfig:
    """Config of the Ray backend (`conf/model_config/ray.yaml`).

    `scaling` is not consulted by `build`: ray.yaml takes `num_replicas` and
    `batch_size` from the root `scaling` section by interpolation.
    """

    model_source: str
    num_replicas: int = 1
    tensor_parallel_size: int = 1
    accelerator_type: str | None = None
    ray_address: str | None = None
    engine_kwargs: dict[str, Any] = field(default_factory=dict)
    dtype: str = "float32"
    batch_size: int = 16
    use_cpu: bool = False
    chat: bool | None = None

    def build(self, scaling: ScalingConfig | None = None) -> "RayBackend":
        require("vllm", VLLM_INSTALL)
        return RayBackend(
            self.model_source,
            self.engine_kwargs,
            num_replicas=self.num_replicas,
            tensor_parallel_size=self.tensor_parallel_size,
            accelerator_type=self.accelerator_type,
            ray_address=self.ray_address,
            dtype=self.dtype,
            batch_size=self.batch_size,
            use_cpu=self.use_cpu,
            chat=self.chat,
        )


class RayBackend:
    """Generates with vLLM replicas on Ray; implements `base.Backend`.

    Joins the cluster at `ray_address` (else `$RAY_ADDRESS`), else starts a local Ray;
    a Ray already initialised in this process is reused.
    """

    def __init__(
        self,
        model_source: str,
        engine_kwargs: dict[str, Any] | None = None,
        *,
        num_replicas: int = 1,
        tensor_parallel_size: int = 1,
        accelerator_type: str | None = None,
        ray_address: str | None = None,
        dtype: str = "float32",
        batch_size: int = 16,
        use_cpu: bool = False,
        chat: bool | None = None,
    ) -> None:
        engine_kwargs = dict(engine_kwargs or {})
        clash = {"model", "dtype", "tensor_parallel_size"} & engine_kwargs.keys()
        if clash:
            raise ValueError(f"set {sorted(clash)} through their own arguments, not engine_kwargs")
        if num_replicas < 1 or tensor_parallel_size < 1 or batch_size < 1:
            raise ValueError("num_replicas, tensor_parallel_size and batch_size must be >= 1")
        self.model_source = model_source
        self.engine_kwargs = engine_kwargs
        self.num_replicas = num_replicas
        self.tensor_parallel_size = tensor_parallel_size
        self.accelerator_type = accelerator_type
        self.ray_address = ray_address
        self.dtype = dtype
        self.batch_size = batch_size
        self.use_cpu = use_cpu
        self.chat = chat
        self._tokenizer: Any = None

    def __repr__(self) -> str:
        return f"RayBackend(model_source={self.model_source!r}, num_replicas={self.num_replicas})"

    @property
    def tokenizer(self) -> Any:
        if self._tokenizer is None:
            self._tokenizer = load_tokenizer(self.model_source, self.engine_kwargs)
        return self._tokenizer

    def generate(
        self, requests: Sequence[GenerationRequest], sampling: SamplingParams
    ) -> Iterator[GenerationResult]:
        """Yield one result per (request id, sample index), as output blocks arrive."""
        rows: list[dict[str, Any]] = []
        for request in requests:
            try:
                tokens = render_prompt(self.tokenizer, request.prompt, self.chat)
            except Exception as exc:  # noqa: BLE001 (a bad prompt is that problem's error)
                for idx in request.sample_indices:
                    yield error_result(request.id, idx, exc)
                continue
            rows.extend(_row(request.id, idx, tokens, sampling) for idx in request.sample_indices)
        if rows:
            for row in self._run(rows).iter_rows():
                yield _to_result(row, sampling.max_tokens)

    def _run(self, rows: list[dict[str, Any]]) -> Any:
        """The (lazy) output dataset of the vLLM processor over `rows`."""
        import ray.data
        from ray.data.llm import build_processor

        from skyeval.ray_session import ensure_ray

        ensure_ray(self.ray_address)
        blocks = math.ceil(len(rows) / self.batch_size)
        dataset = ray.data.from_items(rows, override_num_blocks=blocks)
        processor = build_processor(self.processor_config())
        return processor(dataset).select_columns(OUTPUT_COLUMNS)

    def processor_config(self) -> Any:
        """The `vLLMEngineProcessorConfig` for this backend."""
        from ray.data.llm import vLLMEngineProcessorConfig

        placement = None
        if self.use_cpu:
            placement = {"bundles": [{"CPU": 1}] * self.tensor_parallel_size}
        return vLLMEngineProcessorConfig(
            model_source=self.model_source,
            engine_kwargs={
                "dtype": self.dtype,
                "tensor_parallel_size": self.tensor_parallel_size,
                # per-request stats become a struct column that Ray 2.60 fails to
                # concatenate with the null column of an error row in the same block
                "disable_log_stats": True,
                **self.engine_kwargs,
            },
            batch_size=self.batch_size,
            concurrency=self.num_replicas,
            accelerator_type=None if self.use_cpu else self.accelerator_type,
            placement_group_config=placement,
            should_continue_on_error=True,
            log_engine_metrics=False,
            chat_template_stage=False,
            tokenize_stage=False,
            detokenize_stage=False,
        )

    def describe(self) -> dict[str, Any]:
        import ray

        return {
            "backend": "ray",
            "model": self.model_source,
            **vllm_version(),
            "ray_version": ray.__version__,
            "dtype": self.dtype,
            "tensor_parallel_size": self.tensor_parallel_size,
            "num_replicas": self.num_replicas,
            "accelerator_type": "CPU" if self.use_cpu else self.accelerator_type,
            "batch_size": self.batch_size,
            "chat": self.chat,
            "engine_kwargs": self.engine_kwargs,
        }

    def close(self) -> None:
        """Nothing to release: replicas end with each `generate`; the Ray session is shared."""


def _row(request_id: str, idx: int, tokens: list[int], sampling: SamplingParams) -> dict[str, Any]:
    params = {k: v for k, v in sampling_kwargs(sampling, sample_seed(sampling.seed, idx)).items() if v is not None}
    return {"id": request_id, "sample_idx": idx, "tokenized_prompt": tokens, "sampling_params": params}


def _to_result(row: dict[str, Any], max_tokens: int) -> GenerationResult:
    """An output row as a result. Ray does not report vLLM's finish reason: "length"
    when `max_tokens` tokens were generated, else "stop"."""
    request_id, idx = str(row["id"]), int(row["sample_idx"])
    if row["__inference_error__"]:
        message = str(row["__inference_error__"])
        return GenerationResult(request_id, idx, error=message[:1000], error_type=message.split(":", 1)[0])
    completion_tokens = int(row["num_generated_tokens"])
    return GenerationResult(
        request_id,
        idx,
        generation=row["generated_text"],
        finish_reason="length" if completion_tokens >= max_tokens else "stop",
        usage={"prompt_tokens": int(row["num_input_tokens"]), "completion_tokens": completion_tokens},
    )
