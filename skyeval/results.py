"""The run folder: its part files, summary, config and locks, written and read.

generations/, scores/, failures/ as part files; summary.json, config.yaml, logs.txt,
manifest.json, run.json; a shard's share of a folder (`Shard`).

Records are appended to part files (`generations/part-00000.jsonl`, rotating by size), one
flushed line per record, so a SIGKILL loses nothing the OS got; `fsync` runs at most once a
second and when a part closes. A run never appends to a part an earlier run wrote: it opens
new ones, so a torn last line of a killed run stays alone (readers skip it). One process
writes a folder (or one shard of it) at a time, under an `flock`.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import re
import socket
import time
from array import array
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from skyeval.errors import ConfigError, RunFolderError

log = logging.getLogger(__name__)

Key = tuple[str, int]  # (problem id, sample index)

RUN_FILE = "run.json"  # fingerprint of the config the folder belongs to
KINDS = ("generations", "scores", "failures")
PART_BYTES = int(os.environ.get("SKYEVAL_PART_BYTES", 256 * 2**20))  # a part file rotates past this size
FSYNC_EVERY_S = 1.0


@dataclass
class Shard:
    """One shard of a run split over jobs (the root `shard` section, docs/scaling.md): it
    handles the problems whose id hashes to `index` modulo `count` and writes part files
    of its own in the shared run folder."""

    index: int = 0
    count: int = 1

    def __post_init__(self) -> None:
        if self.count < 1 or not 0 <= self.index < self.count:
            raise ConfigError(f"shard.index must be in [0, shard.count), got index={self.index} count={self.count}")

    @property
    def active(self) -> bool:
        return self.count > 1

    def owns(self, problem_id: str) -> bool:
        return not self.active or key_hash((problem_id, -1)) % self.count == self.index

    @property
    def prefix(self) -> str:
        """Part files of this shard start with it: each shard writes only its own."""
        return f"shard-{self.index:05d}-" if self.active else ""

    @property
    def name(self) -> str:
        return f"shard-{self.index:05d}-of-{self.count:05d}"


class ConfigMismatchError(RunFolderError):
    """The run folder holds results of a different config."""


class FolderLockedError(RunFolderError):
    """Another live process is writing this run folder (or shard)."""


def _still_at(fh: Any, path: Path) -> bool:
    """Whether the open file `fh` is still the file at `path` (not removed or replaced)."""
    try:
        here, there = os.fstat(fh.fileno()), os.stat(path)
    except FileNotFoundError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


class RunFolder:
    """Paths and record files of one run."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.summary = self.path / "summary.json"
        self.config = self.path / "config.yaml"
        self.logs = self.path / "logs.txt"
        self.manifest = self.path / "manifest.json"
        self.run_file = self.path / RUN_FILE

    def dir(self, kind: str) -> Path:
        return self.path / kind

    def parts(self, kind: str) -> list[Path]:
        """Record files of `kind` in write order (part files; `<kind>.jsonl` of older folders first)."""
        return sorted(self.dir(kind).glob("*.jsonl"), key=_part_order)

    def records(self, kind: str, unreadable: "UnreadableLines | None" = None) -> Iterator[dict[str, Any]]:
        return iter_records(self.path, kind, unreadable)

    @contextlib.contextmanager
    def lock(self, name: str = "run") -> Iterator[None]:
        """Hold an exclusive `flock` on `.lock-<name>` for the block; the file names the
        holder and is removed when the block ends, however it ends (an exception, Ctrl-C, or
        SIGTERM, which the CLI turns into Ctrl-C). A second process gets FolderLockedError
        naming the holder. A killed holder's lock dies with it: its file, still naming it,
        is taken over with one line."""
        self.path.mkdir(parents=True, exist_ok=True)
        path = self.path / f".lock-{name}"
        while True:
            fh = path.open("a+", encoding="utf-8")
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                fh.seek(0)
                holder = fh.read().strip() or "unknown process"
                fh.close()
                raise FolderLockedError(f"{self.path} is being written by another process ({holder}); "
                                        "wait for it to finish or stop it") from None
            if _still_at(fh, path):
                break
            fh.close()  # its holder removed it as this process opened it: lock the new one
        try:
            fh.seek(0)
            earlier = fh.read().strip()
            if earlier:
                log.warning("%s: %s ended without releasing its lock (killed?); taken over", self.path, earlier)
            fh.seek(0)
            fh.truncate()
            started = datetime.now(timezone.utc).isoformat(timespec="seconds")
            job = slurm_job()
            fh.write(f"pid {os.getpid()} on {socket.gethostname()} since {started}" + (f", SLURM job {job}" if job else ""))
            fh.flush()
            yield
        finally:
            path.unlink(missing_ok=True)  # before the lock is released: whoever locks next checks `_still_at`
            fh.close()

    @contextlib.contextmanager
    def waiting_lock(self, name: str) -> Iterator[None]:
        """A blocking `flock` on `.lock-<name>`, for short critical sections that concurrent
        writers (shards, cluster workers) take in turn: claiming, the manifest, merging."""
        self.path.mkdir(parents=True, exist_ok=True)
        with (self.path / f".lock-{name}").open("a+", encoding="utf-8") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def claim(self, fingerprint: dict[str, Any], overwrite: bool = False,
              same: Callable[[dict[str, Any]], bool] | None = None) -> bool:
        """Bind the folder to a config fingerprint. Returns True when resuming earlier work;
        raises ConfigMismatchError when the folder belongs to another config (`same(previous)`
        decides, else equality); a folder of the same config gets this fingerprint's form."""
        if self.run_file.exists() and not overwrite:
            previous = json.loads(self.run_file.read_text())
            if previous != fingerprint and not (same is not None and same(previous)):
                changed = sorted(k for k in set(previous) | set(fingerprint) if previous.get(k) != fingerprint.get(k))
                raise ConfigMismatchError(
                    f"{self.path} holds results of another config (differs in: {', '.join(changed)}). "
                    "Its generations are not reused. Choose another logging.results_dir or "
                    "logging.experiment_name, or pass overwrite=true to discard them."
                )
            if previous != fingerprint:
                write_json(self.run_file, fingerprint)
            return True
        if overwrite:
            for kind in KINDS:
                for part in self.parts(kind):
                    part.unlink()
            for stale in (self.summary, self.manifest, *self.dir("scores").glob("per_problem*.jsonl")):
                stale.unlink(missing_ok=True)
        for kind in KINDS:
            self.dir(kind).mkdir(parents=True, exist_ok=True)
        write_json(self.run_file, fingerprint)
        return False

    def writer(self, kind: str, prefix: str = "") -> "PartWriter":
        """A writer of new part files `<kind>/<prefix>part-NNNNN.jsonl` in this folder."""
        return PartWriter(self.dir(kind), prefix + "part", on_close=self._note_part)

    def _note_part(self, path: Path, records: int) -> None:
        """Keep manifest.json's list of part files (name, records, bytes) up to date."""
        manifest = read_json(self.manifest) or {"layout": 2, "parts": {}}
        kind = path.parent.name
        entries = [e for e in manifest["parts"].get(kind, []) if e["file"] != path.name]
        entries.append({"file": path.name, "records": records, "bytes": path.stat().st_size})
        manifest["parts"][kind] = sorted(entries, key=lambda e: _part_order(Path(e["file"])))
        write_json(self.manifest, manifest)


