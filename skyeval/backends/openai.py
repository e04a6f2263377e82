"""OpenAI-compatible HTTP backend (`model_config=openai`).

Talks to anything that serves the OpenAI chat/completions API: OpenAI, `vllm serve`, and
Anthropic, OpenRouter, Together ... through their OpenAI-compatible endpoints. An asyncio
loop in a background thread keeps up to `concurrency` requests in flight; `generate`
yields each result as it completes. The SDK's retries are off: our loop retries 408, 409,
429, 5xx, timeouts, dropped connections and malformed responses with exponential backoff
and jitter, honouring `Retry-After`, and logs every retry.
"""

from __future__ import annotations

import asyncio
import email.utils
import ipaddress
import json
import logging
import os
import queue
import random
import re
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import KW_ONLY, dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Callable, Iterable, Iterator
from urllib.parse import urlsplit, urlunsplit

from skyeval import reasoning
from skyeval.backends.base import (
    GenerationRequest,
    GenerationResult,
    ModelConfig,
    Prompt,
    SamplingParams,
    ScalingConfig,
    continued_prompt,
    error_result,
    operational,
    sample_seed,
)
from skyeval.backends.base import usage as make_usage
from skyeval.errors import ConfigError, EndpointError

log = logging.getLogger(__name__)

NO_KEY = "EMPTY"  # sent when no key is configured (vLLM's convention for open servers)
_REASONING_NAME = re.compile(r"(^|/)(o\d|gpt-5)")  # o1, o3-mini, o4-mini, gpt-5*, openai/o3
_REJECTED_PARAM = re.compile(
    r"(?:unsupported parameter|unsupported value|unrecognized request argument supplied)\W+(\w+)",
    re.IGNORECASE,
)
# vLLM's server: "n must be 1 when using greedy sampling" (temperature 0).
_N_MUST_BE_ONE = re.compile(r"\bn must be 1\b", re.IGNORECASE)
_DROPPABLE = frozenset({  # what a 400 "unsupported parameter" may make us stop sending
    "n", "temperature", "top_p", "top_k", "max_tokens", "max_completion_tokens", "seed", "stop",
    "continue_final_message", "add_generation_prompt",
})
_NOT_SAMPLING = frozenset({"model", "messages", "prompt", "n", "seed"})  # per request, not settings
_END = object()  # end of one generate() call's queue
Emit = Callable[[object], None]  # hands a result or a window release to the consumer


@dataclass
class HTTPConfig(ModelConfig):
    """`model_config=openai`: an OpenAI-compatible endpoint and how hard to call it.

    The key: `api_key` when given (used, never written: not in repr, describe() or any
    saved config), else the environment variable `api_key_env` names, read at build time;
    `api_key_env: null` means the server needs no key (a placeholder is sent). A missing
    variable is an error, except for loopback URLs (local `vllm serve`, test servers).

    `fan_out_n`: None asks for `n` choices in one request and fans out to one request per
    sample once the server returns fewer; True always fans out; False never does (missing
    choices become errors). `reasoning_model` (None: guessed from the name: o1/o3/o4/gpt-5)
    drops temperature/top_p and sends `max_completion_tokens`. Backoff waits
    `backoff_base_s * 2**attempt` (times a 0.5-1 jitter), or the server's `Retry-After`,
    at most `backoff_max_s`.
    """

    api_url: str = operational("https://api.openai.com/v1")
    api_key_env: str | None = operational("OPENAI_API_KEY")
    timeout_s: float = operational(600.0)
    max_retries: int = operational(6)
    requests_per_minute: float | None = operational()
    tokens_per_minute: float | None = operational()  # counts prompt (~chars/4) + max_tokens * n, as OpenAI does
    fan_out_n: bool | None = None
    reasoning_model: bool | None = None
    backoff_base_s: float = operational(1.0)
    backoff_max_s: float = operational(60.0)
    _: KW_ONLY
    api_key: str | None = field(default=None, repr=False)

    def __post_init__(self, model: str | None) -> None:
        super().__post_init__(model)
        if self.max_retries < 0 or self.timeout_s <= 0:
            raise ConfigError("model_config.max_retries must be >= 0 and model_config.timeout_s > 0")

    def build(self, scaling: ScalingConfig | None = None) -> OpenAIBackend:
        api_key = self.api_key or read_api_key(self.api_key_env, self.api_url)
        check_reachable(self.api_url)
        return OpenAIBackend(self, scaling, api_key=api_key)


