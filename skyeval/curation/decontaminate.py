"""Decontamination: find training rows that contain a benchmark problem (docs/curation.md).

The benchmark index is built once from the evaluation envs' problems, read through the
same loaders as `evaluate` (`SkyEnvBuilder.build(name).iter_problems()`, so the local
mirror works). Texts are compared as normalized words (`skyeval.curation.normalize`).
A row matches a benchmark problem when

- its normalized text equals the problem's (`match: "exact"`), or
- its normalized text equals the problem's with other numbers (every run of digits read
  as one placeholder; problems of at least `MIN_MASKED_WORDS` words): `match: "near"`.
  This finds a short problem with a changed number, which shares no n-gram with it, or
- it shares word n-grams (default n=8) with it: at least `min_overlap` (default 0.25) of
  the problem's distinctive n-grams, and at least one. `match: "contains"` when the row
  holds all of them (the problem plus a prefix or suffix sentence, say), else `"near"`
  (a changed number, an edited sentence), or
- it restates the problem in other words with the same quantities: `match: "paraphrase"`
  (the meaning-level check, `skyeval.curation.paraphrase`; on unless `paraphrase=None`).

The optional model stage (`skyeval.curation.model_stage`, `decontaminate(model=...)`)
checks the rows the local checks kept: `match: "model"`.

Distinctive n-grams: an n-gram of numbers alone is left out, and so is one shared by
more than `max_share` (default 10) benchmark problems: it is boilerplate ("Return your
final answer within \\boxed{}", MBPP's "You are an expert Python programmer"). Neither is
indexed, so neither flags anything alone.
Problems shorter than n words have no n-grams and match only exactly.

Word n-grams are hashed to uint64 (word ids from the benchmark vocabulary, combined
polynomially), and a chunk of rows is checked with one vectorized lookup; only rows with
a hit are looked at one by one.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from itertools import chain, repeat
from typing import TYPE_CHECKING, Any, Iterable, Iterator

from skyeval.curation.conversations import default_fields, field_texts, messages, part_text
from skyeval.curation.normalize import words
from skyeval.curation.paraphrase import DEFAULT_THRESHOLD as PARAPHRASE_THRESHOLD
from skyeval.errors import SkyevalError

if TYPE_CHECKING:
    import numpy as np

    from skyeval.curation.model_stage import ModelStage
    from skyeval.curation.paraphrase import ParaphraseIndex

DEFAULT_N = 8
DEFAULT_MIN_OVERLAP = 0.25
DEFAULT_MAX_SHARE = 10
MIN_MASKED_WORDS = 6
DEFAULT_PARAPHRASE = PARAPHRASE_THRESHOLD  # the meaning-level check's threshold (docs/curation.md)
TRAINING_ENVS = ("numina",)  # data-generation sources, never benchmarks to decontaminate against
_NUMBER = re.compile(r"\b\d+\b")
_PRIME = 0x9E3779B97F4A7C15
_FILTER_BITS = 24  # odd 64-bit multiplier of the n-gram hash


class ContaminationIndexError(SkyevalError):
    """A benchmark asked for by name cannot be read (unknown, or no data)."""


@dataclass
class Match:
    """One benchmark problem found in one field of a row."""

    benchmark: str
    problem_id: str
    match: str  # exact | contains | near | paraphrase | model
    field: str
    ngram: str | None  # the first shared n-gram (None for an exact match of a short problem, a paraphrase)
    overlap: float  # share of the problem's distinctive n-grams found in the row (paraphrase: of its
    # words, weighted; model: the cosine similarity)
    score: float | None = None  # paraphrase: the meaning-level score; model: the cosine similarity


@dataclass
class BenchmarkIndex:
    """Hashed word n-grams of benchmark problems, and their normalized texts."""

    n: int
    min_overlap: float
    vocab: dict[str, int]
    keys: "np.ndarray"  # sorted unique n-gram hashes (uint64)
    starts: "np.ndarray"  # keys[i] belongs to owners[starts[i]:starts[i+1]]
    owners: "np.ndarray"  # problem indices
    sizes: "np.ndarray"  # distinctive n-grams per problem
    exact: dict[str, list[int]]  # normalized text -> problem indices
    masked: dict[str, list[int]]  # normalized text, numbers masked -> problem indices
    problem_ids: list[str]
    problem_benchmarks: list[str]
    problems: dict[str, int] = field(default_factory=dict)  # benchmark -> problem count
    not_checked: dict[str, str] = field(default_factory=dict)  # benchmark -> why
    paraphrase: "ParaphraseIndex | None" = None  # the meaning-level check (None: off)

    def __post_init__(self) -> None:
        import numpy as np

        # cheap pre-checks: (word count, first word) pairs worth a masked lookup, and a
        # presence bitmap of the keys' top bits in front of the binary search
        self.masked_heads = {(key.count(" ") + 1, key.partition(" ")[0]) for key in self.masked}
        self.present = np.zeros(1 << _FILTER_BITS, dtype=bool)
        self.present[self.keys >> np.uint64(64 - _FILTER_BITS)] = True

    @classmethod
    def build(cls, benchmarks: dict[str, Iterable[tuple[str, str]]], *, n: int = DEFAULT_N,
              min_overlap: float = DEFAULT_MIN_OVERLAP, max_share: int = DEFAULT_MAX_SHARE,
              not_checked: dict[str, str] | None = None,
              paraphrase: float | None = DEFAULT_PARAPHRASE) -> "BenchmarkIndex":
        """An index of `{benchmark: [(problem id, text), ...]}`; `paraphrase` is the
        meaning-level check's threshold (None: that check is off)."""
        import numpy as np

        from skyeval.curation.paraphrase import ParaphraseIndex

        if n < 1 or not 0 < min_overlap <= 1:
            raise ValueError(f"n must be >= 1 and min_overlap in (0, 1], got n={n}, min_overlap={min_overlap}")
        vocab: dict[str, int] = {}
        exact: dict[str, list[int]] = {}
        masked: dict[str, list[int]] = {}
        ids: list[str] = []
        names: list[str] = []
        counts: dict[str, int] = {}
        hashes, owners, texts = [], [], []
        for benchmark, problems in benchmarks.items():
            counts[benchmark] = 0
            for problem_id, text in problems:
                index = len(ids)
                ids.append(str(problem_id))
                names.append(benchmark)
                counts[benchmark] += 1
                texts.append(text)
                ws = words(text)
                exact.setdefault(" ".join(ws), []).append(index)
                if len(ws) >= MIN_MASKED_WORDS:
                    masked.setdefault(_masked(" ".join(ws)), []).append(index)
                token_ids = np.array([vocab.setdefault(w, len(vocab)) for w in ws], dtype=np.int64)
                grams, _ = ngram_hashes(token_ids, n)
                # n-grams of numbers alone ("1 2 3 4 5 6 7 8") are no evidence of a copy
                _, numeric = ngram_hashes(np.array([0 if w.isdigit() else -1 for w in ws], dtype=np.int64), n)
                grams = np.unique(grams[~numeric])
                hashes.append(grams)
                owners.append(np.full(len(grams), index, dtype=np.int32))
        all_hashes = np.concatenate(hashes) if hashes else np.zeros(0, np.uint64)
        all_owners = np.concatenate(owners) if owners else np.zeros(0, np.int32)
        order = np.argsort(all_hashes, kind="stable")
        all_hashes, all_owners = all_hashes[order], all_owners[order]
        keys, share = np.unique(all_hashes, return_counts=True)
        distinctive = share <= max_share
        keep = np.repeat(distinctive, share)
        keys, share = keys[distinctive], share[distinctive]
        all_owners = all_owners[keep]
        starts = np.concatenate([[0], np.cumsum(share)]).astype(np.int64)
        sizes = np.bincount(all_owners, minlength=len(ids)).astype(np.int64)
        meaning = None
        if paraphrase is not None:  # its word variants join the vocabulary: rows are looked up once
            meaning = ParaphraseIndex.build(texts, threshold=paraphrase)
            meaning.extend_vocabulary(vocab)
        return cls(n, min_overlap, vocab, keys, starts, all_owners, sizes, exact, masked, ids, names,
                   counts, dict(not_checked or {}), meaning)

    @classmethod
    def from_envs(cls, names: Iterable[str] | None = None, *, data_dir: str | None = None,
                  **options: Any) -> "BenchmarkIndex":
        """The index of envs by name (default `benchmark_names()`), read like `evaluate`
        reads them. A default benchmark without data is listed in `not_checked`; one asked
        for by name raises."""
        sources, skipped = read_benchmarks(names, data_dir=data_dir)
        return cls.build(sources, not_checked=skipped, **options)

    def check(self, texts: list[list[tuple[str, str]]], costs: dict[str, float] | None = None,
              best: list[float] | None = None) -> list[list[Match]]:
        """The matches of each row of a chunk; a row is a list of (field, text). `costs`
        accumulates the seconds spent in each check ("ngram", "paraphrase"); `best` (one
        slot per row) receives each row's best paraphrase score, also below the threshold
        (down to `SWEEP[0]`)."""
        import time

        import numpy as np

        started = time.perf_counter()
        segments = [(row, name, text, words(text)) for row, fields in enumerate(texts) for name, text in fields]
        offsets = np.cumsum([0] + [len(ws) + 1 for _, _, _, ws in segments])
        separated = chain.from_iterable(chain(ws, ("",)) for _, _, _, ws in segments)  # "": no n-gram spans two
        flat = np.fromiter(map(self.vocab.get, separated, repeat(-1)), dtype=np.int64, count=int(offsets[-1]))
        found = self._check_ngrams([(row, name, ws) for row, name, _, ws in segments], len(texts), flat, offsets)
        ngram_done = time.perf_counter()
        if self.paraphrase is not None:
            self._check_paraphrases(segments, found, best, flat, offsets)
        if costs is not None:
            costs["ngram"] = costs.get("ngram", 0.0) + ngram_done - started
            if self.paraphrase is not None:
                costs["paraphrase"] = costs.get("paraphrase", 0.0) + time.perf_counter() - ngram_done
        return found

    def _check_paraphrases(self, segments: list[tuple[int, str, str, list[str]]], found: list[list[Match]],
                           best: list[float] | None, flat: "np.ndarray", offsets: "np.ndarray") -> None:
        import numpy as np

        floor = min(SWEEP[0], self.paraphrase.threshold) if best is not None else None
        # the word features of the tokens the n-gram check looked up (vocabulary ids)
        segment_of = np.repeat(np.arange(len(segments)), np.diff(offsets))
        known = flat >= 0
        features = self.paraphrase.token_features[flat[known]]
        word = features >= 0
        results = self.paraphrase.check([text for _, _, text, _ in segments], floor,
                                        features=(segment_of[known][word], features[word]))
        for (row, name, _, _), result in zip(segments, results):
            if result is None:
                continue
            if best is not None:
                best[row] = max(best[row], result.score)
            if result.score < self.paraphrase.threshold:
                continue
            for problem in self.paraphrase.same_problems(result.problem):  # the problem under every name
                problem_id, benchmark = self.problem_ids[problem], self.problem_benchmarks[problem]
                if not any(m.problem_id == problem_id and m.benchmark == benchmark for m in found[row]):
                    found[row].append(Match(benchmark, problem_id, "paraphrase", name, None, result.words,
                                            result.score))

    def _check_ngrams(self, segments: list[tuple[int, str, list[str]]], rows: int, flat: "np.ndarray",
                      offsets: "np.ndarray") -> list[list[Match]]:
        import numpy as np

        found: list[list[Match]] = [[] for _ in range(rows)]
        exact_seen: set[tuple[int, int]] = set()
        for row, name, ws in segments:
            text = " ".join(ws)
            same = self.exact.get(text)
            if not same and ws and (len(ws), "#" if ws[0].isdigit() else ws[0]) in self.masked_heads:
                same, kind = self.masked.get(_masked(text), ()), "near"
            else:
                kind = "exact"
            for problem in same or ():
                exact_seen.add((row, problem))
                found[row].append(self._match(problem, kind, name, _first_gram(ws, self.n), 1.0))
        if not len(self.keys):
            return found
        hashes, valid = ngram_hashes(flat, self.n)
        positions = np.flatnonzero(valid)
        positions = positions[self.present[hashes[positions] >> np.uint64(64 - _FILTER_BITS)]]
        slots = np.searchsorted(self.keys, hashes[positions])
        slots[slots == len(self.keys)] = 0
        hit = self.keys[slots] == hashes[positions]
        positions, slots = positions[hit], slots[hit]
        if not len(positions):
            return found
        segment_of = np.searchsorted(offsets, positions, side="right") - 1
        for segment in np.unique(segment_of):
            mine = segment_of == segment
            row, name, ws = segments[segment]
            self._near(row, name, ws, positions[mine] - offsets[segment], slots[mine], found, exact_seen)
        return found

    def _near(self, row: int, name: str, ws: list[str], positions: "np.ndarray", slots: "np.ndarray",
              found: list[list[Match]], exact_seen: set[tuple[int, int]]) -> None:
        import numpy as np

        first_at: dict[int, int] = {}  # key slot -> first position in the text
        for position, slot in zip(positions.tolist(), slots.tolist()):
            first_at.setdefault(slot, position)
        unique = np.fromiter(first_at, dtype=np.int64)
        spans = [self.owners[self.starts[s]:self.starts[s + 1]] for s in unique.tolist()]
        problems, hits = np.unique(np.concatenate(spans), return_counts=True)
        for problem, count in zip(problems.tolist(), hits.tolist()):
            size = int(self.sizes[problem])
            if count < max(1, math.ceil(self.min_overlap * size)) or (row, problem) in exact_seen:
                continue
            position = min(first_at[s] for s, owned in zip(unique.tolist(), spans) if problem in owned)
            kind = "contains" if count == size else "near"
            found[row].append(self._match(problem, kind, name, " ".join(ws[position:position + self.n]), count / size))

    def _match(self, problem: int, kind: str, name: str, ngram: str | None, overlap: float) -> Match:
        return Match(self.problem_benchmarks[problem], self.problem_ids[problem], kind, name, ngram, round(overlap, 4))

    def describe(self) -> dict[str, Any]:
        return {"n": self.n, "min_overlap": self.min_overlap, "problems": dict(self.problems),
                "ngrams": int(len(self.keys)), "not_checked": dict(self.not_checked),
                "paraphrase": self.paraphrase.describe() if self.paraphrase is not None else None}


