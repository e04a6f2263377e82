"""Small runs without Ray: `LocalDataset`, the part of the Ray Data API the Python API uses,
run in this process.

`Env.read_dataset()` returns one when the data is small and local (see `choose_engine`):
starting Ray costs seconds, reading and scoring a few hundred problems costs less. Blocks
are Arrow tables, built and converted as Ray builds and converts them, so both give the
same rows. It is lazy like a Ray Dataset (`limit`, `map_batches`, `filter` run nothing);
unlike one, it runs its chain once, at the first consumption, and keeps the result (the
data is small): `scored.mean("score")` then `env.save(scored, ...)` generates once.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any, Callable, Iterator

if TYPE_CHECKING:
    import pyarrow as pa

ENGINES = ("auto", "local", "ray")
ENGINE_ENV_VAR = "SKYEVAL_DATASET_ENGINE"
LOCAL_MAX_PROBLEMS = 5_000  # `auto` reads in this process up to this many problems
BLOCK_ROWS = 1024  # problems per block, as the Ray reader makes them


def choose_engine(engine: str | None) -> str:
    """"local" or "ray" (or "auto": decide by the data): `engine`, else $SKYEVAL_DATASET_ENGINE;
    `auto` is Ray when a cluster is named (RAY_ADDRESS) or Ray is already running here."""
    from skyeval.errors import ConfigError

    engine = engine or os.environ.get(ENGINE_ENV_VAR) or "auto"
    if engine not in ENGINES:
        raise ConfigError(f"unknown dataset engine {engine!r}: one of {', '.join(ENGINES)}")
    if engine == "auto" and (os.environ.get("RAY_ADDRESS") or _ray_running()):
        return "ray"
    return engine


def _ray_running() -> bool:
    ray = sys.modules.get("ray")
    return bool(ray is not None and getattr(ray, "is_initialized", lambda: False)())


def blocks_of(rows: list[dict[str, Any]], size: int = BLOCK_ROWS) -> list["pa.Table"]:
    import pyarrow as pa

    return [pa.Table.from_pylist(rows[start:start + size]) for start in range(0, len(rows), size)]


class LocalDataset:
    """A small Dataset in this process, with the Ray Data methods the Python API uses:
    `limit`, `map_batches`, `filter`, `select_columns`, `groupby(...).max/min/sum/mean/count/map_groups`,
    `take`, `take_all`, `count`, `sum`, `mean`, `min`, `max`, `iter_rows`,
    `iter_batches`, `to_pandas`, `materialize`, `columns`."""

    def __init__(self, source: Callable[[], list["pa.Table"]]) -> None:
        self._source = source
        self._blocks: list["pa.Table"] | None = None

    @classmethod
    def from_rows(cls, rows: list[dict[str, Any]]) -> "LocalDataset":
        return cls(lambda: blocks_of(rows))

    def _computed(self) -> list["pa.Table"]:
        if self._blocks is None:
            self._blocks = [block for block in self._source() if block.num_rows]
        return self._blocks

    def _then(self, step: Callable[[list["pa.Table"]], list["pa.Table"]]) -> "LocalDataset":
        return LocalDataset(lambda: step(self._computed()))

    # ---- transforms (lazy) -----------------------------------------------------------
    def limit(self, limit: int) -> "LocalDataset":
        def step(blocks: list["pa.Table"]) -> list["pa.Table"]:
            out, left = [], limit
            for block in blocks:
                if left <= 0:
                    break
                out.append(block.slice(0, left))
                left -= min(left, block.num_rows)
            return out

        return self._then(step)

    def map_batches(self, fn: Any, *, batch_size: int | None | str = "default", batch_format: str = "default",
                    fn_args: tuple = (), fn_kwargs: dict | None = None, fn_constructor_args: tuple = (),
                    fn_constructor_kwargs: dict | None = None, progress: str | None = None,
                    **ray_options: Any) -> "LocalDataset":
        """`fn` on batches of `batch_size` rows ("pyarrow", "pandas" or numpy batches); a
        class is built once with `fn_constructor_args`. Ray's scheduling options
        (`compute`, `concurrency`, `num_cpus` ...) have no meaning here and are ignored.
        `progress` names a bar shown on a terminal (stderr) while the step runs."""
        def step(blocks: list["pa.Table"]) -> list["pa.Table"]:
            call = fn(*fn_constructor_args, **(fn_constructor_kwargs or {})) if isinstance(fn, type) else fn
            size = 1024 if batch_size == "default" else batch_size
            out = []
            with progress_bar(progress, sum(block.num_rows for block in blocks)) as bar:
                for batch in _rebatch(blocks, size):
                    out.append(_to_arrow(call(_batch_as(batch, batch_format), *fn_args, **(fn_kwargs or {}))))
                    bar.update(batch.num_rows)
            return out

        return self._then(step)

    def filter(self, fn: Callable[[dict[str, Any]], bool]) -> "LocalDataset":
        import pyarrow as pa

        def step(blocks: list["pa.Table"]) -> list["pa.Table"]:
            out = []
            for block in blocks:
                mask = pa.array([bool(fn(row)) for row in block.to_pylist()], type=pa.bool_())
                out.append(block.filter(mask))
            return out

        return self._then(step)

    def select_columns(self, cols: list[str]) -> "LocalDataset":
        return self._then(lambda blocks: [block.select(cols) for block in blocks])

    def groupby(self, key: str) -> "LocalGroupedData":
        return LocalGroupedData(self, key)

    def materialize(self) -> "LocalDataset":
        self._computed()
        return self

    # ---- consumption -----------------------------------------------------------------
    def iter_batches(self, *, batch_size: int | None = 256, batch_format: str = "default", **ignored: Any) -> Iterator[Any]:
        for batch in _rebatch(self._computed(), batch_size):
            yield _batch_as(batch, batch_format)

    def iter_rows(self) -> Iterator[dict[str, Any]]:
        for block in self._computed():
            yield from block.to_pylist()

    def take(self, limit: int = 20) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for row in self.iter_rows():
            if len(out) >= limit:
                break
            out.append(row)
        return out

    def take_all(self) -> list[dict[str, Any]]:
        return list(self.iter_rows())

    def count(self) -> int:
        return sum(block.num_rows for block in self._computed())

    def columns(self) -> list[str]:
        blocks = self._computed()
        return list(dict.fromkeys(name for block in blocks for name in block.column_names))

    def to_pandas(self) -> Any:
        import pandas as pd

        return pd.DataFrame(self.take_all(), columns=self.columns() or None)

    def _values(self, on: str) -> list[Any]:
        if on not in self.columns():
            raise KeyError(f"no column {on!r} in this dataset (columns: {self.columns()})")
        return [row.get(on) for row in self.iter_rows() if row.get(on) is not None]

    def sum(self, on: str) -> Any:
        values = self._values(on)
        return sum(values) if values else None

    def mean(self, on: str) -> float | None:
        values = self._values(on)
        return sum(values) / len(values) if values else None

    def min(self, on: str) -> Any:
        values = self._values(on)
        return min(values) if values else None

    def max(self, on: str) -> Any:
        values = self._values(on)
        return max(values) if values else None

    def save_folder(self, path: Any, format: str) -> None:
        """`env.save` to a folder: the run-folder layout's part files, written here."""
        from skyeval.envs.saving import FOLDERS, check_empty, write_logs, write_parts

        check_empty(path)
        for folder in FOLDERS:
            (path / folder).mkdir(parents=True, exist_ok=True)
        write_logs(path, format, write_parts(path, iter(self._computed()), format))

    def __repr__(self) -> str:
        state = f"{self.count()} rows" if self._blocks is not None else "not run yet"
        return f"LocalDataset({state})"


