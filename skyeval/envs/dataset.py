"""The Ray Data side of the Python API: `Env.read_dataset`, `generate` and `save`.

Everything here is lazy: building a Dataset runs nothing; rows flow in blocks when the
Dataset is consumed (`take`, `mean`, `groupby`, `env.save`), with Ray's backpressure
bounding what is in flight. Import this module only where Ray is wanted.

Functions here take an `Env` (`skyeval.envs.base`, which imports this module: the env is
passed in, never imported).

- `read_problems(env)`: a Ray Datasource whose read tasks each read a slice of the env's
  rows (JSONL byte ranges, parquet row groups, hub row ranges, or one small file; see
  `skyeval.envs.data.RowSlice`) and apply `to_problem`/`keep`, yielding bounded blocks.
  Ray's file readers (`read_json`, ...) are not used because they lose row positions and
  `to_problem(row, index)` needs each row's global index (many benchmarks' ids are it).
  Envs that override `load_rows` (a layout of their own: aime25's MathArena folders, the
  APPS folder layout) are read by one task streaming `env.load_rows()` in bounded blocks.
- `GenerateBatch`: the `map_batches` callable class that builds the backend once per
  actor from the model config and generates the samples of each batch of problems.
- `RunFolderSink`: a Ray Datasink writing rows as part files into generations/, scores/
  and failures/, with counts in logs.txt.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator

import ray.data
from ray.data.block import Block, BlockAccessor, BlockMetadata
from ray.data.datasource import Datasink, Datasource, ReadTask

from skyeval.envs.data import RowSlice, RowSource, load_hub, read_slice
from skyeval.errors import ConfigError
from skyeval.results import jsonable

if TYPE_CHECKING:
    import pyarrow as pa

ROWS_PER_SLICE = 20_000  # raw rows per read slice
SLICES_ROWS_PER_TASK = 50_000  # small slices (files) are grouped into tasks of about this many rows
BLOCK_ROWS = 1024  # problems per output block ...
BLOCK_BYTES = 8 << 20  # ... or about this many bytes of text, whichever comes first
FOLDERS = ("generations", "scores", "failures")
SCORE_COLUMNS = ("score", "score_error")


# ---- reading ---------------------------------------------------------------------------
def read_problems(env: Any) -> "ray.data.Dataset":
    """The env's problems (filtered by `selected`, not limited) as a lazy Dataset, in row order."""
    from skyeval.backends.ray_session import ensure_ray

    if env.own_layout:  # one streaming task
        source = ProblemSource(env, [None])
    else:
        rows = RowSource.of(env.name, env.data_dir, env.local_files, env.hf_id, env.split, env.hf_subset)
        dataset = load_hub(*rows.hub) if rows.hub else None
        source = ProblemSource(env, _group(rows.slices(ROWS_PER_SLICE, dataset)), dataset)
    ensure_ray()
    ds = ray.data.read_datasource(source, override_num_blocks=len(source.tasks))
    # `limit`, `take(k)` and the row order users see follow the file order
    ds.context.execution_options.preserve_order = True
    return ds


def _group(slices: list[RowSlice]) -> list[list[RowSlice]]:
    """Consecutive slices grouped into tasks of about SLICES_ROWS_PER_TASK rows (so 57 small
    MMLU files are one task, a 1M-row file is 50 tasks)."""
    tasks: list[list[RowSlice]] = [[]]
    rows = 0
    for piece in slices:
        if tasks[-1] and rows + piece.count > SLICES_ROWS_PER_TASK:
            tasks.append([])
            rows = 0
        tasks[-1].append(piece)
        rows += piece.count
    return tasks if tasks[0] else [[]]


class ProblemSource(Datasource):
    """Read tasks over row slices (or, with `[None]`, over `env.load_rows()`), each
    applying `to_problem` and `selected` (`keep`, the date window). Reads run on the
    driver's node, where the local mirror and the `datasets` cache are."""

    def __init__(self, env: Any, tasks: list[list[RowSlice] | None], dataset: Any = None) -> None:
        super().__init__()
        self.env, self.tasks, self.dataset = env, tasks, dataset

    @property
    def supports_distributed_reads(self) -> bool:
        return False

    def estimate_inmemory_data_size(self) -> int | None:
        return None

    def get_read_tasks(self, parallelism: int, per_task_row_limit: int | None = None,
                       data_context: Any = None) -> list[ReadTask]:
        return [
            ReadTask(_Read(self.env, slices, self.dataset),
                     BlockMetadata(num_rows=None, size_bytes=None, input_files=None, exec_stats=None),
                     per_task_row_limit=per_task_row_limit)
            for slices in self.tasks
        ]


class _Read:
    """One read task: raw rows with their global index -> problems -> bounded blocks."""

    def __init__(self, env: Any, slices: list[RowSlice] | None, dataset: Any) -> None:
        self.env, self.slices, self.dataset = env, slices, dataset

    def __call__(self) -> Iterator[Block]:
        return problem_blocks(self.env, self._indexed_rows())

    def _indexed_rows(self) -> Iterator[tuple[int, dict[str, Any]]]:
        if self.slices is None:
            yield from enumerate(self.env.load_rows())
            return
        for piece in self.slices:
            yield from enumerate(read_slice(piece, self.dataset), piece.start)


