"""`model_config=ray`: data-parallel vLLM replicas through Ray Data.

`ray.data.llm.build_processor(vLLMEngineProcessorConfig(...))` runs
`scaling.num_replicas` engine actors (each `tensor_parallel_size` GPUs of
`scaling.accelerator_type`, or one CPU bundle with `use_cpu`).

The request iterator is read in bounded segments of `segment_samples` samples (default
`SEGMENT_BATCHES x batch_size x num_replicas`): each segment becomes a small Ray Dataset
(one block per batch of requests) that runs through the replicas while the driver holds
only that segment's requests; the stream is never materialised. Workers render prompts
to token ids with `skyeval.backends.vllm.render_prompt` (the same tokens as the vLLM
backend), one row per wanted sample with its own seed, and after the engine split
reasoning from the answer and count its tokens; Ray's chat-template, tokenize and
detokenize stages are off. With `generate_recorded` (what the pipeline uses) a last stage
of `num_replicas` actors (`_Record`; `writer_cpus` CPUs each) writes each result to its own part
files in the shared run folder and scores it there: the driver receives notes (score and
failure records without texts), not generations.

Trade-off: Ray Data starts a processor's replicas per dataset, so each segment starts
them anew (30 s to minutes): keep segments large on real runs (the default is 256
batches per replica). A generator-based source that keeps one dataset open for the whole
stream stalls in Ray 2.60 (a long read task's output is held until it ends).
"""

from __future__ import annotations

import json
import logging
import os
import warnings
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