def check_reachable(api_url: str, timeout_s: float = 10.0) -> None:
    """Fail early, before any sample is sent, when nothing listens at `api_url`'s host
    (a TCP connect: costs no API call). Servers that answer with errors are left to the
    retry loop."""
    parts = urlsplit(api_url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((parts.hostname, port), timeout=timeout_s).close()
    except OSError as err:
        raise EndpointError(f"cannot reach {api_url} ({parts.hostname}:{port}): {err}. "
                            "Check model_config.api_url and that the server is up.") from None


def read_api_key(env_var: str | None, api_url: str) -> str | None:
    """The key from `env_var`; None when no key is configured or needed (loopback)."""
    if env_var is None:
        return None
    key = os.environ.get(env_var)
    if key:
        return key
    if _is_loopback(api_url):
        log.info("%s is not set; calling the local server %s without a key", env_var, api_url)
        return None
    raise ConfigError(
        f"model_config=openai: environment variable {env_var} is not set. Export your API key "
        f"for {api_url} in {env_var}, point model_config.api_key_env at the variable that "
        f"holds it, or set model_config.api_key_env=null for a server that needs no key."
    )


class OpenAIBackend:
    """Generates through an OpenAI-compatible API; implements `base.Backend`.

    Pulls requests from the caller's iterator (in a helper thread, so a slow source never
    stalls requests in flight) and keeps at most 2x `scaling.concurrency` jobs whose
    results are not yet consumed.
    """

    def __init__(self, config: HTTPConfig, scaling: ScalingConfig | None = None, *, api_key: str | None = None) -> None:
        self.config = config
        self.concurrency = (scaling or ScalingConfig()).concurrency
        self.reasoning_model = (
            bool(_REASONING_NAME.search(config.model_source.lower()))
            if config.reasoning_model is None
            else config.reasoning_model
        )
        self._api_key = api_key or NO_KEY
        self._honours_n: bool | None = None if config.fan_out_n is None else not config.fan_out_n
        self._dropped: set[str] = set()
        self._sent: dict[str, Any] = {}
        self._server: dict[str, Any] = {}
        self.stats = {"http_requests": 0, "retries": 0, "param_retries": 0, "failed_requests": 0}
        self._start_lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._client: Any = None
        self._slots: asyncio.Semaphore | None = None
        self._rpm: _RateLimiter | None = None
        self._tpm: _RateLimiter | None = None

    def __repr__(self) -> str:
        return f"OpenAIBackend(model_source={self.config.model_source!r}, api_url={_redact_url(self.config.api_url)!r})"

    # -- the Backend protocol -------------------------------------------------------

    def generate(
        self, requests: Iterable[GenerationRequest], sampling: SamplingParams
    ) -> Iterator[GenerationResult]:
        """Yield one result per (request id, sample index), in completion order."""
        loop = self._start()
        out: queue.Queue = queue.Queue()
        outbox = _Outbox(loop, out)
        future = asyncio.run_coroutine_threadsafe(self._produce(requests, sampling, outbox), loop)
        try:
            while (batch := out.get()) is not _END:
                for item in batch:
                    if isinstance(item, GenerationResult):
                        yield item
                    else:  # a finished job's window slot: hand it back to the producer
                        loop.call_soon_threadsafe(item)
            future.result()
        finally:
            future.cancel()

    @property
    def continues_messages(self) -> bool:
        """Whether a chat continuation goes on in the same assistant message: false once
        the server refused `continue_final_message` (then it answers in a new message)."""
        return "continue_final_message" not in self._dropped

    def describe(self) -> dict[str, Any]:
        config = self.config.described()
        return {
            "backend": "openai",
            "model": self.config.model_source,
            "engine": "openai-compatible server",
            "engine_version": self._server.get("system_fingerprint"),
            "server_model": self._server.get("model"),
            "openai_version": _package_version("openai"),
            **config,
            "api_url": _redact_url(self.config.api_url),
            "reasoning_model": self.reasoning_model,
            "concurrency": self.concurrency,
            "sampling_sent": dict(self._sent),
            "stats": {
                **self.stats,
                "server_honours_n": self._honours_n,
                "dropped_params": sorted(self._dropped),
            },
        }

    def close(self) -> None:
        """Close the HTTP client and stop the event loop thread (generate restarts them)."""
        with self._start_lock:
            if self._loop is None:
                return
            asyncio.run_coroutine_threadsafe(self._client.close(), self._loop).result(timeout=30)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
            self._loop.close()
            self._loop = self._thread = self._client = self._slots = None

    # -- event loop -----------------------------------------------------------------

    def _start(self) -> asyncio.AbstractEventLoop:
        with self._start_lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="skyeval-openai", daemon=True)
                thread.start()
                asyncio.run_coroutine_threadsafe(self._open(), loop).result()
                self._loop, self._thread = loop, thread
            return self._loop

    async def _open(self) -> None:
        import openai

        config = self.config
        limits = type(openai.DEFAULT_CONNECTION_LIMITS)(
            max_connections=self.concurrency, max_keepalive_connections=self.concurrency
        )
        self._client = openai.AsyncOpenAI(
            api_key=self._api_key,
            base_url=config.api_url,
            timeout=config.timeout_s,
            max_retries=0,  # retries are ours: see _call
            http_client=openai.DefaultAsyncHttpxClient(limits=limits, timeout=config.timeout_s),
        )
        self._slots = asyncio.Semaphore(self.concurrency)
        self._rpm = _RateLimiter(config.requests_per_minute) if config.requests_per_minute else None
        self._tpm = _RateLimiter(config.tokens_per_minute) if config.tokens_per_minute else None

    async def _produce(
        self, requests: Iterable[GenerationRequest], sampling: SamplingParams, outbox: _Outbox
    ) -> None:
        """Pull requests lazily: a request is taken from the iterator only once a window
        slot is free (at most 2x concurrency jobs whose results are not yet consumed).
        The pulls run in a helper thread: the caller's iterator may read files."""
        emit = outbox.put
        window = asyncio.Semaphore(2 * self.concurrency)
        tasks: set[asyncio.Task] = set()
        loop = asyncio.get_running_loop()
        source = iter(requests)
        puller = ThreadPoolExecutor(1, thread_name_prefix="skyeval-openai-pull")

        def start(request: GenerationRequest, indices: list[int]) -> None:
            task = asyncio.create_task(self._job(request, indices, sampling, emit))
            task.add_done_callback(lambda _: emit(window.release))
            task.add_done_callback(tasks.discard)
            tasks.add(task)

        try:
            while True:
                await window.acquire()
                request = await loop.run_in_executor(puller, next, source, None)
                if request is None:
                    break
                indices, pending = self._next_job(list(request.sample_indices))
                if not indices:
                    window.release()
                    continue
                start(request, indices)
                while pending:
                    await window.acquire()
                    indices, pending = self._next_job(pending)
                    start(request, indices)
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            puller.shutdown(wait=False, cancel_futures=True)
            outbox.close()

    def _next_job(self, pending: list[int]) -> tuple[list[int], list[int]]:
        """(samples for the next request, samples left): all at once, or one when fanning out."""
        if self._honours_n is False:
            return pending[:1], pending[1:]
        return pending, []

    # -- one job: one request for one or more samples of a problem ---------------------

    async def _job(
        self, request: GenerationRequest, indices: list[int], sampling: SamplingParams, emit: Emit
    ) -> None:
        n = len(indices)
        seed = sample_seed(sampling.seed, indices[0])
        prompt, asked = continued_prompt(request.prompt, request.continuation), request.budget(sampling)
        outcome = await self._call(f"{request.id}#{indices[0]}", prompt, asked, n, seed)
        if isinstance(outcome, _Failure):
            for i in indices:
                emit(outcome.result(request.id, i, sample_seed(sampling.seed, i) if n == 1 else seed))
            return
        self._server = {k: outcome.get(k) for k in ("model", "system_fingerprint")}
        results = _results(request.id, indices, outcome, seed, self.config.think_tags, chat=isinstance(prompt, list),
                           opened=_prompt_opens_block(prompt, self.config.think_tags))
        for result in results:
            emit(result)
        missing = indices[len(results):]
        if not missing:
            if n > 1 and self._honours_n is None:
                self._honours_n = True
            return
        if n == 1 or self.config.fan_out_n is False:
            failure = _Failure(f"server returned {len(results)} of {n} choices", "MissingChoices")
            for i in missing:
                emit(failure.result(request.id, i, seed))
            return
        if self._honours_n is not False:
            log.warning("server returned %d of %d choices: fanning out n from now on", len(results), n)
            self._honours_n = False
        await asyncio.gather(*(self._job(request, [i], sampling, emit) for i in missing))

    async def _call(
        self, label: str, prompt: Prompt, sampling: SamplingParams, n: int, seed: int | None
    ) -> Any:
        """The response, after retries; a `_Failure` if it never succeeded."""
        attempt = 0
        tried_drops: set[str] = set()
        max_retries = self.config.max_retries
        while True:
            try:
                return await self._send(prompt, sampling, n, seed)
            except Exception as exc:  # noqa: BLE001 (every failure becomes a result)
                param = _rejected_param(exc)
                if param not in tried_drops and (param in _DROPPABLE or param in sampling.extra):
                    tried_drops.add(param)
                    self._drop(param, exc)
                    continue
                if not _retryable(exc) or attempt >= max_retries:
                    self.stats["failed_requests"] += 1
                    # the error is the result's: the run prints it, once per request
                    log.debug("%s failed after %d attempt(s): %s", label, attempt + 1, _message(exc))
                    return _Failure(f"{str(exc)[:1000] or repr(exc)} (after {attempt + 1} attempt(s))", type(exc).__name__)
                delay = self._backoff(attempt, _retry_after(exc))
                attempt += 1
                self.stats["retries"] += 1
                log.warning("%s: retry %d/%d in %.2fs after %s",
                            label, attempt, max_retries, delay, _message(exc))
                await asyncio.sleep(delay)

    async def _send(self, prompt: Prompt, sampling: SamplingParams, n: int, seed: int | None) -> dict:
        """One HTTP request, holding a concurrency slot and the rate limiters' budget.

        Goes through `AsyncOpenAI.post` with a plain JSON body and reply (the SDK's path for
        custom requests): same endpoints, auth and errors as `chat.completions.create`,
        without its per-request typed transform and parse (~30% less CPU per request).
        """
        timeout_s = self.config.timeout_s
        async with self._slots:
            if self._rpm:
                await self._rpm.acquire(1)
            if self._tpm:
                await self._tpm.acquire(_estimate_tokens(prompt) + sampling.max_tokens * n)
            body = self._request_body(prompt, sampling, n, seed)  # after any drop learnt meanwhile
            path = "/chat/completions" if isinstance(prompt, list) else "/completions"
            self.stats["http_requests"] += 1
            try:
                async with asyncio.timeout(timeout_s):  # the whole request, not per read
                    response = await self._client.post(path, body=body, cast_to=object)
            except TimeoutError:
                raise TimeoutError(f"no reply within timeout_s={timeout_s}") from None
        if not (isinstance(response, dict) and isinstance(response.get("choices"), list)):
            raise MalformedResponse(f"not a completion: {str(response)[:200]!r}")
        return response

    def _request_body(
        self, prompt: Prompt, sampling: SamplingParams, n: int, seed: int | None
    ) -> dict[str, Any]:
        """The JSON body: every sampling parameter set, minus those the server rejected.

        `top_k` (not an OpenAI parameter) only when set; `sampling.extra` verbatim, last.
        What was sent (but the prompt, n and the per-sample seed) is kept for describe().
        """
        chat = isinstance(prompt, list)
        params: dict[str, Any] = {
            "model": self.config.model_source,
            "messages" if chat else "prompt": prompt,
            "n": n,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_tokens": sampling.max_tokens,
            "seed": seed,
            "stop": list(sampling.stop) if sampling.stop else None,
            "top_k": sampling.top_k,
        }
        if chat and self.reasoning_model:
            del params["temperature"], params["top_p"]
        if chat and (self.reasoning_model or "max_tokens" in self._dropped):
            params["max_completion_tokens"] = params.pop("max_tokens")
        if chat and prompt and prompt[-1].get("role") == "assistant":  # prefill (vLLM)
            params.update(continue_final_message=True, add_generation_prompt=False)
        params.update(sampling.extra)
        body = {k: v for k, v in params.items() if v is not None and k not in self._dropped}
        self._sent = {k: v for k, v in body.items() if k not in _NOT_SAMPLING}
        return body

    def _drop(self, param: str, exc: Exception) -> None:
        if param not in self._dropped:
            self._dropped.add(param)
            log.warning("server rejected %r (%s): retrying without it from now on", param, _message(exc))
        self.stats["param_retries"] += 1

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0) * random.uniform(1.0, 1.1), self.config.backoff_max_s)
        return min(self.config.backoff_base_s * 2**attempt, self.config.backoff_max_s) * random.uniform(0.5, 1.0)


