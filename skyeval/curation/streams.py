"""Curation inputs and outputs as streams: a run folder, JSONL or Parquet read in chunks,
rows written as they come (never the whole input in memory)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from skyeval.curation.conversations import EmptyRowError
from skyeval.errors import DataNotFoundError
from skyeval.results import RunFolder, dumps

FORMATS = ("jsonl", "parquet")


def read_chunks(source: str | os.PathLike, chunk_rows: int = 2000) -> Iterator[list[Any]]:
    """Lists of up to `chunk_rows` rows: JSON lines (str) for JSONL files and run folders
    (their generations/ part files), dicts for Parquet."""
    path = Path(source)
    if path.is_dir():
        files = RunFolder(path).parts("generations")
        if not files:
            raise DataNotFoundError(f"{path} is neither a JSONL/Parquet file nor a run folder with generations/")
    elif path.exists():
        files = [path]
    else:
        raise DataNotFoundError(f"no such input: {path}")
    chunk: list[Any] = []
    for file in files:
        for row in _rows(file, chunk_rows):
            chunk.append(row)
            if len(chunk) >= chunk_rows:
                yield chunk
                chunk = []
    if chunk:
        yield chunk


def _rows(path: Path, batch: int) -> Iterator[Any]:
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        for record_batch in pq.ParquetFile(path).iter_batches(batch_size=batch):
            yield from record_batch.to_pylist()
        return
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield line if line.endswith("\n") else line + "\n"


def map_chunks(fn: Callable[..., Any], chunks: Iterable[list[Any]], *args: Any, workers: int = 0,
               initializer: Callable[..., None] | None = None, initargs: tuple = ()) -> Iterator[tuple[list[Any], Any]]:
    """(chunk, `fn(chunk, *args)`) in input order. `workers` processes work in parallel (0: one
    per core; 1: in this process); at most 2 chunks per worker are in flight. The workers
    never run the caller's main module (`skyeval.scorers.workers`): `fn` and `initializer`
    may be defined there (a script, a notebook) or in a module, and must be picklable. `fn`
    raising is re-raised here (an `EmptyRowError` with the row's position in the whole
    input); a worker that dies is an InfrastructureError."""
    workers = workers or os.cpu_count() or 1
    start = 0  # rows before the chunk
    if workers == 1:
        if initializer is not None:
            initializer(*initargs)
        for chunk in chunks:
            try:
                yield chunk, fn(chunk, *args)
            except EmptyRowError as err:
                raise err.at(start) from None
            start += len(chunk)
        return
    import queue
    import threading
    from collections import deque

    from skyeval.errors import InfrastructureError
    from skyeval.scorers.workers import Worker

    def feed(worker: Worker, outbox: queue.SimpleQueue) -> None:
        """Send a worker its chunks from a thread of its own: a worker sending a large answer
        while this process sends it a large chunk would otherwise wait on each other."""
        while True:
            chunk = outbox.get()
            try:
                worker.conn.send(chunk)
            except OSError:
                return  # the worker is gone: its answer says so
            if chunk is None:
                return

    pool: list[Worker] = []
    outboxes: list[queue.SimpleQueue] = []
    senders: list[threading.Thread] = []
    try:
        pool = [Worker(_map_worker, fn, args, initializer, initargs, name="skyeval-chunk-map") for _ in range(workers)]
        for worker in pool:
            worker.started()
            outboxes.append(queue.SimpleQueue())
            senders.append(threading.Thread(target=feed, args=(worker, outboxes[-1]), daemon=True,
                                            name="skyeval-chunk-feed"))
            senders[-1].start()
        pending: deque = deque()

        def answer() -> tuple[list[Any], Any]:
            chunk, worker, first = pending.popleft()
            try:
                ok, value = worker.conn.recv()
            except (EOFError, OSError):
                raise InfrastructureError(f"a chunk worker died (exit code {worker.process.wait()})") from None
            if not ok:
                raise value.at(first) if isinstance(value, EmptyRowError) else value
            return chunk, value

        for number, chunk in enumerate(chunks):
            worker = pool[number % workers]  # round robin: a worker's answers come back in its order
            outboxes[number % workers].put(chunk)
            pending.append((chunk, worker, start))
            start += len(chunk)
            if len(pending) >= 2 * workers:
                yield answer()
        while pending:
            yield answer()
    finally:
        for outbox in outboxes:
            outbox.put(None)
        for sender in senders:
            sender.join(5.0)
        for worker in pool:
            if not worker.join(5.0):
                worker.terminate()
            worker.conn.close()


def _map_worker(conn: Any, fn: Callable[..., Any], args: tuple, initializer: Callable[..., None] | None,
                initargs: tuple) -> None:
    if initializer is not None:
        initializer(*initargs)
    while (chunk := conn.recv()) is not None:
        try:
            reply = (True, fn(chunk, *args))
        except Exception as err:  # noqa: BLE001 - raised again in the parent
            reply = (False, err)
        try:
            conn.send(reply)
        except Exception as err:  # noqa: BLE001 - an unpicklable result or exception
            conn.send((False, RuntimeError(f"a chunk worker could not send its answer: {err!r}")))


def as_dict(row: Any) -> dict[str, Any]:
    return json.loads(row) if isinstance(row, str) else row


class RowWriter:
    """Append rows to a JSONL or Parquet file as they come; a JSONL row given as its JSON
    line is written unchanged. Parquet row groups are written per `write_many` call."""

    def __init__(self, path: Path, format: str = "jsonl") -> None:
        if format not in FORMATS:
            raise ValueError(f"unknown format {format!r}: one of {', '.join(FORMATS)}")
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path, self.format, self.rows = path, format, 0
        self._fh = path.open("w", encoding="utf-8") if format == "jsonl" else None
        self._parquet: Any = None

    def write_many(self, rows: list[Any]) -> None:
        if not rows:
            return
        self.rows += len(rows)
        if self._fh is not None:
            self._fh.write("".join(r if isinstance(r, str) else dumps(r) + "\n" for r in rows))
            return
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pylist([as_dict(r) for r in rows])
        if self._parquet is None:
            self._parquet = pq.ParquetWriter(self.path, table.schema)
        self._parquet.write_table(table.cast(self._parquet.schema))

    def close(self) -> None:
        if self._fh is not None:
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()
        elif self._parquet is not None:
            self._parquet.close()
        else:  # an empty parquet output still exists
            import pyarrow as pa
            import pyarrow.parquet as pq

            pq.write_table(pa.table({}), self.path)

    def __enter__(self) -> "RowWriter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
