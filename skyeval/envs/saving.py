"""`env.save`'s writers, for Ray Datasets and in-process ones alike (no Ray import here).

A path ending in `.jsonl` or `.parquet` is one file of every row, streamed from the
batches (`write_file`), that pandas and `datasets` read; any other path is the folder of
part files (`write_parts`: generations/, scores/, failures/; `skyeval.envs.dataset.RunFolderSink`
runs it in Ray). A suffix that contradicts
`format=` is a one-line ConfigError. Parquet batches may disagree on a column's type (a
column null in one block, text in the next): they are written as parts beside the target
first, then merged under their unified schema, so memory stays one batch."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from skyeval.errors import ConfigError
from skyeval.results import jsonable

if TYPE_CHECKING:
    import pyarrow as pa

FILE_SUFFIXES = {".jsonl": "jsonl", ".parquet": "parquet"}
FOLDERS = ("generations", "scores", "failures")
SCORE_COLUMNS = ("score", "score_error")
FORMATS = ("json", "jsonl", "parquet")


def save_target(path: str | os.PathLike, format: str | None) -> tuple[bool, str]:
    """(one file?, format) for `env.save(ds, path, format)`; ConfigError for a format that
    is unknown or contradicts the path's suffix."""
    if format is not None and format not in FORMATS:
        raise ConfigError(f"unknown format {format!r}: use json, jsonl or parquet")
    suffix = Path(path).suffix.lower()
    if suffix == ".json":
        raise ConfigError(f"env.save to {os.fspath(path)!r}: name a JSON Lines file .jsonl (one row a line), "
                          "or give a folder path for part files")
    own = FILE_SUFFIXES.get(suffix)
    if own is None:
        return False, format or "jsonl"
    if format is not None and (format == "parquet") != (own == "parquet"):
        raise ConfigError(f"env.save to {os.fspath(path)!r} with format={format!r}: the suffix says {own}; "
                          f"drop format= or name the file {Path(path).stem}.{'parquet' if format == 'parquet' else 'jsonl'}")
    return True, own


def write_file(batches: Iterable["pa.Table"], path: Path, format: str) -> int:
    """Write every row of `batches` to the one file `path` (replaced atomically); returns
    the row count."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    if format == "parquet":
        rows = _write_parquet(batches, path, partial)
    else:
        rows = 0
        with open(partial, "w", encoding="utf-8") as fh:
            for batch in batches:
                for row in batch.to_pylist():
                    fh.write(json.dumps(row, ensure_ascii=False, default=jsonable) + "\n")
                    rows += 1
    os.replace(partial, path)
    return rows


def _write_parquet(batches: Iterable["pa.Table"], path: Path, partial: Path) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    parts: list[Path] = []
    try:
        for number, batch in enumerate(batches):
            if batch.num_rows:
                part = path.with_name(f".{path.name}.part-{number:05d}")
                pq.write_table(batch, part)
                parts.append(part)
        schemas = [pq.read_schema(part) for part in parts]
        schema = pa.unify_schemas(schemas, promote_options="permissive") if schemas else pa.schema([])
        rows = 0
        with pq.ParquetWriter(partial, schema) as writer:
            for part in parts:
                table = pq.read_table(part)
                columns = [table[f.name].cast(f.type) if f.name in table.column_names
                           else pa.nulls(table.num_rows, f.type) for f in schema]
                writer.write_table(pa.Table.from_arrays(columns, schema=schema))
                rows += table.num_rows
                part.unlink()
        return rows
    finally:
        for part in parts:
            part.unlink(missing_ok=True)


def write_parts(path: Path, tables: Iterable["pa.Table"], format: str, task: int = 0) -> dict[str, int]:
    """Write tables' rows as part files of one write task under `path`:

    - `generations/`: rows whose generation succeeded (without the score columns);
    - `scores/`: rows with a non-null `score` (scored datasets only);
    - `failures/`: rows whose generation failed (`error`) or whose score is null
      (`score_error`), plus `stage` ("generate" or "score").

    A scored row is in exactly one of scores/ or failures/. Returns rows per folder."""
    counts = dict.fromkeys(FOLDERS, 0)
    handles: dict[str, Any] = {}
    try:
        for number, block in enumerate(tables):
            for folder, table in split_rows(block).items():
                if table.num_rows == 0:
                    continue
                counts[folder] += table.num_rows
                (path / folder).mkdir(parents=True, exist_ok=True)
                if format == "parquet":
                    import pyarrow.parquet as pq

                    pq.write_table(table, path / folder / f"part-{task:05d}-{number:04d}.parquet")
                    continue
                if folder not in handles:
                    handles[folder] = open(path / folder / f"part-{task:05d}.jsonl", "w", encoding="utf-8")
                handles[folder].writelines(
                    json.dumps(row, ensure_ascii=False, default=jsonable) + "\n" for row in table.to_pylist())
    finally:
        for handle in handles.values():
            handle.flush()
            os.fsync(handle.fileno())
            handle.close()
    return counts


def write_logs(path: Path, format: str, counts: dict[str, int]) -> None:
    lines = [f"env.save: {format} part files"] + [f"{folder}/: {counts.get(folder, 0)} rows" for folder in FOLDERS]
    path.mkdir(parents=True, exist_ok=True)
    (path / "logs.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


def split_rows(table: "pa.Table") -> dict[str, "pa.Table"]:
    """A block's rows by folder (see `write_parts`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    names = table.column_names
    false = pa.array([False] * table.num_rows)
    generation_failed = pc.is_valid(table["error"]) if "error" in names else false
    if "generation" in names:
        generation_failed = pc.or_(generation_failed, pc.is_null(table["generation"]))
    out = {"generations": table.filter(pc.invert(generation_failed)).drop_columns(
        [c for c in SCORE_COLUMNS if c in names])}
    if "score" in names:
        score_failed = pc.or_(generation_failed, pc.is_null(table["score"]))
        out["scores"] = table.filter(pc.invert(score_failed))
    else:
        score_failed = generation_failed
    failures = table.filter(score_failed)
    stages = pc.if_else(generation_failed.filter(score_failed), "generate", "score")
    out["failures"] = failures.append_column("stage", stages)
    return out


def check_empty(path: Path) -> None:
    """Refuse a folder that already holds saved rows: one save per folder keeps "each row
    in exactly one of scores/ or failures/" true."""
    from skyeval.errors import RunFolderError

    used = [f for f in FOLDERS if (path / f).is_dir() and any((path / f).iterdir())]
    if used:
        raise RunFolderError(f"{path} already holds saved rows (in {', '.join(used)}/); save into a new folder")
