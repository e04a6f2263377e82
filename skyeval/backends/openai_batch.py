"""OpenAI Batch API backend (`model_config=openai_batch`): half the price, answers within 24 hours.

The requests the pipeline pulls become lines of JSONL batch files (`custom_id`: the problem
id and the sample indices, `"p17#0-3"`), uploaded with purpose `batch` and submitted as
batches (at most `max_requests_per_batch` lines and `max_bytes_per_batch` bytes each). The
backend polls them and, as each one ends, downloads its output and error files and yields
one result per sample (lines come back in any order). A line that failed (`error`, or a
status code other than 200) is a failed sample with its reason; lines a batch never
answered because it expired or was cancelled are sent again in a new batch.

Everything submitted is recorded in a state folder (`skyeval.backends.batch_state`: the run
folder's `batches/`) the moment its id exists, so the same command after Ctrl-C, a crash or
a closed laptop picks the batches up: no second upload, no second batch, and output files
already on disk are not fetched again. A request is picked up from an earlier batch only
when the line sent then is the one that would be sent now (same body but `n` and `seed`,
and the seed of its first sample).
"""

from __future__ import annotations

import hashlib
import json
import logging
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from skyeval.backends.base import (
    GenerationRequest,
    GenerationResult,
    SamplingParams,
    ScalingConfig,
    check_price,
    error_result,
    operational,
    sample_seed,
)
from skyeval.backends.batch_state import (
    LOCAL,
    STATE_FILE,
    AnswerIndex,
    BatchPart,
    BatchState,
    batch_errors,
    custom_id,
    parse_custom_id,
    read_lines,
    update,
)
from skyeval.backends.openai import (
    NO_KEY,
    HTTPConfig,
    OpenAIBackend,
    _prompt_opens_block,
    _results,
    _retryable,
    check_reachable,
    read_api_key,
)
from skyeval.errors import ConfigError, EndpointError

log = logging.getLogger(__name__)

Key = tuple[str, int]  # (problem id, sample index)
Resend = tuple[str, list[int], str, dict, bool]  # a line to send again: id, indices, endpoint, body, opened
CHAT, TEXT = "/v1/chat/completions", "/v1/completions"
UNANSWERED = frozenset({"batch_expired", "batch_cancelled"})  # error codes of lines a batch never ran
TOKEN_LIMIT = "token_limit_exceeded"  # a batch refused because the organization's queue is full
DEFERRED = "deferred"  # where samples of a refused batch wait until a running batch ends
# What the openai SDK would raise for a status code: the error_type a failed line gets.
STATUS_ERRORS = {400: "BadRequestError", 401: "AuthenticationError", 403: "PermissionDeniedError",
                 404: "NotFoundError", 409: "ConflictError", 422: "UnprocessableEntityError",
                 429: "RateLimitError"}
NOT_COMPARED = ("n", "seed")  # body fields that differ between the lines of one request's samples