class PartWriter:
    """Appends JSON records to part files: flushed per record, fsync'd at most once a
    second and on close, rotated past `max_bytes`. Never reopens an existing part."""

    def __init__(self, directory: Path, stem: str = "part", max_bytes: int = PART_BYTES,
                 on_close: Any = None) -> None:
        self.directory, self.stem, self.max_bytes, self.on_close = directory, stem, max_bytes, on_close
        self.directory.mkdir(parents=True, exist_ok=True)
        self.written = 0
        self._fh = None
        self._path: Path | None = None
        self._records = 0
        self._synced = 0.0

    def write(self, record: dict[str, Any]) -> None:
        if self._fh is None or self._fh.tell() >= self.max_bytes:
            self._rotate()
        self._fh.write(dumps(record) + "\n")
        self._fh.flush()
        self._records += 1
        self.written += 1
        if time.monotonic() - self._synced >= FSYNC_EVERY_S:
            self._sync()

    def _sync(self) -> None:
        os.fsync(self._fh.fileno())
        self._synced = time.monotonic()

    def _rotate(self) -> None:
        self._close_part()
        seq = 1 + max((_seq(p) for p in self.directory.glob(f"{self.stem}-*.jsonl")), default=-1)
        self._path = self.directory / f"{self.stem}-{seq:05d}.jsonl"
        self._fh = self._path.open("x", encoding="utf-8")
        self._records = 0

    def _close_part(self) -> None:
        if self._fh is None:
            return
        self._sync()
        self._fh.close()
        self._fh = None
        if self.on_close is not None:
            self.on_close(self._path, self._records)

    def close(self) -> None:
        self._close_part()

    def __enter__(self) -> "PartWriter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class KeySet:
    """A compact, sorted set of sample keys (8-byte hashes): resume and accounting look-ups
    over millions of samples without holding their ids."""

    def __init__(self, keys: Iterable[Key] = (), hashes: Iterable[int] = ()) -> None:
        import numpy as np

        self._np = np
        hashed = np.fromiter((key_hash(k) for k in keys), dtype=np.uint64)
        given = np.frombuffer(hashes, dtype=np.uint64) if isinstance(hashes, array) else np.fromiter(hashes, np.uint64)
        self._sorted = np.unique(np.concatenate([hashed, given]))

    def __len__(self) -> int:
        return len(self._sorted)

    def __contains__(self, key: Key) -> bool:
        if not len(self._sorted):
            return False
        h = self._np.uint64(key_hash(key))
        i = int(self._np.searchsorted(self._sorted, h))
        return i < len(self._sorted) and self._sorted[i] == h


