"""Reading benchmark rows, lazily, from a local mirror folder or the Hugging Face hub.

Rows are streamed: JSONL (also .jsonl.gz) line by line, CSV row by row, parquet by
batches of its row groups, hub sets by batches of their memory-mapped Arrow table. JSON
lists and the one JSON member of a .zip are parsed whole (those files are small).

`RowSource.slices` cuts the rows into `RowSlice`s (contiguous runs of rows with the global
index of their first row) that can be read independently, which is how
`Env.read_dataset` reads in parallel Ray tasks and still gives `to_problem` each row's index.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Iterable, Iterator

from skyeval.errors import ConfigError, DataFileError, DataNotFoundError

if TYPE_CHECKING:
    import datasets

DATA_DIR_ENV = "SKYEVAL_DATA_DIR"
_BATCH_ROWS = 1024  # rows per parquet / Arrow batch turned into dicts at a time


def resolve_data_dir(data_dir: str | None) -> Path | None:
    """The `data_dir=` knob, else `$SKYEVAL_DATA_DIR`, else None (load from the hub)."""
    value = data_dir or os.environ.get(DATA_DIR_ENV)
    return Path(value).expanduser() if value else None


# ---- one file -------------------------------------------------------------------------
def read_records(path: Path) -> Iterator[dict[str, Any]]:
    """Rows of a .jsonl/.json/.csv/.parquet file (.jsonl/.json/.csv optionally .gz), or of
    the one .json/.jsonl member of a .zip, one at a time. The file is checked at once; it
    is read as the rows are consumed."""
    path = Path(path)
    if not path.exists():
        raise DataNotFoundError(f"dataset file not found: {path}")
    name = path.name[: -len(".gz")] if path.name.endswith(".gz") else path.name
    if not name.endswith((".jsonl", ".json", ".csv", ".parquet", ".zip")):
        raise ConfigError(f"unsupported dataset file type: {path} (use .jsonl, .json, .csv, .parquet, .zip)")
    return _records(path, name)


def _records(path: Path, name: str) -> Iterator[dict[str, Any]]:
    if name.endswith(".parquet"):
        yield from _parquet_rows(path)
    elif name.endswith(".zip"):
        with zipfile.ZipFile(path) as archive:
            members = [m for m in archive.namelist() if m.endswith((".json", ".jsonl"))]
            if len(members) != 1:
                raise ValueError(f"{path}: expected one .json/.jsonl member, found {members}")
            with archive.open(members[0]) as raw:
                yield from _text_rows(io.TextIOWrapper(raw, encoding="utf-8"), members[0], path)
    else:
        with _open_text(path) as fh:
            yield from _text_rows(fh, name, path)


def _open_text(path: Path) -> IO[str]:
    if path.name.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8", newline="")
    return open(path, encoding="utf-8", newline="")


def _text_rows(fh: IO[str], name: str, path: Path) -> Iterator[dict[str, Any]]:
    if name.endswith(".jsonl"):
        for number, line in enumerate(fh, 1):
            if line.strip():
                yield _json_line(line, path, f"line {number}")
    elif name.endswith(".json"):
        try:
            data = json.load(fh)
        except json.JSONDecodeError as err:
            raise DataFileError(f"unreadable dataset file {path}: {err}") from err
        yield from data if isinstance(data, list) else [data]
    else:  # .csv
        try:
            yield from csv.DictReader(fh)
        except csv.Error as err:
            raise DataFileError(f"unreadable dataset file {path}: {err}") from err


def check_lines(paths: Iterable[Path]) -> None:
    """Read every line of the JSONL files among `paths` once: the first that is not JSON is
    a DataFileError naming the file and the line number (before a run, not in its middle)."""
    for path in paths:
        if path.name.endswith((".jsonl", ".jsonl.gz")):
            with _open_text(path) as fh:
                for number, line in enumerate(fh, 1):
                    if line.strip():
                        _json_line(line, path, f"line {number}")


def _json_line(line: str | bytes, path: Path, where: str) -> dict[str, Any]:
    try:
        return json.loads(line)
    except json.JSONDecodeError as err:
        raise DataFileError(f"unreadable dataset file {path}, {where}: {err}") from err


def _parquet_rows(path: Path, row_groups: list[int] | None = None) -> Iterator[dict[str, Any]]:
    import pyarrow.parquet as pq

    with pq.ParquetFile(path) as parquet:
        for batch in parquet.iter_batches(batch_size=_BATCH_ROWS, row_groups=row_groups):
            yield from batch.to_pylist()


# ---- a benchmark's files, or its hub split --------------------------------------------
def local_paths(data_dir: Path, files: str | Iterable[str]) -> list[Path]:
    """The files matching one or more glob patterns under data_dir, in order; each
    pattern must match something."""
    paths: list[Path] = []
    for pattern in [files] if isinstance(files, str) else files:
        matches = sorted(data_dir.glob(pattern))
        if not matches:
            raise DataNotFoundError(f"no file matches {pattern!r} under {data_dir} (set {DATA_DIR_ENV} or data_dir=)")
        paths.extend(matches)
    return paths


def what_is_there(folder: Path, fields: Iterable[str] = (), shown: int = 5) -> str:
    """What a benchmark's folder in the data dir holds, for the error about its missing
    copy: its files and, when `fields` are given, those the first row of each file lacks."""
    if not folder.is_dir():
        return f"{folder} does not exist"
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    if not files:
        return f"{folder} is empty"
    described = []
    for path in files[:shown]:
        try:
            row = next(iter(read_records(path)), {})
        except (ConfigError, DataFileError, OSError, ValueError):
            row = None
        lacks = [f for f in fields if isinstance(row, dict) and f not in row]
        described.append(path.relative_to(folder).as_posix() + (f", whose rows lack {', '.join(lacks)}" if lacks else ""))
    more = f" and {len(files) - shown} more files" if len(files) > shown else ""
    return f"{folder} holds {', '.join(described)}{more}"


def read_local(data_dir: Path, files: str | Iterable[str]) -> Iterator[dict[str, Any]]:
    """Rows of one or more files (glob patterns allowed) under data_dir, one at a time,
    each with `_file` (the file's stem). Missing files raise at once."""
    return _tagged(local_paths(data_dir, files))


def _tagged(paths: list[Path]) -> Iterator[dict[str, Any]]:
    for path in paths:
        for row in read_records(path):
            yield dict(row, _file=path.stem)


def load_hub(hf_id: str, split: str, subset: str | None = None) -> "datasets.Dataset":
    """A hub dataset split, as `datasets` caches it: an Arrow table memory-mapped from disk.
    When the hub can't be reached (`HF_HUB_OFFLINE`, or no connection within a few
    seconds) only the local cache is read, so a missing copy fails at once instead of
    after the hub client's retries."""
    unreachable = hub_unreachable()
    if unreachable:
        _hub_offline()
    try:
        import datasets
    except ImportError as err:  # pragma: no cover - datasets is a core dependency
        from skyeval.errors import MissingDependencyError

        raise MissingDependencyError("loading from the hub needs `pip install datasets`") from err
    try:
        return datasets.load_dataset(hf_id, subset, split=split)
    except ConnectionError as err:  # offline, or the hub is down: the user can point to a local copy
        from skyeval.errors import DataNotFoundError

        why = f"{unreachable}, and it is not in the local cache" if unreachable else str(err)
        raise DataNotFoundError(f"cannot load {hf_id!r} from the Hugging Face hub ({why}); set "
                                f"SKYEVAL_DATA_DIR or data_dir= to a folder with a local copy (docs/benchmarks.md)") from None


def hub_unreachable(timeout_s: float = 3.0) -> str | None:
    """Why the Hugging Face hub can't be reached ("HF_HUB_OFFLINE is set", "no connection
    to huggingface.co:443 (...)"), or None when a connection opens within `timeout_s`."""
    import os
    import socket
    from urllib.parse import urlparse

    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        return "HF_HUB_OFFLINE is set"
    url = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    host, port = url.hostname or "huggingface.co", url.port or (80 if url.scheme == "http" else 443)
    try:
        socket.create_connection((host, port), timeout=timeout_s).close()
    except OSError as err:
        return f"no connection to {host}:{port} ({type(err).__name__}: {err})"
    return None


def _hub_offline() -> None:
    """Read the cache only: for this process (the `datasets` and `huggingface_hub` flags,
    read when they are imported) and the processes it starts."""
    import os
    import sys

    os.environ["HF_HUB_OFFLINE"] = os.environ["HF_DATASETS_OFFLINE"] = "1"
    for module, name in (("datasets.config", "HF_HUB_OFFLINE"), ("datasets.config", "HF_DATASETS_OFFLINE"),
                         ("huggingface_hub.constants", "HF_HUB_OFFLINE")):
        if module in sys.modules and hasattr(sys.modules[module], name):
            setattr(sys.modules[module], name, True)


def read_hub(hf_id: str, split: str, subset: str | None = None) -> Iterator[dict[str, Any]]:
    """Rows of a hub dataset split, one at a time (never the whole split in memory)."""
    return _hub_rows(load_hub(hf_id, split, subset), 0, None)


def _hub_rows(dataset: "datasets.Dataset", start: int, stop: int | None) -> Iterator[dict[str, Any]]:
    stop = len(dataset) if stop is None else stop
    arrow = dataset.with_format("arrow")
    for begin in range(start, stop, _BATCH_ROWS):
        yield from arrow[begin : min(begin + _BATCH_ROWS, stop)].to_pylist()


# ---- independent slices of the rows, for parallel reads --------------------------------
@dataclass(frozen=True)
class RowSlice:
    """`count` rows from global row index `start`: a byte range of a JSONL file (`begin`,
    `end`), row groups `begin..end-1` of a parquet file, rows `begin..end-1` of the hub
    split, or a whole file of another type (`kind="file"`)."""

    kind: str  # "jsonl" | "parquet" | "hub" | "file"
    start: int
    count: int
    path: str | None = None
    begin: int = 0
    end: int = 0


@dataclass
class RowSource:
    """Where an env's raw rows come from: local files, or a hub split."""

    paths: list[Path] | None = None
    hub: tuple[str, str, str | None] | None = None  # (hf_id, split, subset)

    @classmethod
    def of(cls, name: str, data_dir: str | None, local_files: str | list[str] | None,
           hf_id: str | None, split: str, subset: str | None) -> "RowSource":
        """The local mirror when a data dir is set (its files must exist), else the hub."""
        root = resolve_data_dir(data_dir)
        if root is not None:
            if not local_files:
                raise DataNotFoundError(f"env {name!r} has no local copy; unset {DATA_DIR_ENV} to use the hub")
            return cls(paths=local_paths(root, local_files))
        if not hf_id:
            raise ConfigError(f"env {name!r} has no hf_id; set data_dir= or {DATA_DIR_ENV} to local files")
        return cls(hub=(hf_id, split, subset))

    def rows(self, dataset: "datasets.Dataset | None" = None) -> Iterator[dict[str, Any]]:
        """Every raw row, one at a time (local rows carry `_file`)."""
        if self.paths is not None:
            return _tagged(self.paths)
        return _hub_rows(dataset if dataset is not None else load_hub(*self.hub), 0, None)

    def slices(self, rows_per_slice: int, dataset: "datasets.Dataset | None" = None) -> list[RowSlice]:
        """The rows cut into slices of about `rows_per_slice` rows. Parquet and hub slices
        come from metadata; JSONL byte ranges from one streaming pass that counts lines;
        other files are counted by reading them once (they are small) and are one slice."""
        if self.paths is None:
            total = len(dataset if dataset is not None else load_hub(*self.hub))
            return [RowSlice("hub", s, min(rows_per_slice, total - s), begin=s, end=min(s + rows_per_slice, total))
                    for s in range(0, total, rows_per_slice)]
        slices: list[RowSlice] = []
        start = 0
        for path in self.paths:
            if path.name.endswith(".jsonl"):
                pieces = _jsonl_slices(path, start, rows_per_slice)
            elif path.name.endswith(".parquet"):
                pieces = _parquet_slices(path, start, rows_per_slice)
            else:
                pieces = [RowSlice("file", start, sum(1 for _ in read_records(path)), str(path))]
            slices.extend(pieces)
            start += sum(p.count for p in pieces)
        return slices


def _jsonl_slices(path: Path, start: int, rows_per_slice: int) -> list[RowSlice]:
    slices, begin, offset, count = [], 0, 0, 0
    with open(path, "rb") as fh:
        for line in fh:
            offset += len(line)
            if line.strip():
                count += 1
                if count == rows_per_slice:
                    slices.append(RowSlice("jsonl", start, count, str(path), begin, offset))
                    start, begin, count = start + count, offset, 0
    if count:
        slices.append(RowSlice("jsonl", start, count, str(path), begin, offset))
    return slices


def _parquet_slices(path: Path, start: int, rows_per_slice: int) -> list[RowSlice]:
    import pyarrow.parquet as pq

    metadata = pq.read_metadata(path)
    slices, first, count = [], 0, 0
    for group in range(metadata.num_row_groups):
        count += metadata.row_group(group).num_rows
        if count >= rows_per_slice or group == metadata.num_row_groups - 1:
            slices.append(RowSlice("parquet", start, count, str(path), first, group + 1))
            start, first, count = start + count, group + 1, 0
    return slices


def read_slice(piece: RowSlice, dataset: "datasets.Dataset | None" = None) -> Iterator[dict[str, Any]]:
    """The raw rows of one slice (local rows carry `_file`, as `RowSource.rows` gives them)."""
    if piece.kind == "hub":
        yield from _hub_rows(dataset, piece.begin, piece.end)
        return
    path = Path(piece.path)
    if piece.kind == "jsonl":
        rows = _jsonl_range(path, piece.begin, piece.end)
    elif piece.kind == "parquet":
        rows = _parquet_rows(path, list(range(piece.begin, piece.end)))
    else:
        rows = read_records(path)
    for row in rows:
        yield dict(row, _file=path.stem)


def _jsonl_range(path: Path, begin: int, end: int) -> Iterator[dict[str, Any]]:
    with open(path, "rb") as fh:
        fh.seek(begin)
        offset = begin
        for line in fh:
            if offset >= end:
                return
            if line.strip():
                yield _json_line(line, path, f"byte {offset}")
            offset += len(line)
