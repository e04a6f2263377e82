"""The run folder: generations/, scores/, failures/, summary.json, config.yaml, logs.txt.

JSONL files are appended one flushed line per sample, so a crash loses at most the line
being written; readers skip a torn final line. Files that are derived in full (scores,
the final failures) are replaced atomically.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable, Iterator

from skyeval.errors import RunFolderError

Key = tuple[str, int]  # (problem id, sample index)

RUN_FILE = "run.json"  # fingerprint of the config the folder belongs to


class ConfigMismatchError(RunFolderError):
    """The run folder holds results of a different config."""


class RunFolder:
    """Paths and record files of one run."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.generations = self.path / "generations" / "generations.jsonl"
        self.scores = self.path / "scores" / "scores.jsonl"
        self.per_problem = self.path / "scores" / "per_problem.jsonl"
        self.failures = self.path / "failures" / "failures.jsonl"
        self.summary = self.path / "summary.json"
        self.config = self.path / "config.yaml"
        self.logs = self.path / "logs.txt"

    def create(self) -> "RunFolder":
        for sub in ("generations", "scores", "failures"):
            (self.path / sub).mkdir(parents=True, exist_ok=True)
        return self

    def claim(self, fingerprint: dict[str, Any], overwrite: bool = False) -> bool:
        """Bind the folder to a config fingerprint. Returns True when resuming earlier work;
        raises ConfigMismatchError when the folder belongs to another config."""
        run_file = self.path / RUN_FILE
        if run_file.exists() and not overwrite:
            previous = json.loads(run_file.read_text())
            if previous != fingerprint:
                changed = sorted(k for k in set(previous) | set(fingerprint) if previous.get(k) != fingerprint.get(k))
                raise ConfigMismatchError(
                    f"{self.path} holds results of another config (differs in: {', '.join(changed)}). "
                    "Its generations are not reused. Choose another logging.results_dir or "
                    "logging.experiment_name, or pass overwrite=true to discard them."
                )
            return True
        if overwrite:
            for path in (self.generations, self.scores, self.per_problem, self.failures, self.summary):
                path.unlink(missing_ok=True)
        self.create()
        write_json(run_file, fingerprint)
        return False


def append_jsonl(path: Path, records: Iterable[dict[str, Any]]) -> None:
    """Append records and flush them to disk before returning."""
    with path.open("a", encoding="utf-8") as fh:
        for record in records:
            fh.write(json.dumps(record, ensure_ascii=False, default=_jsonable) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Records of a JSONL file; a torn last line (from a crash) is skipped."""
    if not path.exists():
        return []
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return records


def iter_records(run_dir: str | os.PathLike, kind: str) -> Iterator[dict[str, Any]]:
    """Records of a run folder's `generations`, `scores` or `failures`, streamed file by
    file (part files, or the single file of older folders); torn lines are skipped."""
    for path in sorted((Path(run_dir) / kind).glob("*.jsonl")):
        if path.name == "per_problem.jsonl" or path.name.startswith("per_problem"):
            continue
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                try:
                    yield json.loads(line)
                except json.JSONDecodeError:
                    continue


def replace_jsonl(path: Path, records: Iterable[dict[str, Any]]) -> None:
    """Write a whole JSONL file atomically."""
    tmp = path.with_suffix(".tmp")
    tmp.unlink(missing_ok=True)
    append_jsonl(tmp, records)
    os.replace(tmp, path)


def write_json(path: Path, obj: Any) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(obj, indent=2, ensure_ascii=False, default=_jsonable) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def write_rows(rows: list[dict[str, Any]], path: Path, format: str = "jsonl") -> Path:
    """Save rows as json (one list), jsonl or parquet."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if format == "jsonl":
        replace_jsonl(path, rows)
    elif format == "json":
        write_json(path, rows)
    elif format == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(rows), path)
    else:
        raise ValueError(f"unknown format {format!r}: use json, jsonl or parquet")
    return path


def key_of(record: dict[str, Any]) -> Key:
    return (str(record["id"]), int(record["sample_idx"]))


def _jsonable(value: Any) -> Any:
    """numpy scalars/arrays (from Ray Data rows) and other objects as JSON values."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "item"):
        return value.item()
    return str(value)