def read_benchmarks(names: Iterable[str] | None = None, *, data_dir: str | None = None
                    ) -> tuple[dict[str, list[tuple[str, str]]], dict[str, str]]:
    """({benchmark: [(problem id, text), ...]}, {benchmark not read: why}) of envs by name
    (default `benchmark_names()`), read like `evaluate` reads them. A default benchmark
    without data is skipped; one asked for by name raises."""
    from skyeval.envs.registry import SkyEnvBuilder

    asked = names is not None
    names = list(names) if asked else benchmark_names()
    knobs = {"data_dir": data_dir} if data_dir else {}
    sources, skipped = {}, {}
    for name in names:
        try:
            env = SkyEnvBuilder.build(name, knobs)
            sources[name] = [(str(p["id"]), part_text(messages(p["question"]), "prompt")) for p in env.iter_problems()]
        except Exception as err:  # noqa: BLE001 - unknown name, no data, unreadable data: same report
            if asked:
                raise ContaminationIndexError(f"cannot read benchmark {name!r}: {err}") from err
            skipped[name] = f"{type(err).__name__}: {err}"
    return sources, skipped


def benchmark_names() -> list[str]:
    """Every evaluation env of conf/env/ (data-generation sources and aliases of the same
    data, such as olympiadbench_math_en, left out)."""
    from skyeval.envs.registry import SkyEnvBuilder

    seen, names = set(), []
    for name in SkyEnvBuilder.names():
        if name in TRAINING_ENVS:
            continue
        try:
            config = SkyEnvBuilder.config(name)
        except Exception:  # noqa: BLE001 - a registered (not packaged) env: keep it
            names.append(name)
            continue
        signature = repr(sorted((k, repr(v)) for k, v in config.items() if k != "name"))
        if signature not in seen:
            seen.add(signature)
            names.append(name)
    return names