class LocalGroupedData:
    """`ds.groupby(key)`: aggregates (`max`, `min`, `sum`, `mean`, `count`, nulls skipped as
    Ray skips them) and `map_groups`, groups in key order."""

    def __init__(self, ds: LocalDataset, key: str) -> None:
        self.ds, self.key = ds, key

    def _groups(self) -> list[tuple[Any, list[dict[str, Any]]]]:
        groups: dict[Any, list[dict[str, Any]]] = {}
        for row in self.ds.iter_rows():
            groups.setdefault(row[self.key], []).append(row)
        return sorted(groups.items(), key=lambda item: item[0])

    def _aggregate(self, name: str, on: str | None, reduce: Callable[[list[Any]], Any]) -> LocalDataset:
        def rows() -> list["pa.Table"]:
            out = []
            for value, group in self._groups():
                values = [row.get(on) for row in group if row.get(on) is not None] if on else group
                out.append({self.key: value, f"{name}({on or ''})": reduce(values) if values else None})
            return blocks_of(out)

        return LocalDataset(rows)

    def max(self, on: str) -> LocalDataset:
        return self._aggregate("max", on, max)

    def min(self, on: str) -> LocalDataset:
        return self._aggregate("min", on, min)

    def sum(self, on: str) -> LocalDataset:
        return self._aggregate("sum", on, sum)

    def mean(self, on: str) -> LocalDataset:
        return self._aggregate("mean", on, lambda values: sum(values) / len(values))

    def count(self) -> LocalDataset:
        return self._aggregate("count", None, len)

    def map_groups(self, fn: Callable[..., Any], *, batch_format: str = "default", **ignored: Any) -> LocalDataset:
        def rows() -> list["pa.Table"]:
            import pyarrow as pa

            return [_to_arrow(fn(_batch_as(pa.Table.from_pylist(group), batch_format))) for _, group in self._groups()]

        return LocalDataset(rows)


