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
- `GenerateBatch` (`skyeval.envs.batches`, shared with the in-process Dataset): the
  `map_batches` callable class that builds the backend once per actor from the model
  config and generates the samples of each batch of problems.
- `RunFolderSink`: a Ray Datasink writing rows as part files into generations/, scores/
  and failures/, with counts in logs.txt.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Iterator

import ray.data
from ray.data.block import Block, BlockAccessor, BlockMetadata
from ray.data.datasource import Datasink, Datasource, ReadTask

from skyeval.envs.data import RowSlice, RowSource, load_hub, read_slice
from skyeval.envs.saving import FOLDERS, write_logs, write_parts

ROWS_PER_SLICE = 20_000  # raw rows per read slice
SLICES_ROWS_PER_TASK = 50_000  # small slices (files) are grouped into tasks of about this many rows
BLOCK_ROWS = 1024  # problems per output block ...
BLOCK_BYTES = 8 << 20  # ... or about this many bytes of text, whichever comes first


# ---- reading ---------------------------------------------------------------------------
def read_problems(env: Any) -> "ray.data.Dataset":
    """The env's problems (filtered by `selected`, not limited) as a lazy Dataset, in row order."""
    from skyeval.backends.ray_session import ensure_ray

    if env.own_layout:  # one streaming task
        source = ProblemSource(env, [None])
    else:
        rows = env.row_source()
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


# ---- saving ----------------------------------------------------------------------------
class RunFolderSink(Datasink):
    """Writes each row to the run-folder layout (`skyeval.envs.saving.write_parts`:
    generations/, scores/, failures/ and logs.txt), as part files `part-<task>.jsonl` (or
    `part-<task>-<block>.parquet`). Writes run on the driver's node (the folder is a
    local path)."""

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
        return write_parts(self.path, (BlockAccessor.for_block(b).to_arrow() for b in blocks), self.format, ctx.task_idx)

    def on_write_complete(self, write_result: Any) -> None:
        self.counts = dict.fromkeys(FOLDERS, 0)
        for counts in write_result.write_returns:
            for folder, count in (counts or {}).items():
                self.counts[folder] += count
        write_logs(self.path, self.format, self.counts)