def ngram_hashes(token_ids: "np.ndarray", n: int) -> tuple["np.ndarray", "np.ndarray"]:
    """(hash of every window of n ids, whether the window holds no negative id), uint64."""
    import numpy as np

    count = len(token_ids) - n + 1
    if count <= 0:
        return np.zeros(0, np.uint64), np.zeros(0, bool)
    values = token_ids.astype(np.uint64) + np.uint64(1)
    hashes = np.zeros(count, np.uint64)
    prime = np.uint64(_PRIME)
    with np.errstate(over="ignore"):
        for k in range(n):
            hashes = hashes * prime + values[k:k + count]
    bad = np.concatenate([[0], np.cumsum(token_ids < 0)])
    return hashes, (bad[n:] - bad[:count]) == 0


def _masked(text: str) -> str:
    """A normalized text with every number as "#"."""
    return _NUMBER.sub("#", text)


def _first_gram(ws: list[str], n: int) -> str | None:
    return " ".join(ws[:n]) if len(ws) >= n else None


# ---- streaming a chunked input through worker processes ----------------------------

_INDEX: BenchmarkIndex | None = None


def _init_worker(index: BenchmarkIndex) -> None:
    global _INDEX
    _INDEX = index



@dataclass
class ChunkResult:
    """What checking one chunk found: its contaminated rows, the seconds each check took,
    and (when asked) how many rows each paraphrase threshold of `SWEEP` would remove."""

    contaminated: list[tuple[int, list[Match]]]
    costs: dict[str, float]
    sweep: dict[str, int] = field(default_factory=dict)