@dataclass
class OpenAIBatchConfig(HTTPConfig):
    """`model_config=openai_batch`: the `openai` backend's settings (model, `api_url`, key,
    `fan_out_n`, `reasoning_model`, `timeout_s` and `max_retries` of each API call), sent
    through the Batch API.

    `completion_window` is the API's (only `24h` today). A batch file holds at most
    `max_requests_per_batch` requests and `max_bytes_per_batch` bytes (the API's limits:
    50,000 and 200 MB). At most `max_in_flight` samples wait for answers: the backend reads no
    further request until some come back (bounded memory). `poll_interval_s` between status
    checks. `cancel_on_interrupt`: Ctrl-C cancels the batches in flight (default: they keep
    running, and the same command collects them). `batch_price` ({input, output} $ per
    million tokens) is what the cost lines use; null: half of `price` (the listed price).
    `state_dir`: where ids and files are kept; null: the run folder's `batches/` (a
    temporary folder outside a run, which cannot be resumed).
    """

    completion_window: str = operational("24h")
    max_requests_per_batch: int = operational(50_000)
    max_bytes_per_batch: int = operational(200_000_000)
    max_in_flight: int = operational(250_000)
    poll_interval_s: float = operational(60.0)
    cancel_on_interrupt: bool = operational(False)
    batch_price: Any = operational()
    state_dir: str | None = operational()

    def __post_init__(self, model: str | None) -> None:
        super().__post_init__(model)
        for name in ("requests_per_minute", "tokens_per_minute"):
            if getattr(self, name) is not None:
                raise ConfigError(f"model_config.{name} does not apply to model_config=openai_batch: the Batch API "
                                  "has its own limits (max_requests_per_batch, max_bytes_per_batch)")
        for name in ("max_requests_per_batch", "max_bytes_per_batch", "max_in_flight"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"model_config.{name} must be an integer >= 1, got {value!r}")
        if isinstance(self.poll_interval_s, bool) or not isinstance(self.poll_interval_s, (int, float)) \
                or self.poll_interval_s <= 0:
            raise ConfigError(f"model_config.poll_interval_s must be a number > 0, got {self.poll_interval_s!r}")
        self.batch_price = check_price(self.batch_price, "model_config.batch_price")

    @property
    def billed_price(self) -> dict[str, float] | None:
        """`batch_price`, else half of `price` (the Batch API's discount on the listed price)."""
        if self.batch_price is not None:
            return self.batch_price
        return None if self.price is None else {k: v / 2 for k, v in self.price.items()}

    def build(self, scaling: ScalingConfig | None = None) -> OpenAIBatchBackend:
        api_key = self.api_key or read_api_key(self.api_key_env, self.api_url)
        check_reachable(self.api_url)
        return OpenAIBatchBackend(self, scaling, api_key=api_key)


class OpenAIBatchBackend(OpenAIBackend):
    """Generates through the Batch API; implements `base.Backend` (the request bodies are
    the `openai` backend's). The pipeline names the state folder with `use_state_dir`."""

    config: OpenAIBatchConfig
    continues_samples = False  # answers come back in batches, within 24 h: no turn loop (skyeval.tools)

    def __init__(self, config: OpenAIBatchConfig, scaling: ScalingConfig | None = None, *,
                 api_key: str | None = None) -> None:
        super().__init__(config, scaling, api_key=api_key)
        self.state_dir = Path(config.state_dir).expanduser() if config.state_dir else None
        self.state: BatchState | None = None
        self.recorded = False  # whether the caller records every result it takes (use_state_dir)
        self.stats = Counter(uploads=0, batches_created=0, downloads=0, picked_up=0, resent=0)
        self._sync: Any = None  # openai.OpenAI, opened on the first generate

    def __repr__(self) -> str:
        return f"OpenAIBatchBackend(model_source={self.config.model_source!r}, state_dir={str(self.state_dir)!r})"

    def use_state_dir(self, path: str | Path) -> None:
        """Keep batch ids and files in `path` (the pipeline passes the run folder's `batches/`;
        `model_config.state_dir`, when set, wins). The caller records each result it takes, so
        a sample asked for again later is sent again (`retry_failures`) instead of being read
        from the old batch's answer, as it is for callers that keep results in memory."""
        if self.config.state_dir is None:
            self.state_dir = Path(path)
        self.recorded = True

    def generate(self, requests: Iterable[GenerationRequest], sampling: SamplingParams) -> Iterator[GenerationResult]:
        """Yield one result per (request id, sample index), as the batches end."""
        yield from _BatchRun(self, sampling).results(requests)

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        for name in ("concurrency", "requests_per_minute", "tokens_per_minute"):  # not used by batches
            out.pop(name, None)
        state = self._state(create=False)
        parts = [p.describe() for p in state.parts if p.batch_id] if state else []
        return {**out, "backend": "openai_batch", "engine": "OpenAI Batch API", "billed_price": self.config.billed_price,
                "stats": dict(self.stats), "state_dir": str(self.state_dir) if self.state_dir else None,
                "batch_counts": self.counts(parts), "batches": parts}

    @staticmethod
    def counts(parts: list[dict[str, Any]]) -> dict[str, Any]:
        """summary.json's `batch_counts` of described parts."""
        counts = [p.get("request_counts") or {} for p in parts]
        return {"batches": len(parts), "requests": sum(p["requests"] for p in parts),
                "completed": sum(c.get("completed", 0) for c in counts),
                "failed": sum(c.get("failed", 0) for c in counts),
                "by_status": dict(Counter(p["status"] for p in parts))}

    def close(self) -> None:
        if self._sync is not None:
            self._sync.close()
            self._sync = None
        super().close()

    # -- helpers of a run -------------------------------------------------------------

    def _state(self, create: bool = True) -> BatchState | None:
        if self.state is None:
            if self.state_dir is None:
                if not create:
                    return None
                self.state_dir = Path(tempfile.mkdtemp(prefix="skyeval-batches-"))
                log.warning("batch state kept in %s: outside a run folder the batches cannot be picked up after a "
                            "crash unless model_config.state_dir names a folder", self.state_dir)
            if not create and not self.state_dir.is_dir():
                return None
            self.state = BatchState(self.state_dir)
        return self.state

    def _api(self) -> Any:
        if self._sync is None:
            import openai

            self._sync = openai.OpenAI(api_key=self._api_key, base_url=self.config.api_url,
                                       timeout=self.config.timeout_s, max_retries=self.config.max_retries)
        return self._sync