class _Outbox:
    """Hands items to the consumer thread in one batch per loop iteration (fewer wakeups)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, out: queue.Queue) -> None:
        self.loop, self.out = loop, out
        self.items: list[object] = []

    def put(self, item: object) -> None:
        if not self.items:
            self.loop.call_soon(self.flush)
        self.items.append(item)

    def flush(self) -> None:
        self.out.put(self.items)
        self.items = []

    def close(self) -> None:
        """Flush now and mark the end."""
        self.flush()
        self.out.put(_END)


class MalformedResponse(Exception):
    """A 200 response that is not a completion (retried like a server error)."""


@dataclass
class _Failure:
    error: str
    error_type: str

    def result(self, request_id: str, sample_idx: int, seed: int | None) -> GenerationResult:
        return error_result(request_id, sample_idx, self.error, self.error_type, seed=seed)


class _RateLimiter:
    """Token bucket: `per_minute` units a minute, bursts of at most one second's worth.

    A cost above the burst size is admitted once the bucket is full and leaves it in
    debt, so large requests (TPM) still go through at the average rate.
    """

    def __init__(self, per_minute: float) -> None:
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate)
        self.level = self.capacity
        self.updated = time.monotonic()
        self.lock = asyncio.Lock()

    async def acquire(self, cost: float) -> None:
        async with self.lock:
            need = min(cost, self.capacity)
            while True:
                now = time.monotonic()
                self.level = min(self.capacity, self.level + (now - self.updated) * self.rate)
                self.updated = now
                if self.level >= need:
                    break
                await asyncio.sleep((need - self.level) / self.rate)
            self.level -= cost


def _results(
    request_id: str, indices: list[int], response: dict, seed: int | None, think_tags: Any, *, chat: bool, opened: bool
) -> list[GenerationResult]:
    """Results for the first len(indices) choices of a `chat` or text completion, reasoning
    split from the answer (`opened`: the prompt ends inside an open think block).

    Usage: the API reports one total for all n choices. The request's prompt tokens are
    counted once, on its first choice (the others get 0: the prompt was sent once); each
    sample gets a share of the completion (and reasoning) tokens proportional to its text
    length, marked `estimated` when there are several (exact for n=1; the shares sum to the
    totals; `fan_out_n=true` sends one request per sample for exact counts). Reasoning tokens come
    from `usage.completion_tokens_details.reasoning_tokens` when the server sends them
    (hidden reasoning of o-series models included), else from the share of the text that
    is reasoning, else 0 when there is no reasoning.
    """
    choices = sorted(response["choices"], key=lambda c: c.get("index") or 0)[: len(indices)]
    parts, texts = [], []
    for choice in choices:
        message = (choice.get("message") or {}) if chat else choice
        content = message.get("content") if chat else message.get("text")
        server_reasoning = message.get("reasoning_content") or message.get("reasoning")
        parts.append(reasoning.split(content, think_tags, reasoning=server_reasoning, opened=opened))
        texts.append(reasoning.joined(server_reasoning, content or "", think_tags))
    usage = response.get("usage") or {}
    lengths = [len(thought or "") + len(answer) for thought, answer in parts]
    completion = _split(usage.get("completion_tokens") or 0, lengths)
    details = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens")
    thinking = _split(details, [len(t or "") for t, _ in parts]) if details is not None else [
        round(share * len(t) / length) if t and length else 0
        for (t, _), share, length in zip(parts, completion, lengths)
    ]
    results, shared = [], len(choices) > 1
    for j, (i, (thought, answer), choice, tokens, reasoned, text) in enumerate(
            zip(indices, parts, choices, completion, thinking, texts)):
        prompt_tokens = (usage.get("prompt_tokens") or 0) if j == 0 else 0
        results.append(GenerationResult(
            request_id, i, generation=answer, reasoning=thought, finish_reason=choice.get("finish_reason"),
            usage=make_usage(prompt_tokens, tokens, reasoned, estimated=shared) if usage else None, seed=seed,
            text=text,
        ))
    return results


def _prompt_opens_block(prompt: Prompt, think_tags: Any) -> bool:
    """A text prompt, or a chat prefill, that ends inside an open think block."""
    if isinstance(prompt, list):
        if not prompt or prompt[-1].get("role") != "assistant":
            return False
        prompt = str(prompt[-1].get("content", ""))
    return reasoning.prompt_opens_block(prompt, think_tags)


def _split(total: int, weights: list[int]) -> list[int]:
    """`total` in integer shares proportional to `weights` (even when all are 0); the
    shares sum to `total` (largest remainders get the leftover units)."""
    if not weights:
        return []
    weights = weights if any(weights) else [1] * len(weights)
    exact = [total * w / sum(weights) for w in weights]
    shares = [int(x) for x in exact]
    order = sorted(range(len(exact)), key=lambda k: exact[k] - shares[k], reverse=True)
    for k in order[: total - sum(shares)]:
        shares[k] += 1
    return shares


def _retryable(exc: Exception) -> bool:
    import openai

    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in (408, 409, 429) or exc.status_code >= 500
    return isinstance(
        exc, (openai.APIConnectionError, TimeoutError, json.JSONDecodeError, MalformedResponse)
    )


def _rejected_param(exc: Exception) -> str | None:
    """The parameter a 400 "unsupported parameter/value" error names, if any."""
    import openai

    if not isinstance(exc, openai.BadRequestError):
        return None
    if exc.code in ("unsupported_parameter", "unsupported_value") and exc.param:
        return exc.param
    if _N_MUST_BE_ONE.search(exc.message):
        return "n"
    match = _REJECTED_PARAM.search(exc.message)
    return match.group(1) if match else None


def _retry_after(exc: Exception) -> float | None:
    """Seconds from `retry-after-ms` / `Retry-After` (seconds or HTTP date), if sent."""
    headers = getattr(getattr(exc, "response", None), "headers", None) or {}
    if "retry-after-ms" in headers:
        return _float_or_none(headers["retry-after-ms"], scale=1000.0)
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _float_or_none(value)
    if seconds is None:
        try:
            seconds = email.utils.parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError):
            return None
    return seconds


def _float_or_none(value: str, scale: float = 1.0) -> float | None:
    try:
        return float(value) / scale
    except ValueError:
        return None


def _message(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:1000]


def _estimate_tokens(prompt: Prompt) -> int:
    """Rough prompt size for the TPM limiter: ~4 characters a token."""
    text = prompt if isinstance(prompt, str) else "".join(str(m.get("content", "")) for m in prompt)
    return len(text) // 4 + 1


def _is_loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _redact_url(url: str) -> str:
    """The URL without credentials or query string."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _package_version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None