SWEEP = (0.1, 0.12, 0.15, 0.18, 0.2, 0.25, 0.3)  # paraphrase thresholds --report-only tabulates
MATCH_KINDS = ("exact", "near", "contains", "paraphrase", "model")


def _model_matches(model: "ModelStage", chunk: list[Any], contaminated: list[tuple[int, list[Match]]],
                   fields: list[str], on: str) -> list[tuple[int, list[Match]]]:
    """(position, [a `model` match]) of the rows of a chunk the local checks kept that the
    model stage matches (the first field that matches)."""
    from skyeval.curation.streams import as_dict

    flagged = {i for i, _ in contaminated}
    texts = {i: dict(field_texts(as_dict(r), fields, on, i)) for i, r in enumerate(chunk) if i not in flagged}
    found: dict[int, Match] = {}
    for name in fields:
        pending = [(i, by_field[name]) for i, by_field in texts.items() if i not in found and name in by_field]
        for (i, _), result in zip(pending, model.check([text for _, text in pending])):
            if result is not None:
                benchmark, problem_id, _ = model.problems[result.problem]
                found[i] = Match(benchmark, problem_id, "model", name, None, result.similarity, result.similarity)
    return [(i, [m]) for i, m in found.items()]


def check_rows(rows: list[Any], fields: list[str], index: BenchmarkIndex | None = None,
               sweep: bool = False, on: str = "prompt") -> ChunkResult:
    """Check a chunk; rows are dicts or JSON lines, read by `skyeval.curation.conversations`
    (part `on` of `fields`: a row without that text is an EmptyRowError)."""
    from skyeval.curation.streams import as_dict

    index = index or _INDEX
    texts = [field_texts(as_dict(row), fields, on, i) for i, row in enumerate(rows)]
    costs: dict[str, float] = {}
    best: list[float] | None = [0.0] * len(texts) if sweep and index.paraphrase is not None else None
    found = index.check(texts, costs, best)
    result = ChunkResult([(i, m) for i, m in enumerate(found) if m], costs)
    if best is not None:
        by_ngram = [any(m.match != "paraphrase" for m in matches) for matches in found]
        result.sweep = {str(t): sum(1 for n, b in zip(by_ngram, best) if n or b >= t) for t in SWEEP}
    return result


