"""`model_config=ray`: data-parallel vLLM replicas through Ray Data.

`ray.data.llm.build_processor(vLLMEngineProcessorConfig(...))` runs
`scaling.num_replicas` engine actors (each `tensor_parallel_size` GPUs of
`scaling.accelerator_type`, or one CPU bundle with `use_cpu`).

The dataset is built lazily from the caller's request iterator: a driver thread pulls
requests only while fewer than `window` samples are in flight (pulled but not yet
yielded back) and hands them in chunks to a Ray queue; a generator-based Ray Data source
(one read task) reads that queue, so the stream is never materialised. Workers render
prompts to token ids with `skyeval.backends.vllm.render_prompt` (the same tokens as the
vLLM backend), one row per wanted sample with its own seed, and after the engine split
reasoning from the answer and count its tokens; Ray's chat-template, tokenize and
detokenize stages are off. The driver only turns output rows into results.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

from skyeval import reasoning
from skyeval.backends.base import (
    VLLM_INSTALL,
    GenerationRequest,
    GenerationResult,
    ModelConfig,
    SamplingParams,
    ScalingConfig,
    error_result,
    require,
    sample_seed,
    usage,
)
from skyeval.backends.vllm import (
    load_tokenizer,
    opens_block,
    reasoning_tokens,
    render_prompt,
    sampling_kwargs,
    vllm_version,
)
from skyeval.errors import ConfigError

log = logging.getLogger(__name__)

RESULT_COLUMNS = ["id", "sample_idx", "seed", "generation", "reasoning", "finish_reason", "prompt_tokens",
                  "completion_tokens", "reasoning_tokens", "error", "error_type"]
WINDOW_BATCHES = 4  # samples in flight: this many batches per replica


@dataclass
class RayConfig(ModelConfig):
    """Config of the Ray backend (`conf/model_config/ray.yaml`). Replicas, batch size and
    accelerator type are the root `scaling` section's (`ScalingConfig`), not repeated here."""

    tensor_parallel_size: int = 1
    ray_address: str | None = None  # null: $RAY_ADDRESS, else the cluster `ray start` made, else local; "local": private
    dtype: str = "float32"
    chat: bool | None = None
    use_cpu: bool = False  # CPU bundles instead of GPUs (tests, CI)
    engine_kwargs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self, model: str | None) -> None:
        super().__post_init__(model)
        self.engine_kwargs = dict(self.engine_kwargs or {})
        clash = {"model", "dtype", "tensor_parallel_size"} & self.engine_kwargs.keys()
        if clash:
            raise ConfigError(f"set {sorted(clash)} through their own model_config fields, not engine_kwargs")
        if isinstance(self.tensor_parallel_size, bool) or not isinstance(self.tensor_parallel_size, int) \
                or self.tensor_parallel_size < 1:
            raise ConfigError(f"model_config.tensor_parallel_size must be an integer >= 1, got {self.tensor_parallel_size!r}")

    def build(self, scaling: ScalingConfig | None = None) -> "RayBackend":
        require("vllm", VLLM_INSTALL)
        return RayBackend(self, scaling)


