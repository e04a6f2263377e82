"""The judge client: (problem, gold, answer) triples in, verdicts out, through any backend.

Requests are de-duplicated by (problem, gold, answer) and looked up in a `JudgeCache`
first; the rest go to the judge's backend together (`backend.generate`: the same
concurrent machinery as generation, with its retries and rate limits). A reply whose last
line is not `Verdict: equivalent|different` is a judge parse failure, never a verdict;
a request that failed (after the backend's retries) is a judge error and is not cached,
so that a later run asks again."""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

from skyeval.grading.config import GradingConfig
from skyeval.grading.prompts import gold_text, prompt_id, render
from skyeval.grading.verdicts import parse_verdict

log = logging.getLogger("skyeval")

UNPARSEABLE = "unparseable reply: its last line is not `Verdict: equivalent` or `Verdict: different`"
REPLY_CHARS = 4000  # of a reply kept in records and the cache


@dataclass(frozen=True)
class JudgeItem:
    """One question for the judge: is `answer` the same as `gold`, for `problem`?"""

    problem: str
    gold: Any
    answer: str


@dataclass
class Judgement:
    """The judge's answer to one item: `verdict` (`equivalent`, `different`, or None when
    the reply could not be parsed or the request failed: `error` says which), its `reply`,
    and whether it came from the cache."""

    verdict: str | None
    reply: str | None = None
    error: str | None = None
    cached: bool = False

    @property
    def parse_failed(self) -> bool:
        return self.error == UNPARSEABLE


