"""Reading benchmark rows from a local mirror folder or the Hugging Face hub."""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import zipfile
from pathlib import Path
from typing import Any, Iterable

DATA_DIR_ENV = "SKYEVAL_DATA_DIR"


def resolve_data_dir(data_dir: str | None) -> Path | None:
    """The `data_dir=` knob, else `$SKYEVAL_DATA_DIR`, else None (load from the hub)."""
    value = data_dir or os.environ.get(DATA_DIR_ENV)
    return Path(value).expanduser() if value else None


def read_records(path: Path) -> list[dict[str, Any]]:
    """Rows of a .jsonl/.json/.csv file, optionally .gz, or of the one JSON file in a .zip."""
    if not path.exists():
        raise FileNotFoundError(f"dataset file not found: {path}")
    name = path.name
    if name.endswith(".zip"):
        with zipfile.ZipFile(path) as archive:
            members = [m for m in archive.namelist() if m.endswith((".json", ".jsonl"))]
            if len(members) != 1:
                raise ValueError(f"{path}: expected one .json/.jsonl member, found {members}")
            return _parse(archive.read(members[0]).decode("utf-8"), members[0], path)
    raw = path.read_bytes()
    if name.endswith(".gz"):
        raw, name = gzip.decompress(raw), name[: -len(".gz")]
    return _parse(raw.decode("utf-8"), name, path)


def _parse(text: str, name: str, path: Path) -> list[dict[str, Any]]:
    try:
        if name.endswith(".jsonl"):
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        if name.endswith(".json"):
            data = json.loads(text)
            return data if isinstance(data, list) else [data]
        if name.endswith(".csv"):
            return list(csv.DictReader(io.StringIO(text)))
    except (json.JSONDecodeError, csv.Error) as err:
        raise ValueError(f"unreadable dataset file {path}: {err}") from err
    raise ValueError(f"unsupported dataset file type: {path}")


def read_local(data_dir: Path, files: str | Iterable[str]) -> list[dict[str, Any]]:
    """Concatenated rows of one or more files (glob patterns allowed) under data_dir."""
    rows: list[dict[str, Any]] = []
    for pattern in [files] if isinstance(files, str) else files:
        matches = sorted(data_dir.glob(pattern))
        if not matches:
            raise FileNotFoundError(f"no file matches {pattern!r} under {data_dir} (set {DATA_DIR_ENV} or data_dir=)")
        for match in matches:
            rows.extend(dict(r, _file=match.stem) for r in read_records(match))
    return rows


def read_hub(hf_id: str, split: str, subset: str | None = None) -> list[dict[str, Any]]:
    """Rows of a Hugging Face hub dataset split."""
    try:
        import datasets
    except ImportError as err:  # pragma: no cover - datasets is a core dependency
        raise ImportError("loading from the hub needs `pip install datasets`") from err
    return list(datasets.load_dataset(hf_id, subset, split=split))
