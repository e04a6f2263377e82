"""The turn loop: a sample goes back to the model after a tool ran or a forced "Wait",
until its answer is done.

`TurnLoop` wraps any backend and is one itself. Each model reply ("turn") of a sample is
looked at when it arrives:

- budget forcing (`sampling_params.min_thinking_tokens`, s1): a reply that closes its
  thought before that many thinking tokens is cut at the closing tag and continued
  after "Wait", up to `sampling_params.max_waits` times;
- `tools=python`: a reply that ends with a ```python block has the program run on a
  sandbox worker (`skyeval.tools.python`); the output block is appended and the sample
  continues, up to `tools.max_calls` calls;
- otherwise the sample is finished: one result with the whole transcript.

The backend receives a single request stream (`_Feed`): continued samples first, then new
problems while fewer than `limit` samples are in the loop. A program runs on a worker
process while the backend goes on generating every other sample; the feed tells the
backend when its next request would wait (`ready()`), so a backend that batches (Ray)
closes its batch instead. `sampling_params.max_tokens` bounds the completion tokens of a
whole sample: each continuation asks for what is left.

How a sample continues (`tools.continuation`, docs/tools.md): a text prompt continues its
text; a chat prompt continues the assistant message (`GenerationRequest.continuation`),
unless `next_message` is set or the server refused `continue_final_message`, where the
output goes as a user message and the model answers in a new assistant message.

A sample is recorded once its loop ends; one interrupted mid-loop is redone whole by the
next run (its turns are not saved apart), so a saved sample is never sent again.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter, deque
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Iterator

from skyeval import reasoning
from skyeval.backends.base import GenerationRequest, GenerationResult, Prompt, SamplingParams, error_result
from skyeval.backends.base import usage as make_usage
from skyeval.errors import ConfigError
from skyeval.metrics import turns
from skyeval.tools.config import ToolsConfig
from skyeval.tools.python import (
    ERROR,
    OK,
    TIMEOUT,
    Call,
    Outcome,
    calls_pool,
    output_block,
    program_of,
    sandbox_packages,
)

log = logging.getLogger(__name__)

WAIT = "Wait"  # what budget forcing appends (s1)
DEFAULT_LIMIT = 256  # samples in the loop at once, for a backend that does not say its window


def needs_loop(tools: ToolsConfig, sampling: SamplingParams) -> bool:
    """Whether generation goes through a `TurnLoop` (a tool, or budget forcing)."""
    return tools.active or sampling.min_thinking_tokens is not None


class TurnLoop:
    """A backend whose samples take turns with tools (and budget forcing) around `backend`;
    implements `skyeval.backends.base.Backend`. `think_tags` are the model's (its config's)."""

    def __init__(self, backend: Any, tools: ToolsConfig, think_tags: Any = reasoning.DEFAULT_THINK_TAGS) -> None:
        if not getattr(backend, "continues_samples", True):
            raise ConfigError(f"{type(backend).__name__} cannot send a sample back to the model while the run goes "
                              "on, which tools and budget forcing need: use model_config=openai, vllm or ray")
        self.backend, self.tools = backend, tools
        self.tags = reasoning.check_tags(think_tags)
        self.limit = _window(backend)
        self._pool: Any = None
        self._said: set[str] = set()
        self.totals: Counter = Counter()  # over this run's finished samples (`skyeval.metrics.turns`)
        if tools.active:
            from skyeval.scorers import sandbox

            self.sandbox = sandbox.describe()  # a sandbox that cannot run fails here, before any request
            self.sandbox["packages"] = packages = sandbox_packages()
            if not packages.get("sympy"):
                log.warning("the sandbox's python (%s) cannot import sympy, which most tool-integrated reasoning "
                            "programs use: install it there (Debian: apt-get install python3-sympy python3-numpy) "
                            "or point %s at a python that has it (docs/tools.md)", self.sandbox.get("python"),
                            sandbox.PYTHON_ENV_VAR)

    def __repr__(self) -> str:
        return f"TurnLoop({self.backend!r}, tools={self.tools.name})"

    # -- the Backend protocol -------------------------------------------------------------
    def generate(self, requests: Iterable[GenerationRequest], sampling: SamplingParams) -> Iterator[GenerationResult]:
        """One result per sample, once its last turn is in (in completion order)."""
        if sampling.min_thinking_tokens is not None and self.tags is None:
            raise ConfigError("sampling_params.min_thinking_tokens needs think tags to find where a thought ends: "
                              "set model_config.think_tags")
        feed = _Feed(requests, self.limit)
        turn = self._turn_sampling(sampling)
        samples: dict[tuple[str, int], _Sample] = {}
        try:
            for result in self.backend.generate(feed, turn):
                yield from self._failed(feed, samples)
                key = (result.id, result.sample_idx)
                sample = samples.get(key)
                if sample is None:
                    sample = samples[key] = _Sample(result.id, result.sample_idx, feed.prompt(result.id))
                done = self._after_turn(sample, result, sampling, feed)
                if done is not None:
                    del samples[key]
                    feed.finished(result.id)
                    yield done
            yield from self._failed(feed, samples)
        finally:
            feed.close()

    def _failed(self, feed: _Feed, samples: dict[tuple[str, int], _Sample]) -> Iterator[GenerationResult]:
        """Samples whose program a sandbox worker could not run: failed (a re-run redoes them)."""
        for failure in feed.take_failed():
            samples.pop((failure.id, failure.sample_idx), None)
            yield failure

    def describe(self) -> dict[str, Any]:
        return self.backend.describe()

    def close(self) -> None:
        """Stop the sandbox workers and the backend."""
        self.stop_tools()
        self.backend.close()

    def stop_tools(self) -> None:
        """Stop the sandbox workers (a program still running is killed); the backend stays up."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.close(cancel=True)

    def summary(self) -> dict[str, Any]:
        """summary.json `tools`: the settings, and counts over this run's finished samples."""
        out: dict[str, Any] = {**self.tools.settings()}
        if self.tools.active:
            out["sandbox"] = self.sandbox
        return {**out, **turns.summary(self.totals)}

    # -- one sample's turns ----------------------------------------------------------------
    def _turn_sampling(self, sampling: SamplingParams) -> SamplingParams:
        """A turn stops where an output block would begin (the model never writes one)."""
        if not self.tools.active:
            return sampling
        stop = list(sampling.stop or [])
        if self.tools.output_fence not in stop:
            stop.append(self.tools.output_fence)
        return replace(sampling, stop=stop)

    def _after_turn(self, sample: _Sample, result: GenerationResult, sampling: SamplingParams,
                    feed: _Feed) -> GenerationResult | None:
        """Take a reply in: the sample's finished result, or None when it goes on (now, or
        once its program has run)."""
        if not result.ok:
            return error_result(result.id, result.sample_idx, result.error or "", result.error_type,
                                seed=result.seed)
        text = result.text if result.text is not None else reasoning.joined(result.reasoning, result.generation or "",
                                                                           self.tags)
        if not sample.turns:
            sample.start(result, text, self.tags)
        sample.count(result)
        left = sampling.max_tokens - sample.completion
        if self._forced(sample, result, text, sampling, left):
            sample.add_model(text[:text.find(self.tags[1])].rstrip() + "\n" + WAIT)
            sample.waits += 1
            feed.put(self._next(sample, left))
            return None
        code = program_of(text, self.tools) if self.tools.active else None
        if code is None:
            sample.add_model(text)
            return self._finished(sample, result, "length" if result.finish_reason == "length" else "reply")
        sample.add_model(text.rstrip())
        if sample.calls >= self.tools.max_calls:
            return self._finished(sample, result, "max_calls")
        if left < 1:
            return self._finished(sample, result, "max_tokens")
        sample.calls += 1
        self._run(sample, code, sampling, left, feed)
        return None

    def _forced(self, sample: _Sample, result: GenerationResult, text: str, sampling: SamplingParams,
                left: int) -> bool:
        """Whether budget forcing continues this reply: it closes the thought before
        `min_thinking_tokens`, `max_waits` is not reached and tokens are left."""
        if sampling.min_thinking_tokens is None or self.tags is None or left < 1:
            return False
        if sample.waits >= sampling.max_waits or self.tags[1] not in text:
            return False
        if not self._same_message(sample):
            self._say("forcing", "budget forcing continues the model's own message: the server refused "
                                 "continue_final_message (or tools.continuation=next_message), so it is off")
            return False
        return sample.thinking < sampling.min_thinking_tokens

    def _run(self, sample: _Sample, code: str, sampling: SamplingParams, left: int, feed: _Feed) -> None:
        """Run the program on a sandbox worker; its output continues the sample."""
        markers = [*(sampling.stop or []), *(self.tags or ())]
        call = Call.of(code, sample.programs, self.tools, markers)

        def done(_: Call, outcome: Any) -> None:
            if not isinstance(outcome, Outcome):  # the worker could not run it (an ItemFailure)
                feed.fail(error_result(sample.id, sample.idx, f"the python tool could not run a program: "
                                       f"{outcome.reason}", "ToolError", seed=sample.seed))
                return
            sample.add_tool(outcome, code, self.tools)
            feed.put(self._next(sample, left))

        self.pool.submit(call, done)

    def _next(self, sample: _Sample, left: int) -> GenerationRequest:
        """The request that continues a sample: its own message, or the next one."""
        if self._same_message(sample):
            return GenerationRequest(sample.id, sample.prompt, [sample.idx], continuation=sample.prefix + sample.text,
                                     max_tokens=left)
        return GenerationRequest(sample.id, sample.prompt + sample.messages(self.tools), [sample.idx], max_tokens=left)

    def _same_message(self, sample: _Sample) -> bool:
        if isinstance(sample.prompt, str):
            return True
        if self.tools.continuation == "next_message":
            return False
        if getattr(self.backend, "continues_messages", True):
            return True
        self._say("next_message", "the server refused continue_final_message: tool outputs go as the next "
                                  "message from now on (tools.continuation=next_message)")
        return False

    def _finished(self, sample: _Sample, last: GenerationResult, stopped_by: str) -> GenerationResult:
        result = sample.result(last, stopped_by, self.tags)
        self.totals.update(turns.counts(result.loop))
        return result

    @property
    def pool(self) -> Any:
        if self._pool is None:
            self._pool = calls_pool(self.tools, queue_size=self.limit + 64)
        return self._pool

    def _say(self, what: str, message: str) -> None:
        if what not in self._said:
            self._said.add(what)
            log.warning("%s", message)


