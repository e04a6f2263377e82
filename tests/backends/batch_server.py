"""A loopback server speaking OpenAI's Batch and Files APIs: the test double of the real service.

`BatchServer` extends `FaultServer` (tests/backends/fault_server.py): each line of a batch is
answered as that server answers `/v1/chat/completions` or `/v1/completions` (its
`answer_template`, `answer_table`, reasoning settings, `fail_fraction` and `reject_params`
apply), but through these endpoints, shaped as the API reference and the openai SDK's types
(`openai.types.Batch`, `FileObject`, `BatchRequestCounts`) say:

- ``POST /v1/files`` (multipart: ``file``, ``purpose``) -> a File object (``id``, ``object:
  "file"``, ``bytes``, ``created_at``, ``filename``, ``purpose``, ``status``, ``expires_at``);
  ``GET /v1/files`` (``purpose``, ``limit``, ``after``, ``order``: a cursor page with
  ``data``, ``first_id``, ``last_id``, ``has_more``), ``GET /v1/files/{id}``,
  ``GET /v1/files/{id}/content`` (the bytes), ``DELETE /v1/files/{id}``.
- ``POST /v1/batches`` (``input_file_id``, ``endpoint``, ``completion_window: "24h"``,
  ``metadata``) -> a Batch in ``validating``; ``GET /v1/batches/{id}``; ``GET /v1/batches``
  (newest first; ``after``, ``limit`` up to 100); ``POST /v1/batches/{id}/cancel``.
- Status changes: ``validating`` -> ``in_progress`` (or ``failed``, with ``errors.data``:
  ``code``, ``message``, ``line``, ``param``) -> ``finalizing`` -> ``completed``; ``expired``;
  ``cancelling`` -> ``cancelled``. Each sets its ``*_at`` time; ``request_counts`` (``total``,
  ``completed``, ``failed``) grows as lines are answered; an ended batch reports ``usage``
  (``input_tokens``, ``output_tokens``, ``total_tokens`` and their details).
- Output file (purpose ``batch_output``): one line per answered request, ``{"id",
  "custom_id", "response": {"status_code": 200, "request_id", "body"}, "error": null}``,
  shuffled (the API promises no order). Error file: requests answered with another status
  code (``response.body`` holds the API's ``{"error": {...}}``), and requests that got no
  answer: ``"response": null, "error": {"code": "batch_expired" | "batch_cancelled" |
  "request_timeout", "message"}``.
- Validation (what the reference requires of the input file: JSON lines with a unique
  ``custom_id``, ``method: "POST"``, ``url`` equal to the batch's endpoint, a ``body`` with
  one ``model`` for the whole file, at most 50,000 lines and 200 MB). The error codes of
  validation, and 409 for cancelling an ended batch, are this server's choices: the reference
  does not name them.

Time is lazy: a batch moves on when it is read, after the `BatchSettings` durations. `hold`
keeps new batches in ``validating`` until released; `expire_after=K` expires a batch after K
answers; `max_enqueued_requests` fails a batch that would queue more (code
``token_limit_exceeded``, as the service's enqueued-token limit does). Every call is logged in
`calls` as ``(method, path)``.

    with BatchServer(answer_table={...}, batch={"request_s": 0.01}) as server:
        client = OpenAI(base_url=server.url, api_key="EMPTY")

or ``python tests/backends/batch_server.py --port 0`` (prints ``READY <url>``, stops on SIGTERM).
"""

from __future__ import annotations

import argparse
import email.parser
import email.policy
import json
import random
import signal
import threading
import time
from dataclasses import dataclass, field, fields
from typing import Any
from urllib.parse import parse_qs, urlsplit

try:
    from tests.backends.fault_server import FaultServer, _digest, _error, _fraction, _Handler, _prompt_text
except ModuleNotFoundError:  # run as a script: python tests/backends/batch_server.py
    from fault_server import FaultServer, _digest, _error, _fraction, _Handler, _prompt_text

ENDPOINTS = ("/v1/chat/completions", "/v1/completions")
MAX_LINES, MAX_BYTES = 50_000, 200 * 2**20
FILE_TTL_S = 30 * 24 * 3600  # files of purpose batch expire after 30 days
WINDOW_S = 24 * 3600
QUEUED = ("validating", "in_progress", "finalizing")