def key_hash(key: Key) -> int:
    return int.from_bytes(hashlib.blake2b(f"{key[0]}\x00{key[1]}".encode(), digest_size=8).digest(), "little")


class UnreadableLines:
    """Lines of record files that are not JSON records (torn by a crash, corrupted), counted
    per file with their line numbers and, when the start of the line survived, their sample
    keys (`keys`), so that a run can do those samples again."""

    def __init__(self) -> None:
        self.lines: dict[Path, list[int]] = {}
        self.keys: dict[Path, list[Key]] = {}

    def add(self, path: Path, number: int, line: str) -> None:
        self.lines.setdefault(path, []).append(number)
        key = key_in(line)
        if key is not None:
            self.keys.setdefault(path, []).append(key)

    @property
    def total(self) -> int:
        return sum(map(len, self.lines.values()))

    def warn(self, logger: Any, root: Path, then: Callable[[Path], str]) -> None:
        """One warning per file: `generations/part-00000.jsonl: 1 unreadable line (2); ...`."""
        for path, numbers in self.lines.items():
            shown = ", ".join(map(str, numbers[:10])) + (", ..." if len(numbers) > 10 else "")
            name = path.relative_to(root) if path.is_relative_to(root) else path
            logger.warning("%s: %d unreadable line%s (%s); %s", name, len(numbers), "s" * (len(numbers) != 1), shown,
                           then(path))


_ID = re.compile(r'"id": ("(?:[^"\\]|\\.)*"|-?\d+)')
_SAMPLE = re.compile(r'"sample_idx": (\d+)')


def key_in(line: str) -> Key | None:
    """The sample key at the start of a torn record line (records begin with id and
    sample_idx), or None when too little of it survived."""
    found, index = _ID.search(line), _SAMPLE.search(line)
    if found is None or index is None:
        return None
    try:
        return (str(json.loads(found.group(1))), int(index.group(1)))
    except ValueError:
        return None


_WARNED: set[Path] = set()  # files a reader already warned about, in this process


def iter_records(run_dir: str | os.PathLike, kind: str,
                 unreadable: UnreadableLines | None = None) -> Iterator[dict[str, Any]]:
    """Records of a run folder's `generations`, `scores` or `failures`, streamed file by
    file (part files, or the single file of older folders). Unreadable lines are skipped and
    counted into `unreadable`; without it, each file with some is warned about once."""
    for path in RunFolder(run_dir).parts(kind):
        if path.name.startswith("per_problem"):
            continue
        if unreadable is not None:
            yield from read_jsonl(path, unreadable.add)
            continue
        mine = UnreadableLines()
        yield from read_jsonl(path, mine.add)
        if mine.lines and path not in _WARNED:
            _WARNED.add(path)
            mine.warn(logging.getLogger("skyeval"), Path(run_dir), lambda _: "skipped")


def read_jsonl(path: Path, on_unreadable: Callable[[Path, int, str], None] | None = None) -> Iterator[dict[str, Any]]:
    """Records of one JSONL file, streamed; a line that is not a JSON object (torn by a
    crash) is skipped, and told to `on_unreadable(path, line number, line)`."""
    if not path.exists():
        return
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError):  # bytes that are not UTF-8 are not a record either
                record = None
            if isinstance(record, dict):
                yield record
            elif on_unreadable is not None:
                on_unreadable(path, number, raw.decode("utf-8", "replace"))