@dataclass
class _Line:
    """A line of an earlier process's batch file, as the samples it covers point to it."""

    part: str
    number: int  # 0-based line in the part's input file
    digest: str  # of the body but NOT_COMPARED
    seed: int | None
    first: int  # its first sample index


@dataclass
class _Wait:
    """A sample waiting for its answer: the part whose batch holds it (or `deferred`)."""

    part: str
    opened: bool  # the prompt ends inside an open think block


class _Writer:
    """The open input file of one part (one endpoint)."""

    def __init__(self, state: BatchState, part: BatchPart) -> None:
        self.part = part
        self.fh = state.file(part, "input").open("wb")
        self.ids: set[str] = set()

    def fits(self, data: bytes, custom_id: str, config: OpenAIBatchConfig) -> bool:
        return (self.part.requests < config.max_requests_per_batch and custom_id not in self.ids
                and self.part.bytes + len(data) <= config.max_bytes_per_batch)

    def write(self, data: bytes, custom_id: str) -> None:
        self.fh.write(data)
        self.ids.add(custom_id)
        self.part.requests += 1
        self.part.bytes += len(data)


class _BatchRun:
    """One `generate` call: take requests into batch files, submit, poll, hand results over."""

    def __init__(self, backend: OpenAIBatchBackend, sampling: SamplingParams) -> None:
        self.backend, self.config, self.sampling = backend, backend.config, sampling
        self.state = backend._state()
        self.parts = {p.name: p for p in self.state.parts}
        self.waiting: dict[Key, _Wait] = {}
        self.pending: Counter[str] = Counter()  # part name -> samples waiting on it
        self.writers: dict[str, _Writer] = {}  # endpoint -> its open file
        self.index: dict[Key, _Line] = {}  # earlier processes' lines still to be handed over
        self.deferred: list[Resend] = []  # lines refused by a full queue
        self.delivered: dict[str, set[int]] = {}  # part name -> input lines handed over
        self.answers: dict[str, AnswerIndex] = {}  # ended parts' downloaded answers
        self.progress = _Progress()

    # -- the loop ---------------------------------------------------------------------

    def results(self, requests: Iterable[GenerationRequest]) -> Iterator[GenerationResult]:
        source, exhausted = iter(requests), False
        try:
            self.recover()
            self.build_index()
            while True:
                while not exhausted and len(self.waiting) < self.config.max_in_flight:
                    request = next(source, None)
                    if request is None:
                        exhausted = True
                    else:
                        yield from self.take(request)
                if self.deferred and not self.in_flight():
                    yield from self.resend(self.deferred)
                    self.deferred = []
                self.submit_all()
                if not self.waiting:
                    if exhausted:
                        return
                    continue
                finished = self.poll()
                for part in finished:
                    yield from self.harvest(part)
                if not finished:
                    time.sleep(self.config.poll_interval_s)
        except (KeyboardInterrupt, GeneratorExit):
            self.interrupted()
            raise
        finally:
            for writer in self.writers.values():  # never submitted: dropped by the next run
                writer.fh.close()
            self.progress.close()
            self.state.save()

    def in_flight(self) -> list[BatchPart]:
        """Parts whose batches are running and hold samples this run waits for."""
        return [self.parts[name] for name, count in self.pending.items()
                if count > 0 and name in self.parts and not self.parts[name].terminal]

    # -- requests into lines ----------------------------------------------------------

    def take(self, request: GenerationRequest) -> Iterator[GenerationResult]:
        """Wait on an earlier batch's line for each sample that has one; put the others in new lines."""
        prompt, sampling = request.prompt, self.sampling
        endpoint = CHAT if isinstance(prompt, list) else TEXT
        opened = _prompt_opens_block(prompt, self.config.think_tags)
        fresh, digest = [], None
        for i in request.sample_indices:
            key = (request.id, i)
            if key in self.waiting:
                log.warning("sample %s#%d was asked for twice: sent once", request.id, i)
                continue
            line = self.index.pop(key, None)
            if line is not None:
                digest = digest or _digest(self.backend._request_body(prompt, sampling, 1, None))
                part = self.parts[line.part]
                if line.number not in self.delivered_lines(part) and line.digest == digest \
                        and line.seed == sample_seed(sampling.seed, line.first):
                    self.assign(key, part.name, opened)
                    self.backend.stats["picked_up"] += 1
                    continue
            fresh.append(i)
        groups = [[i] for i in fresh] if self.config.fan_out_n else ([fresh] if fresh else [])
        for indices in groups:
            body = self.backend._request_body(prompt, sampling, len(indices), sample_seed(sampling.seed, indices[0]))
            yield from self.add_line(request.id, indices, endpoint, body, opened)

    def add_line(self, pid: str, indices: list[int], endpoint: str, body: dict[str, Any],
                 opened: bool) -> Iterator[GenerationResult]:
        cid = custom_id(pid, indices)
        data = (json.dumps({"custom_id": cid, "method": "POST", "url": endpoint, "body": body},
                           ensure_ascii=False) + "\n").encode()
        if len(data) > self.config.max_bytes_per_batch:
            for i in indices:
                self.forget((pid, i))
                yield error_result(pid, i, f"the request is {len(data):,} bytes, more than a batch file may hold "
                                   f"(max_bytes_per_batch={self.config.max_bytes_per_batch:,})", "RequestTooLarge",
                                   seed=sample_seed(self.sampling.seed, i))
            return
        writer = self.writers.get(endpoint)
        if writer is not None and not writer.fits(data, cid, self.config):
            self.submit(writer)
            writer = None
        if writer is None:
            part = self.state.new_part(endpoint)
            self.parts[part.name] = part
            self.state.save()
            writer = self.writers[endpoint] = _Writer(self.state, part)
        writer.write(data, cid)
        for i in indices:
            self.assign((pid, i), writer.part.name, opened)

    def assign(self, key: Key, part: str, opened: bool) -> None:
        self.forget(key)
        self.waiting[key] = _Wait(part, opened)
        self.pending[part] += 1

    def forget(self, key: Key) -> None:
        wait = self.waiting.pop(key, None)
        if wait is not None:
            self.pending[wait.part] -= 1

    # -- submitting -------------------------------------------------------------------

    def submit_all(self) -> None:
        for writer in list(self.writers.values()):
            self.submit(writer)

    def submit(self, writer: _Writer) -> None:
        """Close the part's file, upload it, create its batch: each id saved as it exists."""
        part = writer.part
        writer.fh.close()
        del self.writers[part.endpoint]
        part.status = "ready"
        self.state.save()
        self.upload(part)
        self.create(part)

    def upload(self, part: BatchPart) -> None:
        name = self.state.upload_name(part)

        def send() -> Any:
            with self.state.file(part, "input").open("rb") as fh:
                return self.backend._api().with_options(max_retries=0).files.create(file=(name, fh), purpose="batch")

        uploaded = self.once(send, lambda: self.find_upload(name), f"uploading batch file {name}")
        part.file_id, part.status = uploaded.id, "uploaded"
        self.backend.stats["uploads"] += 1
        self.state.save()

    def create(self, part: BatchPart) -> None:
        client = self.backend._api()

        def send() -> Any:
            return client.with_options(max_retries=0).batches.create(
                input_file_id=part.file_id, endpoint=part.endpoint, completion_window=self.config.completion_window,
                metadata={"skyeval_run": self.state.token, "skyeval_part": part.name})

        batch = self.once(send, lambda: self.find_batch(part), f"creating the batch of part {part.name}")
        update(part, batch)
        self.backend.stats["batches_created"] += 1
        self.state.save()
        log.info("submitted batch %s: %d requests (part %s, %s)", part.batch_id, part.requests, part.name,
                 self.state.file(part, "input"))

    def once(self, send: Callable[[], Any], find: Callable[[], Any], what: str) -> Any:
        """`send()` without repeating it: after a failure, `find()` looks for what it may
        have made anyway before trying again (backoff as the `openai` backend's)."""
        import openai

        for attempt in range(self.config.max_retries + 1):
            try:
                return send()
            except openai.APIError as err:
                found = self.quietly(find)
                if found is not None:
                    return found
                if not _retryable(err) or attempt == self.config.max_retries:
                    raise EndpointError(f"{what} failed: {type(err).__name__}: {err}") from None
                delay = self.backend._backoff(attempt, None)
                log.warning("%s failed (%s): retry %d/%d in %.1fs", what, type(err).__name__, attempt + 1,
                            self.config.max_retries, delay)
                time.sleep(delay)
        raise AssertionError("unreachable")

    @staticmethod
    def quietly(find: Callable[[], Any]) -> Any:
        import openai

        try:
            return find()
        except openai.APIError:
            return None

    def find_upload(self, name: str) -> Any:
        return next((f for f in self.backend._api().files.list(purpose="batch") if f.filename == name), None)

    def find_batch(self, part: BatchPart) -> Any:
        """The batch made from the part's file, if one was created (newest first; stops at
        batches older than the part)."""
        for batch in self.backend._api().batches.list(limit=100):
            if batch.input_file_id == part.file_id:
                return batch
            if batch.created_at < part.written_at - 3600:
                return None
        return None

    def recover(self) -> None:
        """Parts an earlier process left without a batch id: a file never uploaded is dropped
        (its samples are sent again), one uploaded gets its batch (the one already created,
        if any)."""
        for part in list(self.state.parts):
            if part.status == "writing" or (part.status == "ready" and part.file_id is None
                                             and not self.adopt_upload(part)):
                self.state.drop(part)
                del self.parts[part.name]
            elif part.batch_id is None:
                found = self.quietly(lambda: self.find_batch(part))
                if found is not None:
                    log.info("part %s: found its batch %s on the server", part.name, found.id)
                    update(part, found)
                else:
                    log.info("part %s was uploaded (%s) but has no batch yet", part.name, part.file_id)
                    self.create(part)
        self.state.save()

    def adopt_upload(self, part: BatchPart) -> bool:
        found = self.quietly(lambda: self.find_upload(self.state.upload_name(part)))
        if found is None:
            return False
        part.file_id, part.status = found.id, "uploaded"
        self.state.save()
        return True

    def build_index(self) -> None:
        """Index the lines of earlier batches not yet handed over, and say where they stand."""
        for part in self.state.parts:
            if part.done or part.batch_id is None:
                continue
            log.info("batch %s", part.line())
            delivered = self.delivered_lines(part)
            for number, line in enumerate(read_lines(self.state.file(part, "input"))):
                parsed = parse_custom_id(line.get("custom_id", ""))
                if parsed is None or number in delivered:
                    continue
                pid, indices = parsed
                body = line.get("body") or {}
                entry = _Line(part.name, number, _digest(body), body.get("seed"), indices[0])
                for i in indices:
                    self.index[(pid, i)] = entry

    def delivered_lines(self, part: BatchPart) -> set[int]:
        """The part's input lines already handed over (read once per run)."""
        if part.name not in self.delivered:
            self.delivered[part.name] = set(read_lines(self.state.file(part, "delivered"), json_type=int))
        return self.delivered[part.name]

    def mark_delivered(self, part: BatchPart, number: int, fh: Any) -> None:
        """Line `number` was handed over (or sent again): appended to the part's delivered file."""
        self.delivered_lines(part).add(number)
        fh.write(f"{number}\n")
        fh.flush()
        part.delivered += 1

    # -- polling ----------------------------------------------------------------------

    def poll(self) -> list[BatchPart]:
        """Check the running parts; return those that ended and hold samples this run waits for."""
        import openai

        finished = []
        for part in self.in_flight() + [p for p in self.parts.values()
                                        if p.terminal and self.pending[p.name] > 0]:
            if not part.terminal:
                try:
                    batch = self.backend._api().batches.retrieve(part.batch_id)
                except openai.APIError as err:
                    if not _retryable(err):  # a key or an id the API refuses: no use polling on
                        raise EndpointError(f"checking batch {part.batch_id} failed: {type(err).__name__}: {err}"
                                            ) from None
                    log.warning("checking batch %s failed (%s): trying again in %gs", part.batch_id,
                                type(err).__name__, self.config.poll_interval_s)
                    continue
                if update(part, batch):
                    self.state.save()
                self.progress.show(part)
            if part.terminal:
                finished.append(part)
        return finished

    # -- answers into results ---------------------------------------------------------

    def harvest(self, part: BatchPart) -> Iterator[GenerationResult]:
        """Results of the samples this run waits for in an ended part, in input order; the
        lines it never answered (expired, cancelled) go into a new batch, as do those of a
        batch refused while the organization's queue was full (once a running batch ends)."""
        failed = part.status == "failed"
        if failed and part.name not in self.answers:
            log.error("batch %s failed: %s", part.batch_id, batch_errors(part))
        if not failed:
            self.download(part)
        if part.name not in self.answers:
            self.answers[part.name] = AnswerIndex(self.state, part)
        token_limit = failed and any(e.get("code") == TOKEN_LIMIT for e in part.errors or [])
        resend: list[Resend] = []
        with self.state.file(part, "delivered").open("a", encoding="utf-8") as fh:
            yield from self.hand_over(part, token_limit, resend, fh)
        going = {(pid, i) for pid, wanted, *_ in resend for i in wanted}
        for (pid, i), wait in list(self.waiting.items()):  # a local input file that lost lines: never wait forever
            if wait.part == part.name and (pid, i) not in going:
                self.forget((pid, i))
                yield error_result(pid, i, f"the line of this sample is missing from {self.state.file(part, 'input')}",
                                   "MissingBatchLine", seed=sample_seed(self.sampling.seed, i))
        self.state.save()
        del self.answers[part.name]  # memory: a straggler asking later reads the files again
        if part.done:
            self.delivered.pop(part.name, None)
        if not resend:
            return
        if token_limit and self.in_flight():
            log.warning("batch %s was refused (the organization's queue of enqueued tokens is full): its %d "
                        "requests go again once a running batch ends", part.batch_id, len(resend))
            for pid, wanted, _, _, opened in resend:
                for i in wanted:
                    self.assign((pid, i), DEFERRED, opened)
            self.deferred.extend(resend)
        elif token_limit:
            for pid, wanted, _, body, _ in resend:
                for result in self.failed(pid, wanted, body, f"batch {part.batch_id} was refused: "
                                          f"{batch_errors(part)}; lower model_config.max_requests_per_batch",
                                          "BatchFailed"):
                    self.forget((pid, result.sample_idx))
                    yield result
        else:
            log.warning("batch %s %s before answering %d requests: sending them again in a new batch",
                        part.batch_id, part.status, sum(len(w) for _, w, *_ in resend))
            yield from self.resend(resend)

    def hand_over(self, part: BatchPart, token_limit: bool, resend: list[Resend], fh: Any) -> Iterator[GenerationResult]:
        """Walk the part's input lines: yield the results of waiting samples (a line counts as
        handed over once the caller has taken all its results), collect those to send again."""
        failed, answers, delivered = part.status == "failed", self.answers[part.name], self.delivered_lines(part)
        for number, line in enumerate(read_lines(self.state.file(part, "input"))):
            parsed = parse_custom_id(line.get("custom_id", ""))
            if parsed is None or number in delivered or not self.pending[part.name]:
                continue
            pid, indices = parsed
            wanted = [i for i in indices if (w := self.waiting.get((pid, i))) is not None and w.part == part.name]
            if not wanted:
                continue
            opened = self.waiting[(pid, wanted[0])].opened
            body = line.get("body") or {}
            answer = None if failed else answers.get(line["custom_id"])
            unanswered = part.status in ("expired", "cancelled") and (
                answer is None or (answer.get("error") or {}).get("code") in UNANSWERED)
            if unanswered or token_limit:
                resend.append((pid, wanted, part.endpoint, _narrowed(body, indices, wanted, self.sampling), opened))
                part.resent += len(wanted)
                self.mark_delivered(part, number, fh)
                continue
            if failed:
                results = self.failed(pid, wanted, body, f"batch {part.batch_id} failed: {batch_errors(part)}",
                                      "BatchFailed")
            else:
                results = self.answered(pid, indices, wanted, body, answer, part, opened)
            for result in results:
                self.forget((pid, result.sample_idx))
                yield result
            if self.backend.recorded or not all(r.ok for r in results):  # else: answers to reuse when asked again
                self.mark_delivered(part, number, fh)

    def resend(self, lines: list[Resend]) -> Iterator[GenerationResult]:
        for pid, wanted, endpoint, body, opened in lines:
            self.backend.stats["resent"] += len(wanted)
            yield from self.add_line(pid, wanted, endpoint, body, opened)

    def answered(self, pid: str, indices: list[int], wanted: list[int], body: dict[str, Any], answer: dict | None,
                 part: BatchPart, opened: bool) -> list[GenerationResult]:
        """The results of `wanted` (of the line's `indices`) from its output or error line."""
        if answer is None:
            return self.failed(pid, wanted, body, f"batch {part.batch_id} ({part.status}) has no answer for this "
                               "request in its output or error file", "MissingBatchLine")
        if answer.get("error"):
            error = answer["error"]
            return self.failed(pid, wanted, body, f"{error.get('message') or error} (batch {part.batch_id})",
                               error.get("code") or "BatchRequestError")
        response = answer.get("response") or {}
        status, reply = response.get("status_code"), response.get("body")
        if status != 200:
            message = ((reply or {}).get("error") or {}).get("message") if isinstance(reply, dict) else None
            error_type = STATUS_ERRORS.get(status, "InternalServerError" if (status or 0) >= 500 else "APIStatusError")
            return self.failed(pid, wanted, body, f"{message or reply} (status {status}, batch {part.batch_id})",
                               error_type)
        if not (isinstance(reply, dict) and isinstance(reply.get("choices"), list)):
            return self.failed(pid, wanted, body, f"not a completion: {str(reply)[:200]!r}", "MalformedResponse")
        self.backend._server = {k: reply.get(k) for k in ("model", "system_fingerprint")}
        results = _results(pid, indices, reply, body.get("seed"), self.config.think_tags,
                           chat=part.endpoint == CHAT, opened=opened)
        got = {r.sample_idx: r for r in results}
        missing = [i for i in wanted if i not in got]
        return [got[i] for i in wanted if i in got] + self.failed(
            pid, missing, body, f"server returned {len(results)} of {len(indices)} choices (model_config.fan_out_n=true "
            "asks for one sample per request)", "MissingChoices")

    def failed(self, pid: str, wanted: list[int], body: dict[str, Any], message: str,
               error_type: str) -> list[GenerationResult]:
        seed = body.get("seed")
        return [error_result(pid, i, message, error_type, seed=seed) for i in wanted]

    def download(self, part: BatchPart) -> None:
        """The part's output and error files, to disk once (`downloaded` in the state)."""
        if part.downloaded:
            return
        client = self.backend._api()
        for file_id, kind in ((part.output_file_id, "output"), (part.error_file_id, "errors")):
            if not file_id:
                continue
            path = self.state.file(part, kind)
            tmp = path.with_suffix(".part")
            with client.files.with_streaming_response.content(file_id) as response:
                response.stream_to_file(tmp)
            tmp.replace(path)
            self.backend.stats["downloads"] += 1
        part.downloaded = True
        self.state.save()

    # -- Ctrl-C -----------------------------------------------------------------------

    def interrupted(self) -> None:
        running = [p for p in self.in_flight() if p.batch_id]
        if not running:
            return
        ids = ", ".join(p.batch_id for p in running)
        if not self.config.cancel_on_interrupt:
            log.warning("%d batches keep running on the server (%s): re-run the same command to collect their "
                        "results (model_config.cancel_on_interrupt=true cancels them instead)", len(running), ids)
            return
        for part in running:
            try:
                update(part, self.backend._api().batches.cancel(part.batch_id))
                part.cancel_requested = True
            except Exception as err:  # noqa: BLE001 - best effort on the way out
                log.warning("cancelling batch %s failed: %s", part.batch_id, err)
        log.warning("cancelling %d batches (%s): answers they already have are billed; the same command sends "
                    "the rest again", len(running), ids)