class _NoBar:
    def __enter__(self) -> "_NoBar":
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def update(self, count: int) -> None:
        pass

    def close(self) -> None:
        pass


def progress_bar(name: str | None, total: int | None, unit: str | None = None) -> Any:
    """A tqdm bar like the CLI's (`skyeval.run.recorder.Progress`) on a terminal (stderr),
    else nothing; a context manager with `update(count)`."""
    if name is None or not sys.stderr.isatty():
        return _NoBar()
    from tqdm import tqdm

    unit = unit or ("problem" if name == "generate" else "sample")
    return tqdm(total=total, desc=name, unit=unit, dynamic_ncols=True)


def _rebatch(blocks: list["pa.Table"], size: int | None) -> Iterator["pa.Table"]:
    if size is None:
        yield from blocks
        return
    for block in blocks:
        for start in range(0, block.num_rows, size):
            yield block.slice(start, size)


def _batch_as(batch: "pa.Table", batch_format: str) -> Any:
    if batch_format == "pyarrow":
        return batch
    if batch_format == "pandas":
        return batch.to_pandas()
    import numpy as np

    return {name: np.asarray(column.to_pylist(), dtype=object) if _nested(column) else column.to_numpy(zero_copy_only=False)
            for name, column in zip(batch.column_names, batch.columns)}


def _nested(column: Any) -> bool:
    import pyarrow.types as t

    return t.is_struct(column.type) or t.is_list(column.type) or t.is_map(column.type)


def _to_arrow(out: Any) -> "pa.Table":
    import pyarrow as pa

    if isinstance(out, pa.Table):
        return out
    if hasattr(out, "to_dict") and hasattr(out, "columns"):  # a pandas DataFrame
        return pa.Table.from_pandas(out, preserve_index=False)
    if isinstance(out, dict):
        return pa.Table.from_pydict(out)
    raise TypeError(f"map_batches: a batch function must return a dict of columns, a pyarrow Table or a "
                    f"pandas DataFrame, not {type(out).__name__}")