def slurm_job() -> str | None:
    """This process's SLURM job id (`1234`, or `1234_5` for a task of an array), if any."""
    if os.environ.get("SLURM_ARRAY_JOB_ID"):
        return f"{os.environ['SLURM_ARRAY_JOB_ID']}_{os.environ.get('SLURM_ARRAY_TASK_ID')}"
    return os.environ.get("SLURM_JOB_ID")


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def write_json(path: Path, obj: Any) -> None:
    """Write JSON atomically (a temp file of this process, renamed into place)."""
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(obj, indent=2, ensure_ascii=False, default=jsonable) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def write_rows(rows: Iterable[dict[str, Any]], path: Path, format: str = "jsonl") -> Path:
    """Save rows as json (one list), jsonl or parquet. A jsonl file is replaced atomically
    and durably (written beside it, synced, renamed): a crash leaves the old or the new."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if format == "jsonl":
        tmp = path.with_suffix(".tmp")
        with tmp.open("w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(dumps(row) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    elif format == "json":
        write_json(path, list(rows))
    elif format == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(list(rows)), path)
    else:
        raise ValueError(f"unknown format {format!r}: use json, jsonl or parquet")
    return path


def content_hash(value: Any) -> str:
    """16 hex digits naming a JSON value (a rendered prompt, a gold): what a record was made
    from, so that a resume reuses it only for the same input."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=jsonable)
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def key_of(record: dict[str, Any]) -> Key:
    return (str(record["id"]), int(record["sample_idx"]))


def _seq(path: Path) -> int:
    try:
        return int(path.stem.rsplit("-", 1)[1])
    except (IndexError, ValueError):
        return -1


def _part_order(path: Path) -> tuple[str, int]:
    """Older single files (`scores.jsonl`) first, then parts by writer prefix and number."""
    if "part-" not in path.name:
        return ("", -1)
    return (path.name.rsplit("part-", 1)[0], _seq(path))


def dumps(record: Any) -> str:
    """A record as one JSON line (numpy values and other objects made JSON values)."""
    return json.dumps(record, ensure_ascii=False, default=jsonable)


def jsonable(value: Any) -> Any:
    """numpy scalars/arrays (from Ray Data rows) and other objects as JSON values."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "item"):
        return value.item()
    return str(value)


@dataclass(frozen=True)
class Selection:
    """The samples a run's summary counts: problems `ids` (None: every problem in the
    folder) and sample indices below `n` (None: every index).

    The one rule for what a folder's views read (docs/metrics.md): report, compare, the
    viewer, trackers, audit and curation read exactly this. The problems are the ids of
    scores/per_problem rows, which every scoring run rewrites for the problems it counts;
    n is the summary's sampling n. A folder may hold more (a larger earlier run's records,
    kept for resuming): views leave them out."""

    n: int | None = None
    ids: frozenset[str] | None = None

    @classmethod
    def of(cls, run_dir: str | os.PathLike, summary: dict[str, Any] | None = None) -> "Selection":
        """The selection of the run folder's summary.json (or of `summary`, already read).
        A folder without summary.json selects everything it holds."""
        path = Path(run_dir)
        if summary is None:
            summary = read_json(path / "summary.json") or {}
        n = ((summary.get("config") or {}).get("sampling_params") or {}).get("n")
        n = n if isinstance(n, int) and not isinstance(n, bool) else None
        ids = None
        if summary.get("stage") != "generate":  # only scoring stages write per-problem rows
            rows = list((path / "scores").glob("per_problem*.jsonl"))
            if rows:
                ids = frozenset(str(row["id"]) for file in rows for row in read_jsonl(file))
        return cls(n=n, ids=ids)

    def holds(self, record: dict[str, Any]) -> bool:
        """Whether a record (with "id" and "sample_idx") is one the summary counts."""
        return ((self.n is None or int(record.get("sample_idx") or 0) < self.n)
                and (self.ids is None or str(record.get("id")) in self.ids))

    def records(self, run_dir: str | os.PathLike, kind: str) -> Iterator[dict[str, Any]]:
        """The records of `kind` (generations, scores, failures) in this selection, streamed."""
        return (r for r in iter_records(run_dir, kind) if self.holds(r))