class _Progress:
    """Each running batch's requests done: a bar per batch on a terminal, else a log line
    when its status changes (and at most every `every_s` seconds while it runs)."""

    def __init__(self, every_s: float = 60.0) -> None:
        self.every_s = every_s
        self.tty = sys.stderr.isatty()
        self.bars: dict[str, Any] = {}
        self.said: dict[str, tuple[str, float]] = {}

    def show(self, part: BatchPart) -> None:
        counts = part.request_counts or {}
        done, total = counts.get("completed", 0) + counts.get("failed", 0), counts.get("total") or part.requests
        if self.tty:
            from tqdm import tqdm

            bar = self.bars.get(part.name)
            if bar is None:
                bar = self.bars[part.name] = tqdm(total=total, desc=f"batch {part.name}", unit="req",
                                                  dynamic_ncols=True)
            bar.total = total
            bar.n = done
            bar.set_postfix_str(part.status)
            if part.terminal:
                bar.close()
                del self.bars[part.name]
            return
        last = self.said.get(part.name)
        now = time.monotonic()
        if last is None or last[0] != part.status or (now - last[1] >= self.every_s and not part.terminal):
            self.said[part.name] = (part.status, now)
            log.info("batch %s", part.line())

    def close(self) -> None:
        for bar in self.bars.values():
            bar.close()
        self.bars.clear()