@dataclass
class _Sample:
    """One sample in the loop: what the model has seen of its answer so far, and counts."""

    id: str
    idx: int
    prompt: Prompt
    text: str = ""  # its turns and the blocks appended to them, as the model reads them
    prefix: str = ""  # a think tag the chat template opened, restored when continuing the message
    opened: bool = False  # the first reply began inside a think block the prompt opened
    turns: list[dict[str, Any]] = field(default_factory=list)  # the transcript
    programs: list[str] = field(default_factory=list)  # calls that succeeded (run again first when stateful)
    turn_tokens: list[int | None] = field(default_factory=list)
    calls: int = 0
    errors: int = 0
    timeouts: int = 0
    waits: int = 0
    thinking: int = 0
    prompt_tokens: int = 0
    completion: int = 0
    reasoning_tokens: int | None = 0
    estimated: bool = False
    seed: int | None = None

    def start(self, first: GenerationResult, text: str, tags: tuple[str, str] | None) -> None:
        self.seed = first.seed
        self.opened = tags is not None and first.reasoning is not None and tags[0] not in text
        if self.opened and isinstance(self.prompt, list):
            self.prefix = tags[0] + "\n"

    def count(self, result: GenerationResult) -> None:
        usage = result.usage or {}
        completion = usage.get("completion_tokens")
        self.turn_tokens.append(completion)
        self.completion += int(completion or 0)
        self.prompt_tokens += int(usage.get("prompt_tokens") or 0)
        thought = usage.get("reasoning_tokens")
        self.thinking += int(thought or 0)
        self.reasoning_tokens = None if thought is None or self.reasoning_tokens is None else self.reasoning_tokens + thought
        self.estimated = self.estimated or bool(usage.get("estimated"))

    def add_model(self, text: str) -> None:
        self.text += text
        if self.turns and self.turns[-1]["role"] == "assistant":  # a forced "Wait" goes on in the same turn
            self.turns[-1]["content"] += text
        else:
            self.turns.append({"role": "assistant", "content": text})

    def add_tool(self, outcome: Outcome, code: str, tools: ToolsConfig) -> None:
        self.text += output_block(outcome.output, tools)
        self.turns.append({"role": "tool", "content": outcome.output, "status": outcome.status})
        self.errors += outcome.status == ERROR
        self.timeouts += outcome.status == TIMEOUT
        if outcome.status == OK:
            self.programs.append(code)

    def messages(self, tools: ToolsConfig) -> list[dict[str, str]]:
        """The transcript as chat turns after the prompt: replies as assistant messages,
        outputs as user messages holding the output block."""
        out = []
        for turn in self.turns:
            if turn["role"] == "tool":
                out.append({"role": "user", "content": output_block(turn["content"], tools).strip("\n")})
            else:
                out.append({"role": "assistant", "content": turn["content"]})
        return out

    def result(self, last: GenerationResult, stopped_by: str, tags: tuple[str, str] | None) -> GenerationResult:
        """The sample's result: the transcript's answer (reasoning split as the backend
        splits a single reply) and everything the loop adds to its record."""
        thought, answer = reasoning.split(self.text, tags, opened=self.opened)
        finish = "length" if stopped_by == "max_tokens" else last.finish_reason
        usage = make_usage(self.prompt_tokens, self.completion, self.reasoning_tokens, estimated=self.estimated) \
            if any(t is not None for t in self.turn_tokens) else None
        loop = {"transcript": self.turns, "tool_calls": self.calls, "tool_errors": self.errors,
                "tool_timeouts": self.timeouts, "waits": self.waits, "turn_tokens": self.turn_tokens,
                "stopped_by": stopped_by}
        return GenerationResult(self.id, self.idx, generation=answer, reasoning=thought, finish_reason=finish,
                                usage=usage, seed=self.seed, text=self.text, loop=loop)