from skyeval import reasoning
from skyeval.backends.base import (
    VLLM_INSTALL,
    EngineConfig,
    GenerationRequest,
    GenerationResult,
    ResultSink,
    SamplingParams,
    ScalingConfig,
    continued_prompt,
    error_result,
    operational,
    ready_now,
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
from skyeval.errors import ClusterError, ConfigError, RunFolderError, require
from skyeval.results import RunFolder, dumps

log = logging.getLogger(__name__)

RESULT_COLUMNS = ["id", "sample_idx", "seed", "generation", "reasoning", "finish_reason", "prompt_tokens",
                  "completion_tokens", "reasoning_tokens", "error", "error_type", "text"]
SEGMENT_BATCHES = 256  # samples per segment: this many batches per replica


@dataclass
class RayConfig(EngineConfig):
    """Config of the Ray backend (`conf/model_config/ray.yaml`; engine fields in
    `EngineConfig`). Replicas, batch size and accelerator type are the root `scaling`
    section's (`ScalingConfig`), not repeated here; each replica gets
    `tensor_parallel_size` GPUs (its placement group is sized from that field alone)."""

    ray_address: str | None = operational()  # null: $RAY_ADDRESS, else a private local Ray; "auto": this node's `ray start` cluster
    use_cpu: bool = operational(False)  # CPU bundles instead of GPUs (tests, CI)
    segment_samples: int | None = operational()  # samples per dataset; None: SEGMENT_BATCHES x batch_size x num_replicas

    def __post_init__(self, model: str | None) -> None:
        super().__post_init__(model)
        if self.segment_samples is not None and (not isinstance(self.segment_samples, int) or self.segment_samples < 1):
            raise ConfigError(f"model_config.segment_samples must be null or an integer >= 1, got {self.segment_samples!r}")

    def build(self, scaling: ScalingConfig | None = None) -> "RayBackend":
        """The backend, attached to its Ray (joined now: a cluster that refuses us or does not
        answer fails here, before any run folder is claimed)."""
        from skyeval.backends.ray_session import ensure_ray

        require("vllm", VLLM_INSTALL)
        ensure_ray(self.ray_address)
        return RayBackend(self, scaling)


class RayBackend:
    """Generates with vLLM replicas on Ray; implements `base.Backend`. Each `generate`
    call starts its own replicas; the Ray session (`skyeval.backends.ray_session`) is shared."""

    def __init__(self, config: RayConfig, scaling: ScalingConfig | None = None) -> None:
        self.config = config
        self.scaling = scaling or ScalingConfig()
        self._sent: dict[str, Any] = {}

    def __repr__(self) -> str:
        return f"RayBackend(model_source={self.config.model_source!r}, num_replicas={self.scaling.num_replicas})"

    def window(self) -> int:
        """Samples per segment: the most requests the driver holds at once."""
        return self.config.segment_samples or SEGMENT_BATCHES * self.scaling.batch_size * self.scaling.num_replicas

    def generate(
        self, requests: Iterable[GenerationRequest], sampling: SamplingParams
    ) -> Iterator[GenerationResult]:
        """Yield one result per (request id, sample index), as output blocks arrive."""
        for row in self._rows(requests, sampling, None):
            yield _to_result(row)

    def generate_recorded(
        self, requests: Iterable[GenerationRequest], sampling: SamplingParams, sink: ResultSink
    ) -> Iterator[dict[str, Any]]:
        """Hand each result to `sink` on the workers; yield the notes it returns."""
        for row in self._rows(requests, sampling, sink):
            yield json.loads(row["note"])

    def _rows(self, requests: Iterable[GenerationRequest], sampling: SamplingParams,
              sink: ResultSink | None) -> Iterator[dict[str, Any]]:
        from skyeval.backends.ray_session import ensure_ray

        ensure_ray(self.config.ray_address)
        if sink is not None:
            check_visible(sink.folder)
        self._sent = {k: v for k, v in sampling_kwargs(sampling, None).items() if k not in ("n", "seed")}
        for segment in _segments(iter(requests), self.window(), sampling.max_tokens, with_problem=sink is not None):
            yield from self._run(segment, sampling, sink)

    def _run(self, segment: list[dict[str, Any]], sampling: SamplingParams,
             sink: ResultSink | None) -> Iterator[dict[str, Any]]:
        """Output rows of one segment of requests through fresh replicas: results, or the
        sink's notes."""
        import ray.data
        from ray.data.llm import build_processor

        config, batch = self.config, self.scaling.batch_size
        requests_per_block = max(1, batch // sampling.n)  # about one engine batch of samples per block
        dataset = ray.data.from_items(segment, override_num_blocks=max(1, -(-len(segment) // requests_per_block)))
        dataset = dataset.map_batches(_Render(config, sampling.to_dict()), batch_size=None, batch_format="pyarrow")
        dataset = build_processor(self.processor_config())(dataset)
        dataset = dataset.map_batches(_Finish(config, sampling.max_tokens), batch_size=None, batch_format="pyarrow")
        if sink is not None:
            dataset = _recorded(dataset, sink, self.scaling.num_replicas, self.writer_cpus())
        else:
            dataset = dataset.select_columns(RESULT_COLUMNS)
        try:
            yield from dataset.iter_rows()
        except _lost_errors() as err:
            raise ClusterError(f"a Ray node or worker was lost mid-run ({type(err).__name__}: "
                               f"{str(err).splitlines()[0]}); finished samples are saved: re-run the same command "
                               "to resume (scaling.num_replicas may change)") from err

    def writer_cpus(self) -> int:
        """CPUs each writer asks for: 1 when the cluster has them beside the replicas and one
        render or finish task (then Ray spreads writers over nodes by free CPUs), else 0, so a
        2-CPU node still runs a CPU replica and that task (which Ray fuses with its own
        1-CPU pre/post-processing) beside the writers, which then score on spare cycles."""
        import ray

        replica_cpus = self.scaling.num_replicas * self.config.tensor_parallel_size
        needed = replica_cpus + self.scaling.num_replicas + 1
        return 1 if ray.cluster_resources().get("CPU", 0) >= needed else 0

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
            concurrency=(scaling.num_replicas, scaling.num_replicas),  # an int n is an autoscaling 1..n pool
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
        """Nothing to release: replicas end with each segment; the Ray session is shared."""


def _recorded(dataset: Any, sink: ResultSink, writers: int, cpus: int) -> Any:
    """The results through `writers` `_Record` actors of `cpus` CPUs. No restarts: a writer that died
    mid-block wrote part of it, and a retry would write those samples twice; the run stops
    instead, and resuming finds what was written."""
    import ray.data

    with warnings.catch_warnings():  # Ray 2.60 names no parameter for max_restarts yet
        warnings.filterwarnings("ignore", message=".*ray_remote_args.*deprecated")
        return dataset.map_batches(_Record, fn_constructor_args=(sink,), batch_size=None, batch_format="pyarrow",
                                   num_cpus=cpus,
                                   compute=ray.data.ActorPoolStrategy(size=writers), max_restarts=0)


def check_visible(folder: str) -> None:
    """Refuse, before any engine starts, a run folder that some live node cannot see: its
    writers would fail there (the folder must be on a filesystem every node shares)."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    run_file = str(RunFolder(folder).run_file)
    sees = ray.remote(num_cpus=0)(os.path.exists)
    nodes = [node for node in ray.nodes() if node.get("Alive")]
    checks = [sees.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False))
              .remote(run_file) for node in nodes]
    blind = []
    for node, check in zip(nodes, checks):
        try:
            seen = ray.get(check)
        except (ray.exceptions.TaskUnschedulableError, *_lost_errors()):  # died since listed: it runs no writer
            continue
        if not seen:
            blind.append(node["NodeManagerAddress"])
    if blind:
        raise RunFolderError(f"run folder {folder} is not visible on Ray node(s) {', '.join(blind)}: every node "
                             "must see logging.results_dir at the same path (a shared filesystem)")


def _lost_errors() -> tuple[type[Exception], ...]:
    """Ray's errors for a node, worker or object lost (not an error of our own code)."""
    from ray import exceptions

    return (exceptions.RayActorError, exceptions.NodeDiedError, exceptions.ObjectLostError,
            exceptions.WorkerCrashedError)


def _segments(source: Iterator[GenerationRequest], samples: int, max_tokens: int,
              with_problem: bool = False) -> Iterator[list[dict[str, Any]]]:
    """The requests as rows (the prompt, continued when the request continues a sample,
    and the templated problem `with_problem`, JSON-encoded: text and chat prompts share a
    column; the request's completion budget), in lists of about `samples` samples, or
    fewer where the source has no request ready (a turn loop whose samples are in tools);
    the next list is read only when asked."""
    segment: list[dict[str, Any]] = []
    size = 0
    for request in source:
        row = {"id": request.id, "prompt": json.dumps(continued_prompt(request.prompt, request.continuation)),
               "sample_indices": list(request.sample_indices), "max_tokens": request.max_tokens or max_tokens}
        if with_problem:
            row["problem"] = dumps(request.problem)
        segment.append(row)
        size += len(request.sample_indices)
        if size >= samples or not ready_now(source):
            yield segment
            segment, size = [], 0
    if segment:
        yield segment


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
                params["max_tokens"] = 1 if error else request["max_tokens"]
                rows.append({"id": request["id"], "sample_idx": idx, "seed": seed, "opened": opened,
                             "max_tokens": request["max_tokens"],
                             "render_error": error, "tokenized_prompt": tokens, "sampling_params": params,
                             **({"problem": request["problem"]} if "problem" in request else {})})
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
                    generation=answer, reasoning=thought, text=row["generated_text"],
                    finish_reason="length" if completion >= (row.get("max_tokens") or self.max_tokens) else "stop",
                    prompt_tokens=int(row["num_input_tokens"]), completion_tokens=completion,
                    reasoning_tokens=reasoning_tokens(tokenizer, token_ids, thought, answer, config.think_tags),
                )
            rows.append({k: out.get(k) for k in RESULT_COLUMNS})
            if "problem" in row:
                rows[-1]["problem"] = row["problem"]
        return pyarrow.Table.from_pylist(rows)


class _Record:
    """Worker stage (an actor): a `ResultSink` opened once, fed the results; returns its
    notes, one JSON string per row."""

    def __init__(self, sink: ResultSink) -> None:
        import ray

        self.writer = sink.open(f"{ray.get_runtime_context().get_node_id()[:8]}-{os.getpid()}")

    def __call__(self, table: Any) -> Any:
        import pyarrow

        notes = self.writer.write_all([(_to_result(row), json.loads(row["problem"])) for row in table.to_pylist()])
        return pyarrow.table({"note": [dumps(note) for note in notes]})

    def __del__(self) -> None:  # Ray Data calls it when the pool shuts down gracefully
        if hasattr(self, "writer"):
            self.writer.close()


def _to_result(row: dict[str, Any]) -> GenerationResult:
    request_id, idx, seed = str(row["id"]), int(row["sample_idx"]), row["seed"]
    seed = None if seed is None else int(seed)
    if row["error"]:
        return error_result(request_id, idx, row["error"], row["error_type"], seed=seed)
    return GenerationResult(
        request_id, idx, generation=row["generation"], reasoning=row["reasoning"], finish_reason=row["finish_reason"],
        usage=usage(int(row["prompt_tokens"]), int(row["completion_tokens"]), int(row["reasoning_tokens"])), seed=seed,
        text=row.get("text"),
    )