def problem_blocks(env: Any, indexed_rows: Iterable[tuple[int, dict[str, Any]]]) -> Iterator[Block]:
    """Kept problems in blocks of at most BLOCK_ROWS rows or about BLOCK_BYTES of text.
    A row `to_problem` can't read raises, naming its index (as `Env.iter_problems` does)."""
    from ray.data._internal.delegating_block_builder import DelegatingBlockBuilder

    builder, size = DelegatingBlockBuilder(), 0
    for index, row in indexed_rows:
        try:
            problem = env.to_problem(row, index)
        except Exception as err:  # noqa: BLE001 - reported with the row's index
            raise ValueError(f"env {env.name!r}: row {index} is malformed: {type(err).__name__}: {err}") from err
        if not env.selected(problem):
            continue
        builder.add(problem)
        size += sum(len(v) for v in problem.values() if isinstance(v, str)) + 64
        if builder.num_rows() >= BLOCK_ROWS or size >= BLOCK_BYTES:
            yield builder.build()
            builder, size = DelegatingBlockBuilder(), 0
    if builder.num_rows():
        yield builder.build()


# ---- generating ------------------------------------------------------------------------
class GenerateBatch:
    """`ds.map_batches(GenerateBatch, fn_constructor_args=(env, model, scaling, sampling))`:
    the backend is built once per actor from `model` (a model config such as
    `HTTPConfig`; a backend object is used as it is), and each batch of problems becomes
    one row per sample: the problem's fields, `prompt`, and `GenerationResult`'s fields
    (`sample_idx`, `generation`, `error`, `error_type`, `finish_reason`, `usage`). A
    problem whose prompt can't be built gets rows with `error` set, never an exception."""

    def __init__(self, env: Any, model: Any, scaling: Any, sampling: Any) -> None:
        self.env, self.sampling = env, sampling
        self.backend = model if hasattr(model, "generate") else model.build(scaling)

    def __call__(self, batch: "pa.Table") -> dict[str, list[Any]]:
        from skyeval.backends.base import GenerationResult

        problems, requests, rows = {}, [], []
        samples = list(range(self.sampling.n))
        for position, problem in enumerate(batch.to_pylist()):
            try:
                problem = self.env._templated(problem)
                request = self.env.request_for(problem, samples)
            except Exception as err:  # noqa: BLE001 - that problem's samples fail, the batch goes on
                rows.extend((position, {**problem, "prompt": problem.get("prompt"), **GenerationResult(
                    problem["id"], i, error=f"{type(err).__name__}: {err}", error_type=type(err).__name__).to_dict()})
                    for i in samples)
                continue
            problems[problem["id"]] = (position, problem)
            requests.append(request)
        for result in self.backend.generate(requests, self.sampling):
            position, problem = problems[result.id]
            rows.append((position, {**problem, **result.to_dict()}))
        rows.sort(key=lambda item: (item[0], item[1]["sample_idx"]))
        return _columns([row for _, row in rows])

    def __del__(self) -> None:
        close = getattr(getattr(self, "backend", None), "close", None)
        if close is not None:
            try:
                close()
            except Exception:  # noqa: BLE001 - the actor is going away anyway
                pass


def _columns(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Rows -> columns over the union of their keys (None where a row lacks one)."""
    keys = dict.fromkeys(k for row in rows for k in row)
    return {key: [row.get(key) for row in rows] for key in keys}


# ---- saving ----------------------------------------------------------------------------
class RunFolderSink(Datasink):
    """Writes each row to the run-folder layout, as part files `part-<task>.jsonl` (or
    `part-<task>-<block>.parquet`) under:

    - `generations/`: rows whose generation succeeded (without the score columns);
    - `scores/`: rows with a non-null `score` (scored datasets only);
    - `failures/`: rows whose generation failed (`error`) or whose score is null
      (`score_error`), plus `stage` ("generate" or "score").

    A scored row is in exactly one of scores/ or failures/. `logs.txt` gets the counts.
    Writes run on the driver's node (the folder is a local path)."""

    def __init__(self, path: Path, format: str) -> None:
        self.path, self.format = path, format
        self.counts: dict[str, int] = {}

    @property
    def supports_distributed_writes(self) -> bool:
        return False

    def on_write_start(self, schema: Any = None) -> None:
        for folder in FOLDERS:
            (self.path / folder).mkdir(parents=True, exist_ok=True)

    def write(self, blocks: Iterable[Block], ctx: Any) -> dict[str, int]:
        counts = dict.fromkeys(FOLDERS, 0)
        handles: dict[str, Any] = {}
        try:
            for number, block in enumerate(blocks):
                for folder, table in split_rows(BlockAccessor.for_block(block).to_arrow()).items():
                    if table.num_rows == 0:
                        continue
                    counts[folder] += table.num_rows
                    if self.format == "parquet":
                        import pyarrow.parquet as pq

                        pq.write_table(table, self.path / folder / f"part-{ctx.task_idx:05d}-{number:04d}.parquet")
                        continue
                    if folder not in handles:
                        handles[folder] = open(self.path / folder / f"part-{ctx.task_idx:05d}.jsonl", "w", encoding="utf-8")
                    handles[folder].writelines(
                        json.dumps(row, ensure_ascii=False, default=jsonable) + "\n" for row in table.to_pylist())
        finally:
            for handle in handles.values():
                handle.flush()
                os.fsync(handle.fileno())
                handle.close()
        return counts

    def on_write_complete(self, write_result: Any) -> None:
        self.counts = dict.fromkeys(FOLDERS, 0)
        for counts in write_result.write_returns:
            for folder, count in (counts or {}).items():
                self.counts[folder] += count
        lines = [f"env.save: {self.format} part files"]
        lines += [f"{folder}/: {self.counts[folder]} rows" for folder in FOLDERS]
        (self.path / "logs.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


def split_rows(table: "pa.Table") -> dict[str, "pa.Table"]:
    """A block's rows by folder (see `RunFolderSink`)."""
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


def check_format(format: str) -> None:
    if format not in ("json", "jsonl", "parquet"):
        raise ConfigError(f"unknown format {format!r}: use json, jsonl or parquet")