class _Feed:
    """The one request stream a `TurnLoop` gives its backend: samples to continue first,
    then new problems while fewer than `limit` samples are in the loop; it waits while
    every sample is in a tool, and ends when the problems are exhausted and the loop is
    empty. `ready()` says whether `next()` would return at once."""

    def __init__(self, source: Iterable[GenerationRequest], limit: int) -> None:
        self.source, self.limit = iter(source), limit
        self.queue: deque[GenerationRequest] = deque()
        self.failed: deque[GenerationResult] = deque()
        self.prompts: dict[str, list] = {}  # problem id -> [prompt, samples of it in the loop]
        self.in_loop = 0
        self.ahead: GenerationRequest | None = None
        self.exhausted = self.closed = False
        self.changed = threading.Condition()

    def __iter__(self) -> "_Feed":
        return self

    def __next__(self) -> GenerationRequest:
        with self.changed:
            while True:
                if self.closed:
                    raise StopIteration
                if self.queue:
                    return self.queue.popleft()
                if self.ahead is not None:
                    return self._take_ahead()
                if not self.exhausted and self.in_loop < self.limit:
                    break
                if self.exhausted and self.in_loop == 0:
                    raise StopIteration
                self.changed.wait()
        self._peek()
        return next(self)

    def ready(self) -> bool:
        """Whether the next request is there without waiting (reading the next problem
        counts as there: the caller waited for its source before)."""
        with self.changed:
            if self.closed or self.queue or self.ahead is not None:
                return True
            if self.in_loop >= self.limit:
                return False
            if self.exhausted:
                return self.in_loop == 0
        self._peek()
        with self.changed:
            return self.ahead is not None or self.in_loop == 0

    def _peek(self) -> None:
        """Read the next problem from the source (outside the lock: it may read files)."""
        request = next(self.source, None)
        with self.changed:
            if request is None:
                self.exhausted = True
            else:
                self.ahead = request
            self.changed.notify_all()

    def _take_ahead(self) -> GenerationRequest:
        request, self.ahead = self.ahead, None
        self.in_loop += len(request.sample_indices)
        entry = self.prompts.setdefault(request.id, [request.prompt, 0])
        entry[1] += len(request.sample_indices)
        return request

    def prompt(self, problem_id: str) -> Prompt:
        with self.changed:
            return self.prompts[problem_id][0]

    def put(self, request: GenerationRequest) -> None:
        """A sample to continue: sent before any new problem."""
        with self.changed:
            self.queue.append(request)
            self.changed.notify_all()

    def finished(self, problem_id: str) -> None:
        """A sample left the loop."""
        with self.changed:
            self.in_loop -= 1
            entry = self.prompts[problem_id]
            entry[1] -= 1
            if entry[1] <= 0:
                del self.prompts[problem_id]
            self.changed.notify_all()

    def fail(self, result: GenerationResult) -> None:
        """A sample that cannot go on (from a worker's thread): it leaves the loop now, and
        its failed result waits for `take_failed`."""
        with self.changed:
            self.failed.append(result)
        self.finished(result.id)

    def take_failed(self) -> list[GenerationResult]:
        with self.changed:
            failed, self.failed = list(self.failed), deque()
            return failed

    def close(self) -> None:
        with self.changed:
            self.closed = True
            self.changed.notify_all()


def _window(backend: Any) -> int:
    """Samples the loop holds at once: twice what the backend keeps in flight."""
    window = getattr(backend, "window", None)
    if callable(window):
        return max(1, int(window()))
    concurrency = getattr(backend, "concurrency", None)
    return 2 * int(concurrency) if concurrency else DEFAULT_LIMIT