class RayBackend:
    """Generates with vLLM replicas on Ray; implements `base.Backend`. Each `generate`
    call starts its own replicas; the Ray session (`skyeval.ray_session`) is shared."""

    def __init__(self, config: RayConfig, scaling: ScalingConfig | None = None) -> None:
        self.config = config
        self.scaling = scaling or ScalingConfig()
        self._sent: dict[str, Any] = {}

    def __repr__(self) -> str:
        return f"RayBackend(model_source={self.config.model_source!r}, num_replicas={self.scaling.num_replicas})"

    def window(self) -> int:
        """Samples in flight: enough for every replica to have its next batches waiting."""
        return WINDOW_BATCHES * self.scaling.batch_size * self.scaling.num_replicas

    def generate(
        self, requests: Iterable[GenerationRequest], sampling: SamplingParams
    ) -> Iterator[GenerationResult]:
        """Yield one result per (request id, sample index), as output blocks arrive."""
        import ray.data
        from ray.data.llm import build_processor
        from ray.util.queue import Queue

        from skyeval.ray_session import ensure_ray

        ensure_ray(self.config.ray_address)
        self._sent = {k: v for k, v in sampling_kwargs(sampling, None).items() if k not in ("n", "seed")}
        chunks = Queue(maxsize=2, actor_options={"num_cpus": 0})
        feeder = _Feeder(iter(requests), chunks, self.window(), self.scaling.batch_size)
        config, max_tokens = self.config, sampling.max_tokens
        dataset = ray.data.read_datasource(_QueueSource(chunks), override_num_blocks=1, ray_remote_args={"num_cpus": 0})
        batch = self.scaling.batch_size
        dataset = dataset.map_batches(_Render(config, sampling.to_dict()), batch_size=batch, batch_format="pyarrow")
        dataset = build_processor(self.processor_config())(dataset)
        dataset = dataset.map_batches(_Finish(config, max_tokens), batch_size=batch, batch_format="pyarrow")
        # Ray Data buffers a task's output until a block reaches target_max_block_size (128 MiB):
        # the one long read task would hold the whole stream. A tiny target makes every chunk a
        # block at once; the stages above bundle rows back into batches of `batch_size`.
        dataset.context.target_max_block_size = 1
        feeder.start()
        try:
            for row in dataset.select_columns(RESULT_COLUMNS).iter_rows():
                feeder.done(1)
                yield _to_result(row)
            feeder.join()
        finally:
            feeder.stop()
            chunks.shutdown(force=True)

    def processor_config(self) -> Any:
        """The `vLLMEngineProcessorConfig` for this backend."""
        from ray.data.llm import vLLMEngineProcessorConfig

        config, scaling = self.config, self.scaling
        placement = {"bundles": [{"CPU": 1}] * config.tensor_parallel_size} if config.use_cpu else None
        return vLLMEngineProcessorConfig(
            model_source=config.model_source,
            engine_kwargs={
                "dtype": config.dtype,
                "tensor_parallel_size": config.tensor_parallel_size,
                # per-request stats become a struct column that Ray 2.60 fails to
                # concatenate with the null column of an error row in the same block
                "disable_log_stats": True,
                **config.engine_kwargs,
            },
            batch_size=scaling.batch_size,
            concurrency=scaling.num_replicas,
            accelerator_type=None if config.use_cpu else scaling.accelerator_type,
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
            "model": self.config.model_source,
            "engine": "vllm",
            **vllm_version(),
            "ray_version": ray.__version__,
            **self.config.described(),
            "num_replicas": self.scaling.num_replicas,
            "accelerator_type": "CPU" if self.config.use_cpu else self.scaling.accelerator_type,
            "batch_size": self.scaling.batch_size,
            "sampling_sent": dict(self._sent),
        }

    def close(self) -> None:
        """Nothing to release: replicas, queue and feeder end with each `generate`; the
        Ray session is shared."""


class _Feeder(threading.Thread):
    """Pulls requests on the driver while fewer than `window` samples are in flight and
    puts them in chunks of about `batch_size` samples into the Ray queue; `None` ends it.
    An error of the request iterator is re-raised by `join()` after what was pulled."""

    def __init__(self, source: Iterator[GenerationRequest], chunks: Any, window: int, batch_size: int) -> None:
        super().__init__(name="skyeval-ray-feeder", daemon=True)
        self.source, self.chunks, self.window, self.batch_size = source, chunks, window, batch_size
        self.in_flight = 0
        self.error: BaseException | None = None
        self._room = threading.Condition()
        self._stopped = False

    def done(self, samples: int) -> None:
        with self._room:
            self.in_flight -= samples
            self._room.notify()

    def stop(self) -> None:
        with self._room:
            self._stopped = True
            self._room.notify()

    def join(self, timeout: float | None = None) -> None:
        super().join(timeout)
        if self.error is not None:
            raise self.error

    def run(self) -> None:
        chunk: list[dict[str, Any]] = []
        size = 0
        try:
            while True:
                with self._room:
                    while self.in_flight >= self.window and not self._stopped:
                        if chunk:  # the window is full: send what we have, or nothing moves
                            break
                        self._room.wait()
                    if self._stopped:
                        return
                    full = self.in_flight >= self.window
                if full:
                    self._put(chunk)
                    chunk, size = [], 0
                    continue
                request = next(self.source, None)
                if request is None:
                    break
                chunk.append({"id": request.id, "prompt": json.dumps(request.prompt),
                              "sample_indices": list(request.sample_indices)})
                size += len(request.sample_indices)
                with self._room:
                    self.in_flight += len(request.sample_indices)
                if size >= self.batch_size:
                    self._put(chunk)
                    chunk, size = [], 0
        except BaseException as exc:  # noqa: BLE001 (re-raised by join in the consumer)
            self.error = exc
        if chunk:
            self._put(chunk)
        self._put(None)

    def _put(self, item: list[dict[str, Any]] | None) -> None:
        from ray.util.queue import Full

        while not self._stopped:
            try:
                self.chunks.put(item, timeout=1.0)
                return
            except Full:
                continue