def stream_checks(chunks: Iterable[list[Any]], fields: list[str], index: BenchmarkIndex, workers: int = 0,
                  sweep: bool = False, on: str = "prompt") -> Iterator[tuple[list[Any], ChunkResult]]:
    """(chunk, what was found in it) in input order. `workers` processes check chunks in
    parallel (0: one per core; 1: in this process); at most 2 chunks per worker are in flight."""
    from skyeval.curation.streams import map_chunks

    if (workers or os.cpu_count() or 1) == 1:
        return map_chunks(check_rows, chunks, fields, index, sweep, on, workers=1)
    return map_chunks(check_rows, chunks, fields, None, sweep, on, workers=workers, initializer=_init_worker,
                      initargs=(index,))


def decontaminate(source: str | os.PathLike, out_dir: str | os.PathLike | None, index: BenchmarkIndex, *,
                  fields: list[str] | None = None, on: str | None = None, format: str = "jsonl", workers: int = 0,
                  chunk_rows: int = 2000, sweep: bool | None = None, model: "ModelStage | None" = None,
                  progress: str | None = None) -> dict[str, Any]:
    """Stream `source` (a run folder, JSONL or Parquet) through `index`, checking part `on`
    (prompt | response | conversation; default: all the text of `fields` when they are
    named, else the prompt of `conversations.default_fields` of the first row; every row is
    read by `skyeval.curation.conversations`): kept rows to
    `out_dir/kept.<format>`, contaminated ones (with their `contamination` matches) to
    `out_dir/removed.<format>`, and `out_dir/report.json`. `out_dir=None` writes nothing
    but returns the report (`--report-only`), with the rows each paraphrase threshold would
    remove (`sweep`; default: when nothing is written). `model` (optional) checks the rows
    the local checks kept (skyeval.curation.model_stage). `progress` names a bar shown on a
    terminal."""
    import time
    from collections import Counter
    from dataclasses import asdict
    from pathlib import Path

    from skyeval.curation.streams import RowWriter, as_dict, read_chunks
    from skyeval.envs.local import progress_bar
    from skyeval.results import write_json

    start = time.perf_counter()
    sweep = out_dir is None if sweep is None else sweep
    chunks = read_chunks(source, chunk_rows)
    first = next(chunks, [])
    on = on or ("conversation" if fields else "prompt")
    fields = fields or (default_fields(as_dict(first[0])) if first else ["problem"])
    out = Path(out_dir) if out_dir is not None else None
    writers = {}
    if out is not None:
        writers = {name: RowWriter(out / f"{name}.{format}", format) for name in ("kept", "removed")}
    rows_in = removed = 0
    by_benchmark: Counter = Counter()
    by_kind: Counter = Counter()
    by_benchmark_kind: dict[str, Counter] = {}
    costs: Counter = Counter()
    thresholds: Counter = Counter()
    bar = progress_bar(progress, None, unit="row")
    try:
        for chunk, result in stream_checks(chain([first], chunks) if first else [], fields, index, workers, sweep, on):
            contaminated = result.contaminated
            if model is not None:
                contaminated = sorted(contaminated + _model_matches(model, chunk, contaminated, fields, on))
            bar.update(len(chunk))
            rows_in += len(chunk)
            removed += len(contaminated)
            costs.update(result.costs)
            thresholds.update(result.sweep)
            for _, matches in contaminated:
                by_benchmark.update({m.benchmark for m in matches})
                by_kind.update({m.match for m in matches})
                for benchmark, kind in {(m.benchmark, m.match) for m in matches}:
                    by_benchmark_kind.setdefault(benchmark, Counter())[kind] += 1
            if writers:
                dropped = {i for i, _ in contaminated}
                writers["kept"].write_many([r for i, r in enumerate(chunk) if i not in dropped])
                writers["removed"].write_many([{**as_dict(chunk[i]), "contamination": [asdict(m) for m in matches]}
                                               for i, matches in contaminated])
    finally:
        bar.close()
        for writer in writers.values():
            writer.close()
    seconds = time.perf_counter() - start
    report = {"source": str(source), "fields": fields, "on": on, "rows_in": rows_in, "kept": rows_in - removed,
              "removed": removed, "removed_by_benchmark": dict(sorted(by_benchmark.items())),
              "removed_by_match": {k: by_kind[k] for k in MATCH_KINDS if by_kind[k]},
              "removed_by_benchmark_and_match": {b: {k: c[k] for k in MATCH_KINDS if c[k]}
                                                 for b, c in sorted(by_benchmark_kind.items())},
              "index": index.describe(),
              "check_seconds": {k: round(v, 3) for k, v in sorted(costs.items())},
              "seconds": round(seconds, 3), "rows_per_second": round(rows_in / seconds) if seconds else None}
    if model is not None:
        report["model_stage"] = {**model.describe(), "cost": asdict(model.cost)}
    if thresholds:
        report["removed_by_paraphrase_threshold"] = {str(t): thresholds[str(t)] for t in SWEEP}
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        write_json(out / "report.json", report)
    return report


