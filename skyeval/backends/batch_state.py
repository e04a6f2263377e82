"""What `model_config=openai_batch` keeps on disk: each batch file, its ids and its state.

One folder per run (the run folder's `batches/`, one per shard: `batches/shard-00000-of-00002/`)
holds `state.json` and, per part (one batch input file and the batch made from it),
`NNNNN.input.jsonl` (the requests, as uploaded), `NNNNN.output.jsonl` and
`NNNNN.errors.jsonl` (as downloaded). `state.json` is rewritten (atomically) the moment a
file id or batch id exists, and whenever a poll changes a batch's state, so a run killed at
any point finds what it had submitted: nothing is uploaded or submitted twice, and nothing
downloaded is fetched twice.

A part goes `writing` (its file is being filled) -> `ready` (closed, not yet uploaded) ->
the API's statuses from `validating` on. `NNNNN.delivered.jsonl` lists the input lines whose
results were handed to a caller that records them (a run folder), or that failed, or that
were sent again in a newer part: a later run asking for one of those samples again
(`retry_failures=true`, or a lost record) sends it in a new batch instead of reading the old
answer; the other lines are picked up.

A line's `custom_id` names its problem and samples (`custom_id`, `parse_custom_id`); an
ended part's answers are found by it in the downloaded files (`AnswerIndex`).
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

from skyeval.results import read_json, write_json

STATE_FILE = "state.json"
TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})  # the API's final statuses
LOCAL = frozenset({"writing", "ready"})  # before the API knows the part
# The API's timestamps of a batch (unix seconds), kept as it reports them.
TIMES = ("created_at", "in_progress_at", "finalizing_at", "completed_at", "failed_at", "expired_at",
         "cancelling_at", "cancelled_at", "expires_at")


@dataclass
class BatchPart:
    """One batch input file and the batch made from it."""

    name: str  # "00001": the local files' stem
    endpoint: str  # "/v1/chat/completions" or "/v1/completions"
    status: str = "writing"
    requests: int = 0  # lines in the input file
    bytes: int = 0
    written_at: float = field(default_factory=time.time)
    file_id: str | None = None
    batch_id: str | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None
    request_counts: dict[str, int] | None = None  # {total, completed, failed}, as last polled
    usage: dict[str, Any] | None = None  # the API's token counts of the batch, when it reports them
    times: dict[str, int] = field(default_factory=dict)  # TIMES the API reported
    errors: list[dict[str, Any]] | None = None  # a failed batch's validation errors
    polled_at: float | None = None
    downloaded: bool = False  # output and error files are on disk
    delivered: int = 0  # input lines handed over (or sent again in a newer part)
    cancel_requested: bool = False
    resent: int = 0  # requests of this part sent again (expired or cancelled before an answer)

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    @property
    def done(self) -> bool:
        """Every line was handed over: nothing left to pick up."""
        return self.batch_id is not None and self.delivered >= self.requests

    def describe(self) -> dict[str, Any]:
        """The part as summary.json and `skyeval status` show it (times as ISO 8601 UTC)."""
        out = {"part": self.name, "batch_id": self.batch_id, "status": self.status, "endpoint": self.endpoint,
               "requests": self.requests, "request_counts": self.request_counts, "usage": self.usage,
               "input_file_id": self.file_id, "output_file_id": self.output_file_id,
               "error_file_id": self.error_file_id, "resent": self.resent,
               **{name: iso(value) for name, value in self.times.items()}}
        if self.errors:
            out["errors"] = self.errors
        return out

    def line(self) -> str:
        """One line for a person: `batch_abc (part 00001): in_progress, 120/500 done, 3 failed`."""
        counts = self.request_counts or {}
        done = counts.get("completed", 0) + counts.get("failed", 0)
        text = f"{self.batch_id or 'not submitted'} (part {self.name}, {self.requests} requests): {self.status}"
        if counts:
            text += f", {done}/{counts.get('total') or self.requests} done"
            if counts.get("failed"):
                text += f", {counts['failed']} failed"
        if self.resent:
            text += f", {self.resent} sent again in a newer batch"
        if self.polled_at is not None and not self.terminal:
            text += f" (as of {iso(self.polled_at)})"
        return text


class BatchState:
    """`state.json` of one batch folder: a token naming this run's files on the server, the
    parts, and the next part number (never reused)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder / STATE_FILE
        data = read_json(self.path) or {}
        self.token: str = data.get("token") or uuid.uuid4().hex[:12]
        self.next_part: int = data.get("next_part", 1)
        known = {f.name for f in fields(BatchPart)}
        self.parts: list[BatchPart] = [BatchPart(**{k: v for k, v in p.items() if k in known})
                                       for p in data.get("parts", [])]

    def save(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        write_json(self.path, {"token": self.token, "next_part": self.next_part,
                               "parts": [asdict(p) for p in self.parts]})

    def new_part(self, endpoint: str) -> BatchPart:
        part = BatchPart(name=f"{self.next_part:05d}", endpoint=endpoint)
        self.next_part += 1
        self.parts.append(part)
        return part

    def drop(self, part: BatchPart) -> None:
        """Forget a part the server never saw, and its local file."""
        self.parts.remove(part)
        self.file(part, "input").unlink(missing_ok=True)

    def file(self, part: BatchPart, kind: str) -> Path:
        """The local `input`, `output`, `errors` or `delivered` file of a part."""
        return self.folder / f"{part.name}.{kind}.jsonl"

    def upload_name(self, part: BatchPart) -> str:
        """The part's file name on the server: how an upload whose id was never recorded is found."""
        return f"skyeval-{self.token}-{part.name}.jsonl"


class AnswerIndex:
    """`custom_id` -> its line in a part's downloaded output or error file, read on demand
    (offsets only in memory)."""

    def __init__(self, state: BatchState, part: BatchPart) -> None:
        self.paths = [p for p in (state.file(part, "output"), state.file(part, "errors")) if p.exists()]
        self.offsets: dict[str, tuple[int, int]] = {}
        for k, path in enumerate(self.paths):
            with path.open("rb") as fh:
                offset = 0
                for raw in fh:
                    try:
                        cid = json.loads(raw).get("custom_id")
                    except (ValueError, AttributeError):
                        cid = None
                    if isinstance(cid, str):
                        self.offsets.setdefault(cid, (k, offset))
                    offset += len(raw)

    def get(self, cid: str) -> dict[str, Any] | None:
        where = self.offsets.get(cid)
        if where is None:
            return None
        with self.paths[where[0]].open("rb") as fh:
            fh.seek(where[1])
            return json.loads(fh.readline())


def update(part: BatchPart, batch: Any) -> bool:
    """Copy a Batch object's state into the part; whether anything changed."""
    before = (part.status, part.request_counts, part.output_file_id, part.error_file_id)
    part.batch_id = batch.id
    part.status = batch.status
    part.output_file_id, part.error_file_id = batch.output_file_id, batch.error_file_id
    part.request_counts = batch.request_counts.model_dump() if batch.request_counts is not None else None
    part.usage = batch.usage.model_dump() if getattr(batch, "usage", None) is not None else None
    part.times = {name: getattr(batch, name) for name in TIMES if getattr(batch, name, None) is not None}
    if batch.errors is not None and batch.errors.data:
        part.errors = [e.model_dump(exclude_none=True) for e in batch.errors.data]
    part.polled_at = time.time()
    return before != (part.status, part.request_counts, part.output_file_id, part.error_file_id)


def batch_errors(part: BatchPart) -> str:
    errors = part.errors or []
    shown = "; ".join(f"{e.get('code') or 'error'}{' (line ' + str(e['line']) + ')' if e.get('line') else ''}: "
                      f"{e.get('message')}" for e in errors[:3])
    return (shown + (f"; {len(errors) - 3} more" if len(errors) > 3 else "")) or "no reason given"


def custom_id(request_id: str, indices: list[int]) -> str:
    """`"p17#0-3"`, `"p17#2,5"`: the problem id and the sample indices a line asks for."""
    runs, start = [], indices[0]
    for prev, cur in zip(indices, [*indices[1:], None]):
        if cur != prev + 1:
            runs.append(str(start) if start == prev else f"{start}-{prev}")
            start = cur
    return f"{request_id}#{','.join(runs)}"


def parse_custom_id(value: str) -> tuple[str, list[int]] | None:
    """(problem id, sample indices) of a `custom_id` this backend wrote; None for another's."""
    pid, sep, spec = value.rpartition("#")
    if not sep:
        return None
    indices: list[int] = []
    try:
        for run in spec.split(","):
            first, _, last = run.partition("-")
            indices.extend(range(int(first), int(last or first) + 1))
    except ValueError:
        return None
    return (pid, indices) if indices else None


def read_lines(path: Path, json_type: type = dict) -> Iterator[Any]:
    """The JSON lines of a local batch file, streamed. An unreadable line (a torn last line)
    is an empty dict, so line numbers stay those of the file (`json_type=int`: skipped)."""
    if not path.exists():
        return
    with path.open("rb") as fh:
        for raw in fh:
            try:
                line = json.loads(raw)
            except ValueError:
                line = None
            if isinstance(line, json_type) and not isinstance(line, bool):
                yield line
            elif json_type is dict:
                yield {}


def iso(seconds: float | None) -> str | None:
    return None if seconds is None else datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="seconds")