class _QueueSource:
    """A Ray Data source with one read task that yields a block per chunk of the queue
    until `None` (a generator-based source: nothing is listed up front)."""

    def __new__(cls, chunks: Any) -> Any:
        from ray.data import Datasource
        from ray.data.block import BlockMetadata
        from ray.data.datasource import ReadTask

        class QueueSource(Datasource):
            def estimate_inmemory_data_size(self) -> None:
                return None

            def get_read_tasks(self, parallelism: int, **_: Any) -> list[ReadTask]:
                def read() -> Iterator[Any]:
                    import pyarrow

                    while (chunk := chunks.get()) is not None:
                        yield pyarrow.Table.from_pylist(chunk)

                metadata = BlockMetadata(num_rows=None, size_bytes=None, input_files=None, exec_stats=None)
                return [ReadTask(read, metadata)]

        return QueueSource()


class _Render:
    """Worker stage: one row per wanted sample, with its prompt's token ids and seed."""

    def __init__(self, config: RayConfig, sampling: dict[str, Any]) -> None:
        self.config, self.sampling = config, sampling

    def __call__(self, table: Any) -> Any:
        import pyarrow

        config, sampling = self.config, SamplingParams(**self.sampling)
        tokenizer = load_tokenizer(config.model_source, config.engine_kwargs)
        rows = []
        for request in table.to_pylist():
            error, tokens, opened = None, [0], False
            try:
                tokens = render_prompt(tokenizer, json.loads(request["prompt"]), config.chat)
                opened = opens_block(tokenizer, tokens, config.think_tags)
            except Exception as exc:  # noqa: BLE001 (a bad prompt is that problem's error; 1 token still runs)
                error = f"{type(exc).__name__}: {exc}"[:1000]
            for idx in request["sample_indices"]:
                seed = sample_seed(sampling.seed, idx)
                params = {k: v for k, v in sampling_kwargs(sampling, seed).items() if v is not None}
                if error:
                    params["max_tokens"] = 1
                rows.append({"id": request["id"], "sample_idx": idx, "seed": seed, "opened": opened,
                             "render_error": error, "tokenized_prompt": tokens, "sampling_params": params})
        return pyarrow.Table.from_pylist(rows)


class _Finish:
    """Worker stage: the engine's output row as result fields (reasoning split, tokens
    counted). Ray does not report vLLM's finish reason: "length" when `max_tokens`
    tokens were generated, else "stop"."""

    def __init__(self, config: RayConfig, max_tokens: int) -> None:
        self.config, self.max_tokens = config, max_tokens

    def __call__(self, table: Any) -> Any:
        import pyarrow

        config = self.config
        tokenizer = load_tokenizer(config.model_source, config.engine_kwargs)
        rows = []
        for row in table.to_pylist():
            out = {k: row.get(k) for k in ("id", "sample_idx", "seed")}
            error = row.get("render_error") or row.get("__inference_error__")
            if error:
                message = str(error)
                out.update(error=message[:1000], error_type=message.split(":", 1)[0])
            else:
                token_ids = list(row.get("generated_tokens") or [])
                completion = int(row["num_generated_tokens"])
                thought, answer = reasoning.split(row["generated_text"], config.think_tags, opened=bool(row["opened"]))
                out.update(
                    generation=answer, reasoning=thought,
                    finish_reason="length" if completion >= self.max_tokens else "stop",
                    prompt_tokens=int(row["num_input_tokens"]), completion_tokens=completion,
                    reasoning_tokens=reasoning_tokens(tokenizer, token_ids, thought, answer, config.think_tags),
                )
            rows.append({k: out.get(k) for k in RESULT_COLUMNS})
        return pyarrow.Table.from_pylist(rows)


def _to_result(row: dict[str, Any]) -> GenerationResult:
    request_id, idx, seed = str(row["id"]), int(row["sample_idx"]), row["seed"]
    seed = None if seed is None else int(seed)
    if row["error"]:
        return error_result(request_id, idx, row["error"], row["error_type"], seed=seed)
    return GenerationResult(
        request_id, idx, generation=row["generation"], reasoning=row["reasoning"], finish_reason=row["finish_reason"],
        usage=usage(int(row["prompt_tokens"]), int(row["completion_tokens"]), int(row["reasoning_tokens"])), seed=seed,
    )