def report_table(report: dict[str, Any]) -> str:
    """The console table of a report: rows removed per benchmark, split by kind of match
    (a row counts once per benchmark and kind); the rows each paraphrase threshold would
    remove when the report has them (--report-only)."""
    kinds = "".join(f" {k:>10}" for k in MATCH_KINDS)
    lines = [f"{'benchmark':<16} {'problems':>9} {'rows removed':>13}{kinds}"]
    split = report.get("removed_by_benchmark_and_match", {})
    for name, problems in report["index"]["problems"].items():
        counts = "".join(f" {split.get(name, {}).get(k, 0):>10}" for k in MATCH_KINDS)
        lines.append(f"{name:<16} {problems:>9} {report['removed_by_benchmark'].get(name, 0):>13}{counts}")
    for name in report["index"]["not_checked"]:
        lines.append(f"{name:<16} {'-':>9} {'not checked':>13}")
    lines.append(f"rows in {report['rows_in']}, kept {report['kept']}, removed {report['removed']} "
                 f"(a row may match several benchmarks) {report['removed_by_match']}")
    costs = report.get("check_seconds") or {}
    if costs:
        lines.append("check seconds (summed over workers): " + ", ".join(f"{k} {v:.1f}" for k, v in costs.items()))
    sweep = report.get("removed_by_paraphrase_threshold")
    if sweep:
        current = report["index"]["paraphrase"]["threshold"]
        lines.append("paraphrase threshold  rows removed")
        for threshold, rows in sweep.items():
            mark = "  (current)" if float(threshold) == current else ""
            lines.append(f"{threshold:>20}  {rows:>12}{mark}")
    return "\n".join(lines)