class JudgeCache:
    """Model replies by request key (the judge's, and those of curation's model steps:
    `skyeval.curation.llm.complete`), in memory and, given a `folder`, in JSON lines there
    (`cache*.jsonl`: read at start, appended to as replies arrive, so an interrupted run
    keeps what it paid for). `name` is this process's own file (shards write apart)."""

    def __init__(self, folder: str | Path | None = None, name: str = "cache.jsonl") -> None:
        self.entries: dict[str, dict[str, Any]] = {}
        self.path = Path(folder) / name if folder is not None else None
        self._lock = threading.Lock()
        self._file = None
        if folder is None:
            return
        for path in sorted(Path(folder).glob("cache*.jsonl")):
            with open(path, encoding="utf-8") as handle:
                for line in handle:
                    try:
                        entry = json.loads(line)
                    except json.JSONDecodeError:  # a torn last line: that reply is asked again
                        continue
                    if isinstance(entry, dict) and "key" in entry:
                        self.entries[entry["key"]] = entry

    def get(self, key: str) -> dict[str, Any] | None:
        return self.entries.get(key)

    def put(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self.entries[entry["key"]] = entry
            if self.path is None:
                return
            if self._file is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._file = open(self.path, "a+", encoding="utf-8")
                if self._file.tell() and not _ends_with_newline(self.path):  # after a torn line
                    self._file.write("\n")
            self._file.write(json.dumps(entry, ensure_ascii=False) + "\n")
            self._file.flush()

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as handle:
        handle.seek(-1, 2)
        return handle.read(1) == b"\n"


class Judge:
    """A judge model behind a backend built (lazily: a run whose answers all come from
    the cache opens no connection) from `config.judge`, with a cache and counts of what
    it sent and got back. Thread-safe; call `close()` when done."""

    def __init__(self, config: GradingConfig, cache: JudgeCache | None = None) -> None:
        from skyeval.backends.base import ModelConfig

        if not isinstance(config.judge, ModelConfig):
            raise ValueError("grading.judge names no model: set grading.judge.model_source")
        self.config, self.cache = config, cache if cache is not None else JudgeCache()
        self.model_source = config.judge.model_source
        self.prompt_id = prompt_id(config.prompt)
        self.counts: Counter = Counter()  # items, cached, deduplicated, requests, parse_failed, errors, tokens
        self._backend = None
        self._lock = threading.Lock()
        self._sending = threading.Lock()  # one batch through the backend at a time (callers may be threads)

    def key(self, item: JudgeItem) -> str:
        """What makes two requests the same: judge, template, sampling and the triple."""
        c = self.config
        fields = [self.model_source, self.prompt_id, c.temperature, c.seed, c.max_tokens, item.problem,
                  gold_text(item.gold), item.answer]
        return hashlib.sha256(json.dumps(fields, ensure_ascii=False).encode()).hexdigest()[:32]

    def judge(self, items: Sequence[JudgeItem]) -> list[Judgement]:
        """A `Judgement` per item, in order. Each distinct triple is asked at most once
        (and not at all when the cache has it)."""
        from skyeval.backends.base import GenerationRequest, SamplingParams

        keys = [self.key(item) for item in items]
        todo: dict[str, JudgeItem] = {}
        for key, item in zip(keys, items):
            if self.cache.get(key) is None and key not in todo:
                todo[key] = item
        with self._lock:
            self.counts["items"] += len(items)
            self.counts["cached"] += sum(self.cache.get(k) is not None for k in keys)
            self.counts["deduplicated"] += sum(self.cache.get(k) is None for k in keys) - len(todo)
        errors: dict[str, str] = {}
        if todo:
            c = self.config
            sampling = SamplingParams(n=1, temperature=c.temperature, seed=c.seed, max_tokens=c.max_tokens)
            requests = (GenerationRequest(key, [{"role": "user", "content": render(
                c.prompt, item.problem, gold_text(item.gold), item.answer)}], [0]) for key, item in todo.items())
            with self._sending:
                for result in self.backend().generate(requests, sampling):
                    self._take(result, errors)
        out = []
        for key in keys:
            entry = self.cache.get(key)
            if entry is None:
                out.append(Judgement(None, error=errors.get(key, "no reply from the judge")))
            else:
                out.append(Judgement(entry["verdict"], entry["reply"], None if entry["verdict"] else UNPARSEABLE,
                                     cached=key not in todo))
        return out

    def _take(self, result: Any, errors: dict[str, str]) -> None:
        with self._lock:
            self.counts["requests"] += 1
            usage = result.usage or {}
            self.counts["prompt_tokens"] += int(usage.get("prompt_tokens") or 0)
            self.counts["completion_tokens"] += int(usage.get("completion_tokens") or 0)
            if not result.ok:
                self.counts["errors"] += 1
                errors[result.id] = f"{result.error_type}: {result.error}"
                log.warning("judge request failed: %s", errors[result.id])
                return
            reply = result.generation or ""
            verdict = parse_verdict(reply)
            self.counts["parse_failed"] += verdict is None
        self.cache.put({"key": result.id, "verdict": verdict, "reply": reply[-REPLY_CHARS:],
                        "usage": {k: usage.get(k) for k in ("prompt_tokens", "completion_tokens")}})

    def backend(self) -> Any:
        from skyeval.backends.base import ScalingConfig

        with self._lock:
            if self._backend is None:
                self._backend = self.config.judge.build(ScalingConfig(concurrency=self.config.concurrency))
            return self._backend

    def summary(self) -> dict[str, Any]:
        """The judge, its prompt, and what it was sent and cost in this process."""
        from skyeval.grading.prompts import PROMPTS

        price = getattr(self.config.judge, "price", None)
        counts = self.counts
        cost = None
        if price:
            cost = round((counts["prompt_tokens"] * price["input"] + counts["completion_tokens"] * price["output"]) / 1e6, 6)
        return {
            "model": self.model_source,
            "backend": type(self.config.judge).__name__,
            "prompt": self.config.prompt if self.config.prompt in PROMPTS else "custom",
            "prompt_id": self.prompt_id,
            "temperature": self.config.temperature, "seed": self.config.seed, "max_tokens": self.config.max_tokens,
            "items": counts["items"], "cached": counts["cached"], "deduplicated": counts["deduplicated"],
            "requests": counts["requests"], "parse_failed": counts["parse_failed"], "errors": counts["errors"],
            "tokens": {"prompt": counts["prompt_tokens"], "completion": counts["completion_tokens"]},
            "price": price, "cost": cost,
        }

    def close(self) -> None:
        with self._lock:
            backend, self._backend = self._backend, None
        if backend is not None:
            backend.close()
        self.cache.close()


def judge_pairs(items: Iterable[JudgeItem | tuple[str, Any, str]], config: GradingConfig | dict[str, Any],
                cache_dir: str | Path | None = None) -> list[Judgement]:
    """Ask the judge of `config` (a `GradingConfig` or its fields) whether each answer
    equals its gold: `items` are `JudgeItem`s or (problem, gold, answer) triples. Returns
    a `Judgement` per item, in order: `verdict` is `equivalent`, `different`, or None
    with `error` set (an unparseable reply, a failed request). Identical triples are
    asked once; with `cache_dir`, replies are kept there and never asked for again.

        judge_pairs([("What is 1/2 as a decimal?", "0.5", "one half")],
                    {"judge": {"model_source": "gpt-4o-mini"}})
    """
    config = GradingConfig.of(config)
    if not config.active:  # a judge asked for directly: `mode` only says where runs use one
        config = GradingConfig(**{**config.__dict__, "mode": "always"})
    judge = Judge(config, JudgeCache(cache_dir))
    try:
        return judge.judge([item if isinstance(item, JudgeItem) else JudgeItem(*item) for item in items])
    finally:
        judge.close()