@dataclass
class BatchSettings:
    """How batches move on (seconds) and which faults they show."""

    validate_s: float = 0.0
    request_s: float = 0.0  # per request, one after another, while in_progress
    finalize_s: float = 0.0
    cancel_s: float = 0.0
    hold: bool = False  # new batches stay in validating until released (`BatchServer.release`)
    expire_after: int | None = None  # answers before a batch expires
    shuffle: bool = True  # output lines in another order than the input
    error_match: str | None = None  # prompts containing it get `error: request_timeout` (no response)
    max_enqueued_requests: int | None = None  # more queued than this: the batch fails (token_limit_exceeded)


@dataclass
class _Batch:
    obj: dict[str, Any]
    lines: list[dict[str, Any]] = field(default_factory=list)
    answers: list[dict[str, Any]] = field(default_factory=list)  # output/error records, in answer order
    since: float = 0.0  # monotonic time the current status began
    held: bool = False  # stays in validating until released


class BatchServer(FaultServer):
    """The Batch and Files APIs over FaultServer's completions; `start()`/`close()` or a context manager."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, log_path: str | None = None,
                 batch: dict[str, Any] | None = None, **settings: Any) -> None:
        super().__init__(host, port, log_path, **settings)
        self.batch = BatchSettings()
        self.configure_batch(**(batch or {}))
        self._httpd.RequestHandlerClass = _BatchHandler
        self.files: dict[str, dict[str, Any]] = {}
        self.contents: dict[str, bytes] = {}
        self.batches: dict[str, _Batch] = {}
        self.calls: list[tuple[str, str]] = []
        self._serial = 0
        self._api_lock = threading.RLock()

    def configure_batch(self, **changes: Any) -> None:
        known = {f.name for f in fields(BatchSettings)}
        unknown = set(changes) - known
        if unknown:
            raise ValueError(f"unknown batch settings {sorted(unknown)}; known: {sorted(known)}")
        for name, value in changes.items():
            setattr(self.batch, name, value)

    def release(self, batch_id: str | None = None) -> None:
        """Let one held batch go on (from now), or every batch and those to come."""
        with self._api_lock:
            if batch_id is None:
                self.batch.hold = False
            for b in self.batches.values():
                if b.held and batch_id in (None, b.obj["id"]):
                    b.held, b.since = False, time.monotonic()

    def count(self, method: str, prefix: str) -> int:
        """Calls of `method` whose path starts with `prefix` (e.g. POST /v1/files)."""
        return sum(1 for m, p in list(self.calls) if m == method and p.startswith(prefix))

    # -- the API --------------------------------------------------------------------

    def _new_id(self, prefix: str) -> str:
        self._serial += 1
        return f"{prefix}{self._serial:06d}{_digest([prefix, self._serial, id(self)])[:8]}"

    def upload(self, filename: str, purpose: str, content: bytes) -> tuple[int, dict[str, Any]]:
        if purpose not in ("batch", "fine-tune", "assistants", "vision", "user_data", "evals"):
            return 400, _error(f"Invalid purpose {purpose!r}", param="purpose")
        with self._api_lock:
            return 200, self._store(filename, purpose, content)

    def _store(self, filename: str, purpose: str, content: bytes) -> dict[str, Any]:
        now = int(time.time())
        obj = {"id": self._new_id("file-"), "object": "file", "bytes": len(content), "created_at": now,
               "filename": filename, "purpose": purpose, "status": "processed", "status_details": None,
               "expires_at": now + FILE_TTL_S if purpose.startswith("batch") else None}
        self.files[obj["id"]] = obj
        self.contents[obj["id"]] = content
        return obj

    def list_files(self, query: dict[str, str]) -> tuple[int, dict[str, Any]]:
        with self._api_lock:
            items = [f for f in self.files.values() if "purpose" not in query or f["purpose"] == query["purpose"]]
        items.sort(key=lambda f: f["id"], reverse=query.get("order", "desc") == "desc")
        return 200, _page(items, query, default_limit=10_000, max_limit=10_000)

    def create_batch(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        file_id, endpoint = body.get("input_file_id"), body.get("endpoint")
        if body.get("completion_window") != "24h":
            return 400, _error("completion_window must be '24h'", param="completion_window")
        if endpoint not in ENDPOINTS:
            return 400, _error(f"endpoint {endpoint!r} is not supported here", param="endpoint")
        with self._api_lock:
            file = self.files.get(file_id)
            if file is None:
                return 404, _error(f"No such File object: {file_id}", param="input_file_id")
            if file["purpose"] != "batch":
                return 400, _error("The input file must be uploaded with purpose 'batch'", param="input_file_id")
            now = int(time.time())
            obj = {"id": self._new_id("batch_"), "object": "batch", "endpoint": endpoint, "errors": None,
                   "input_file_id": file_id, "completion_window": "24h", "status": "validating",
                   "output_file_id": None, "error_file_id": None, "created_at": now, "in_progress_at": None,
                   "expires_at": now + WINDOW_S, "finalizing_at": None, "completed_at": None, "failed_at": None,
                   "expired_at": None, "cancelling_at": None, "cancelled_at": None,
                   "request_counts": {"total": 0, "completed": 0, "failed": 0},
                   "metadata": body.get("metadata"), "model": None}
            self.batches[obj["id"]] = _Batch(obj, since=time.monotonic(), held=self.batch.hold)
            return 200, dict(obj)

    def get_batch(self, batch_id: str) -> tuple[int, dict[str, Any]]:
        with self._api_lock:
            b = self.batches.get(batch_id)
            if b is None:
                return 404, _error(f"No batch found with id '{batch_id}'", param="batch_id")
            self._advance(b)
            return 200, dict(b.obj)

    def list_batches(self, query: dict[str, str]) -> tuple[int, dict[str, Any]]:
        with self._api_lock:
            for b in self.batches.values():
                self._advance(b)
            items = sorted((dict(b.obj) for b in self.batches.values()), key=lambda o: o["id"], reverse=True)
        return 200, _page(items, query, default_limit=20, max_limit=100)

    def cancel_batch(self, batch_id: str) -> tuple[int, dict[str, Any]]:
        with self._api_lock:
            b = self.batches.get(batch_id)
            if b is None:
                return 404, _error(f"No batch found with id '{batch_id}'", param="batch_id")
            self._advance(b)
            if b.obj["status"] not in ("validating", "in_progress", "finalizing"):
                return 409, _error(f"Cannot cancel a batch with status '{b.obj['status']}'.")
            self._set(b, "cancelling")
            return 200, dict(b.obj)

    # -- a batch's life -------------------------------------------------------------

    def _set(self, b: _Batch, status: str) -> None:
        b.obj["status"] = status
        b.obj[f"{status}_at"] = int(time.time())
        b.since = time.monotonic()

    def _advance(self, b: _Batch) -> None:
        s, status = self.batch, b.obj["status"]
        elapsed = time.monotonic() - b.since
        if status == "validating" and not b.held and elapsed >= s.validate_s:
            errors = self._validate(b)
            if errors:
                b.obj["errors"] = {"object": "list", "data": errors}
                self._set(b, "failed")
                return
            b.obj["request_counts"]["total"] = len(b.lines)
            b.obj["model"] = b.lines[0]["body"]["model"] if b.lines else None
            self._set(b, "in_progress")
            return self._advance(b)
        if status == "in_progress":
            due = len(b.lines) if s.request_s <= 0 else min(len(b.lines), int(elapsed / s.request_s))
            if s.expire_after is not None:
                due = min(due, s.expire_after)
            while len(b.answers) < due:
                self._answer(b, b.lines[len(b.answers)])
            if s.expire_after is not None and len(b.answers) >= s.expire_after and len(b.answers) < len(b.lines):
                self._finish(b, "expired", "batch_expired",
                             "This request could not be executed before the completion window expired.")
            elif len(b.answers) == len(b.lines):
                self._set(b, "finalizing")
                return self._advance(b)
        elif status == "finalizing" and elapsed >= s.finalize_s:
            self._finish(b, "completed")
        elif status == "cancelling" and elapsed >= s.cancel_s:
            self._finish(b, "cancelled", "batch_cancelled", "This request was not executed: the batch was cancelled.")

    def _validate(self, b: _Batch) -> list[dict[str, Any]]:
        content = self.contents[b.obj["input_file_id"]]
        if len(content) > MAX_BYTES:
            return [{"code": "file_too_large", "message": f"The input file is larger than {MAX_BYTES} bytes."}]
        errors, seen, models = [], set(), set()
        for number, raw in enumerate(content.splitlines(), 1):
            if not raw.strip():
                continue
            try:
                line = json.loads(raw)
            except ValueError:
                errors.append({"code": "invalid_json_line", "message": "This line is not parseable as valid JSON.",
                               "line": number})
                continue
            body = line.get("body") if isinstance(line, dict) else None
            if not isinstance(line, dict) or not isinstance(line.get("custom_id"), str):
                errors.append({"code": "missing_required_parameter", "param": "custom_id", "line": number,
                               "message": "Missing required parameter: 'custom_id'."})
            elif line["custom_id"] in seen:
                errors.append({"code": "duplicate_custom_id", "param": "custom_id", "line": number,
                               "message": "The custom_id for this request is a duplicate of another request. The "
                                          "custom_id parameter must be unique for each request in a batch."})
            elif line.get("method") != "POST":
                errors.append({"code": "invalid_method", "param": "method", "line": number,
                               "message": "Only POST is supported."})
            elif line.get("url") != b.obj["endpoint"]:
                errors.append({"code": "mismatched_endpoint", "param": "url", "line": number,
                               "message": f"The url {line.get('url')!r} does not match the batch's endpoint."})
            elif not isinstance(body, dict) or not body.get("model"):
                errors.append({"code": "missing_required_parameter", "param": "body.model", "line": number,
                               "message": "Missing required parameter: 'body.model'."})
            else:
                seen.add(line["custom_id"])
                models.add(body["model"])
                b.lines.append(line)
        if len(b.lines) > MAX_LINES:
            errors.append({"code": "too_many_requests", "message": f"A batch holds at most {MAX_LINES} requests."})
        if len(models) > 1:
            errors.append({"code": "mismatched_model", "param": "body.model",
                           "message": "Each batch input file may only include requests to a single model."})
        queued = sum(len(o.lines) for o in self.batches.values() if o is not b and o.obj["status"] in QUEUED)
        limit = self.batch.max_enqueued_requests
        if not errors and limit is not None and queued + len(b.lines) > limit:
            errors.append({"code": "token_limit_exceeded", "message": f"Enqueued token limit reached for "
                           f"{next(iter(models), 'the model')}: {queued} requests are in progress (limit {limit}). "
                           "Please try again once some in_progress batches have been completed."})
        if errors:
            b.lines = []
        return errors

    def _answer(self, b: _Batch, line: dict[str, Any]) -> None:
        """Run one request through FaultServer's answer logic."""
        body, path = line["body"], b.obj["endpoint"]
        self._serial += 1
        record = {"id": f"batch_req_{self._serial:06d}", "custom_id": line["custom_id"]}
        text = _prompt_text(body.get("messages", body.get("prompt")))
        rejected = [p for p in self.settings.reject_params if p in body]
        counts = b.obj["request_counts"]
        if self.batch.error_match is not None and self.batch.error_match in text:
            record.update(response=None, error={"code": "request_timeout",
                                                "message": "The underlying call to the model timed out."})
        elif _fraction(_digest(body.get("messages", body.get("prompt")))) < self.settings.fail_fraction:
            record.update(response={"status_code": self.settings.fail_status, "request_id": f"req_{self._serial}",
                                    "body": _error("permanent failure (injected)")}, error=None)
        elif rejected:
            record.update(response={"status_code": 400, "request_id": f"req_{self._serial}", "body": _error(
                f"Unsupported parameter: '{rejected[0]}' is not supported with this model.", param=rejected[0],
                code="unsupported_parameter")}, error=None)
        else:
            record.update(response={"status_code": 200, "request_id": f"req_{self._serial}",
                                    "body": self._completion(path, body)}, error=None)
        ok = record["response"] is not None and record["response"]["status_code"] == 200
        counts["completed" if ok else "failed"] += 1
        b.answers.append(record)

    def _finish(self, b: _Batch, status: str, code: str | None = None, message: str | None = None) -> None:
        """Write the output and error files and end in `status`; lines never answered get `code`."""
        answered = {a["custom_id"] for a in b.answers}
        records = list(b.answers) + [
            {"id": f"batch_req_{b.obj['id']}_{i}", "custom_id": line["custom_id"], "response": None,
             "error": {"code": code, "message": message}}
            for i, line in enumerate(b.lines) if line["custom_id"] not in answered]
        if self.batch.shuffle:
            random.Random(b.obj["id"]).shuffle(records)
        ok, bad = [], []
        for record in records:
            (ok if record["response"] is not None and record["response"]["status_code"] == 200 else bad).append(record)
        for kind, chosen in (("output", ok), ("error", bad)):
            if chosen:
                data = "".join(json.dumps(r) + "\n" for r in chosen).encode()
                b.obj[f"{kind}_file_id"] = self._store(f"{b.obj['id']}_{kind}.jsonl", "batch_output", data)["id"]
        usages = [r["response"]["body"]["usage"] for r in ok]
        reasoning = sum((u.get("completion_tokens_details") or {}).get("reasoning_tokens", 0) for u in usages)
        tokens = {"input_tokens": sum(u["prompt_tokens"] for u in usages),
                  "output_tokens": sum(u["completion_tokens"] for u in usages)}
        b.obj["usage"] = {**tokens, "total_tokens": sum(tokens.values()),
                          "input_tokens_details": {"cached_tokens": 0},
                          "output_tokens_details": {"reasoning_tokens": reasoning}}
        self._set(b, status)