def merged_describe(described: list[dict[str, Any]]) -> dict[str, Any]:
    """The `backend` section of a sharded run: every shard's batches (each with its
    `state_dir`), their counts and stats summed."""
    parts = [{**b, "state_dir": d.get("state_dir")} for d in described for b in d.get("batches", [])]
    stats = sum((Counter(d.get("stats") or {}) for d in described), Counter())
    return {**described[0], "state_dir": None, "stats": dict(stats),
            "batch_counts": OpenAIBatchBackend.counts(parts), "batches": parts}


def status_lines(run_dir: str | Path, model_config: OpenAIBatchConfig | None = None) -> list[str]:
    """One line per batch of a run folder (every shard's): what `skyeval status` prints.
    With the run's `model_config`, batches still running are asked for their state now
    (nothing is written: the run records it when it polls); else as last polled. Empty when
    the run used no batches."""
    import openai

    root = Path(run_dir) / "batches"
    client = None
    lines = []
    for state_file in sorted(root.glob(f"*/{STATE_FILE}")) if root.is_dir() else []:
        state = BatchState(state_file.parent)
        prefix = "" if state.folder.name == "run" else f"{state.folder.name}: "
        for part in state.parts:
            if part.status in LOCAL:
                continue
            if model_config is not None and not part.terminal:
                if client is None:
                    api_key = model_config.api_key or read_api_key(model_config.api_key_env, model_config.api_url)
                    client = openai.OpenAI(api_key=api_key or NO_KEY, base_url=model_config.api_url,
                                           timeout=model_config.timeout_s, max_retries=model_config.max_retries)
                update(part, client.batches.retrieve(part.batch_id))
            lines.append(prefix + part.line())
    if client is not None:
        client.close()
    return lines


def _digest(body: dict[str, Any]) -> str:
    compared = {k: v for k, v in body.items() if k not in NOT_COMPARED}
    return hashlib.sha256(json.dumps(compared, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]


def _narrowed(body: dict[str, Any], indices: list[int], wanted: list[int], sampling: SamplingParams) -> dict[str, Any]:
    """The body of a line asking for `wanted` only (of the `indices` it asked for)."""
    if wanted == indices:
        return body
    out = {**body, "n": len(wanted)}
    if "seed" in body:
        out["seed"] = sample_seed(sampling.seed, wanted[0])
    return out