def _page(items: list[dict[str, Any]], query: dict[str, str], default_limit: int, max_limit: int) -> dict[str, Any]:
    """A cursor page: items after `after`, at most `limit`."""
    after, limit = query.get("after"), min(int(query.get("limit") or default_limit), max_limit)
    if after is not None:
        ids = [o["id"] for o in items]
        items = items[ids.index(after) + 1:] if after in ids else []
    data = items[:limit]
    return {"object": "list", "data": data, "first_id": data[0]["id"] if data else None,
            "last_id": data[-1]["id"] if data else None, "has_more": len(items) > limit}


class _BatchHandler(_Handler):
    server: Any

    def _route(self, method: str) -> bool:
        """Answer a Batch or Files API call; False for any other path (FaultServer's)."""
        app: BatchServer = self.server.app
        parts = urlsplit(self.path)
        path, query = parts.path, {k: v[-1] for k, v in parse_qs(parts.query).items()}
        with app._lock:
            app.calls.append((method, path))
        segments = path.strip("/").split("/")
        if segments[:2] not in (["v1", "files"], ["v1", "batches"]):
            return False
        if method == "POST":
            data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        route = (method, *segments[1:])
        if route == ("POST", "files"):
            fields_ = self._multipart(data)
            file = fields_.get("file")
            if file is None:
                self.send_json(400, _error("Missing required parameter: 'file'.", param="file"))
            else:
                self.send_json(*app.upload(file[0] or "upload.jsonl", (fields_.get("purpose") or (None, b""))[1].decode(),
                                           file[1]))
        elif route == ("GET", "files"):
            self.send_json(*app.list_files(query))
        elif len(route) in (3, 4) and route[1] == "files":
            with app._api_lock:
                obj = app.files.get(route[2])
            if obj is None:
                self.send_json(404, _error(f"No such File object: {route[2]}", param="id"))
            elif route[0] == "GET" and len(route) == 4 and route[3] == "content":
                self.send_raw(200, app.contents[route[2]], {"Content-Type": "application/octet-stream"})
            elif route[0] == "GET" and len(route) == 3:
                self.send_json(200, obj)
            elif route[0] == "DELETE" and len(route) == 3:
                with app._api_lock:
                    app.files.pop(route[2]), app.contents.pop(route[2])
                self.send_json(200, {"id": route[2], "object": "file", "deleted": True})
            else:
                self.send_json(404, _error(f"no route {method} {path}"))
        elif route == ("POST", "batches"):
            self.send_json(*app.create_batch(json.loads(data or b"{}")))
        elif route == ("GET", "batches"):
            self.send_json(*app.list_batches(query))
        elif route[:2] == ("GET", "batches") and len(route) == 3:
            self.send_json(*app.get_batch(route[2]))
        elif route[:2] == ("POST", "batches") and len(route) == 4 and route[3] == "cancel":
            self.send_json(*app.cancel_batch(route[2]))
        else:
            self.send_json(404, _error(f"no route {method} {path}"))
        return True

    def _multipart(self, data: bytes) -> dict[str, tuple[str | None, bytes]]:
        """{field: (filename, bytes)} of a multipart/form-data body."""
        head = f"Content-Type: {self.headers.get('Content-Type')}\r\n\r\n".encode()
        message = email.parser.BytesParser(policy=email.policy.default).parsebytes(head + data)
        out = {}
        for part in message.iter_parts() if message.is_multipart() else []:
            name = part.get_param("name", header="content-disposition")
            if name:
                out[name] = (part.get_filename(), part.get_payload(decode=True) or b"")
        return out

    def do_GET(self) -> None:
        if not self._route("GET"):
            super().do_GET()

    def do_POST(self) -> None:
        if not self._route("POST"):
            super().do_POST()

    def do_DELETE(self) -> None:
        if not self._route("DELETE"):
            self.send_json(404, _error(f"no route {self.path}"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (see READY line)")
    parser.add_argument("--request-s", type=float, default=0.0, help="seconds per request of a batch")
    parser.add_argument("--expire-after", type=int, default=None, help="answers before a batch expires")
    args = parser.parse_args()
    server = BatchServer(args.host, args.port, batch={"request_s": args.request_s, "expire_after": args.expire_after})
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    server.start()
    print(f"READY {server.url}", flush=True)
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()


if __name__ == "__main__":
    main()
