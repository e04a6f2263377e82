"""A fault-injecting OpenAI-compatible HTTP server on 127.0.0.1, for tests and benchmarks.

Endpoints (non-streaming JSON only):

- ``POST /v1/chat/completions`` and ``POST /v1/completions``: answered after ``latency``
  seconds. Each choice's text is ``answer_template.format(number=N, index=I, seed=S, prompt_hash=H)``
  where ``N`` is the last integer in the prompt (0 if none), ``I`` the choice index,
  ``S`` the request's seed and ``H`` 8 hex digits of the prompt's hash; the default template gives ``"The answer is \\boxed{N}."``.
  Usage counts whitespace-separated words (prompt, and all choices' completions).
- ``answer_table``: ``{substring: answer}``; a prompt containing a substring is answered
  with its answer, taken literally (the first match, in table order); others with
  ``answer_template``. A scripted judge, or a model with known right and wrong answers.
- ``answer_variants``: templates used instead of ``answer_template``, choice ``I`` of a
  request with seed ``S`` taking variant ``(I + S) % len``: samples that differ as a
  sampled model's do (``--answer-variant``, repeatable).
- ``responder``: a function of the request body returning the answer text (in-process
  servers only): a scripted model that reads the whole conversation (tests/tools).
- ``stop`` is honoured as vLLM does: an answer is cut before the first stop string it
  holds, with ``finish_reason: "stop"``.
- ``GET /admin/stats``: ``{"requests", "in_flight", "max_in_flight"}``.
- ``POST /admin/config``: JSON of settings to change (any ``Settings`` field; ``faults`` as
  a list of ``Fault`` dicts). ``POST /admin/heal``: set ``fail_fraction`` to 0.

Faults (``Settings``):

- ``faults``: a script applied to every request key: the first ``faults[0].times``
  attempts get ``faults[0].mode``, the next ``faults[1].times`` get ``faults[1].mode``, and
  so on; later attempts succeed. Modes: ``"429"`` (with ``Retry-After``), ``"500"``,
  ``"hang"`` (never answers), ``"malformed"`` (200 with truncated JSON), ``"drop"`` (closes
  the socket mid-response). A fault with ``match`` only applies to prompts containing it.
- ``fail_fraction``: a deterministic fraction of prompts (by prompt hash) always get
  ``fail_status``, until healed.
- ``ignore_n``: answer with one choice whatever ``n`` asks.
- ``hold``: while true, answers wait (after ``latency``): a test stalls the requests in
  flight, then releases them with ``configure(hold=False)``.
- ``reject_params``: a 400 "Unsupported parameter" (OpenAI's format) for any request
  that sends one of these body fields.

What a reasoning model's server sends (``Settings``):

- ``answer_template`` may hold think tags (``"<think>...</think>The answer is ..."``).
- ``reasoning_template``: chat choices also carry ``message.reasoning_content`` (vLLM's
  reasoning parsers, DeepSeek's API), formatted like the answer.
- ``hidden_reasoning_tokens``: per choice, reasoning tokens the server counts but does not
  return (o-series): added to ``completion_tokens``.
- Usage reports ``completion_tokens_details.reasoning_tokens`` (words of the reasoning
  content plus the hidden ones) whenever a choice has reasoning.
- ``max_tokens`` (or ``max_completion_tokens``) is honoured in words: a longer answer is
  cut there with ``finish_reason: "length"`` (so a cut inside a think block leaves it
  unclosed); otherwise ``finish_reason`` is the setting's (default ``"stop"``).

Every request is logged (``server.log``, and as JSON lines to ``log_path`` if given) with
``t`` (when it arrived, ``time.time()``, once its body was read), its ``key`` (hash of endpoint, prompt, n and seed: retries repeat it), ``prompt_key``
(hash of the prompt alone), ``attempt`` (0 for the first time the key is seen), the
prompt or messages, ``n``, ``seed``, all other body fields under ``params`` and the fault
applied. Use it as a context manager in tests::

    with FaultServer(latency=0.1, faults=[Fault("500")]) as server:
        client = OpenAI(base_url=server.url, api_key="EMPTY")

or as a subprocess, which prints ``READY <url>`` once listening and stops on SIGTERM::

    python tests/backends/fault_server.py --port 0 --latency 1.0 --log requests.jsonl
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import signal
import socket
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field, fields
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

DEFAULT_ANSWER = "The answer is \\boxed{{{number}}}."
MODES = ("429", "500", "hang", "malformed", "drop")


@dataclass
class Fault:
    """The next `times` attempts of each request key (matching `match`) get `mode`."""

    mode: str
    times: int = 1
    match: str | None = None
    retry_after: float = 1.0  # seconds, for mode "429"

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"unknown fault mode {self.mode!r}; choose from {MODES}")


@dataclass
class Settings:
    """What the server does; change at runtime with `FaultServer.configure`."""

    latency: float = 0.0
    faults: list[Fault] = field(default_factory=list)
    fail_fraction: float = 0.0
    fail_status: int = 500
    ignore_n: bool = False
    reject_params: list[str] = field(default_factory=list)
    answer_template: str = DEFAULT_ANSWER
    answer_table: dict[str, str] = field(default_factory=dict)
    answer_variants: list[str] = field(default_factory=list)
    reasoning_template: str | None = None
    hidden_reasoning_tokens: int = 0
    finish_reason: str = "stop"
    hold: bool = False
    responder: Any = None  # body -> answer text (a Python function: in-process servers only)


class FaultServer:
    """The server; `start()`/`close()` or use as a context manager."""

    def __init__(
        self, host: str = "127.0.0.1", port: int = 0, log_path: str | Path | None = None,
        **settings: Any,
    ) -> None:
        self.settings = Settings()
        self.configure(**settings)
        self.log: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._attempts: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._log_file = open(log_path, "a", encoding="utf-8") if log_path else None
        self._httpd = _HTTPServer((host, port), _Handler)
        self._httpd.app = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def configure(self, **changes: Any) -> None:
        """Change settings; `faults` may be given as dicts."""
        if "faults" in changes:
            changes["faults"] = [f if isinstance(f, Fault) else Fault(**f) for f in changes["faults"]]
        known = {f.name for f in fields(Settings)}
        unknown = set(changes) - known
        if unknown:
            raise ValueError(f"unknown settings {sorted(unknown)}; known: {sorted(known)}")
        for name, value in changes.items():
            setattr(self.settings, name, value)

    def heal(self) -> None:
        """Stop the permanent failures."""
        self.configure(fail_fraction=0.0)

    def attempts(self) -> Counter[str]:
        """How many times each request key was seen."""
        with self._lock:
            return Counter(self._attempts)

    def start(self) -> FaultServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()  # releases hanging requests
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._log_file:
            self._log_file.close()

    def __enter__(self) -> FaultServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {"requests": len(self.log), "in_flight": self.in_flight,
                    "max_in_flight": self.max_in_flight}

    def handle(self, handler: _Handler, path: str, body: dict[str, Any]) -> None:
        """Answer one completion request, or inject its fault."""
        entry = self._record(path, body)
        try:
            self._respond(handler, path, body, entry)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _record(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        prompt = body.get("messages", body.get("prompt"))
        prompt_key = _digest(prompt)
        key = _digest([path, prompt, body.get("n", 1), body.get("seed")])
        entry = {
            "t": time.time(), "path": path, "key": key, "prompt_key": prompt_key,
            "messages" if "messages" in body else "prompt": prompt,
            "n": body.get("n", 1), "seed": body.get("seed"),
            "params": {k: v for k, v in body.items() if k not in ("messages", "prompt", "n", "seed")},
        }
        with self._lock:
            entry["attempt"] = self._attempts[key]
            self._attempts[key] += 1
            entry["fault"] = self._fault_for(entry, _prompt_text(prompt), body)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self.log.append(entry)
            if self._log_file:
                self._log_file.write(json.dumps(entry) + "\n")
                self._log_file.flush()
        return entry

    def _fault_for(self, entry: dict[str, Any], text: str, body: dict[str, Any]) -> str | None:
        s = self.settings
        if _fraction(entry["prompt_key"]) < s.fail_fraction:
            return "permanent"
        rejected = [p for p in s.reject_params if p in body]
        if rejected:
            return f"reject:{rejected[0]}"
        start = 0
        for fault in s.faults:
            if fault.match is not None and fault.match not in text:
                continue
            if start <= entry["attempt"] < start + fault.times:
                if fault.mode == "429":
                    entry["retry_after"] = fault.retry_after
                return fault.mode
            start += fault.times
        return None

    def _respond(self, handler: _Handler, path: str, body: dict[str, Any], entry: dict) -> None:
        fault = entry["fault"]
        if fault == "hang":
            self._stop.wait()
            handler.close_connection = True
            return
        self._stop.wait(self.settings.latency)
        while self.settings.hold and not self._stop.wait(0.05):
            pass
        if fault == "permanent":
            handler.send_json(self.settings.fail_status, _error("permanent failure (injected)"))
        elif fault and fault.startswith("reject:"):
            param = fault.split(":", 1)[1]
            handler.send_json(400, _error(
                f"Unsupported parameter: '{param}' is not supported with this model.",
                param=param, code="unsupported_parameter"))
        elif fault == "429":
            handler.send_json(429, _error("rate limited (injected)"),
                              {"Retry-After": f"{entry['retry_after']:g}"})
        elif fault == "500":
            handler.send_json(500, _error("internal error (injected)"))
        elif fault == "malformed":
            handler.send_raw(200, b'{"id": "x", "choices": [{"index": 0, "mess')
        elif fault == "drop":
            handler.send_truncated(json.dumps(self._completion(path, body)).encode())
        else:
            handler.send_json(200, self._completion(path, body))

    def _completion(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        chat = path.endswith("/chat/completions")
        prompt = body.get("messages", body.get("prompt"))
        text = _prompt_text(prompt)
        numbers = re.findall(r"-?\d+", text)
        n = 1 if self.settings.ignore_n else int(body.get("n") or 1)
        values = dict(number=numbers[-1] if numbers else 0, seed=body.get("seed"),
                      prompt_hash=hashlib.sha256(text.encode()).hexdigest()[:8])
        scripted = next((answer for key, answer in self.settings.answer_table.items() if key in text), None)
        if self.settings.responder is not None:
            scripted = self.settings.responder(body)
        variants = self.settings.answer_variants
        answers = [scripted if scripted is not None else
                   (variants[(i + (values["seed"] or 0)) % len(variants)] if variants
                    else self.settings.answer_template).format(index=i, **values) for i in range(n)]
        template = self.settings.reasoning_template if chat else None
        thoughts = [template.format(index=i, **values) if template else "" for i in range(n)]
        budget = body.get("max_completion_tokens", body.get("max_tokens"))
        finish = [self.settings.finish_reason] * n
        stops = [body["stop"]] if isinstance(body.get("stop"), str) else list(body.get("stop") or [])
        for i, answer in enumerate(answers):
            cuts = [answer.find(stop) for stop in stops if stop in answer]
            if cuts:
                answers[i], finish[i] = answer[:min(cuts)], "stop"
            words = answers[i].split()
            if budget is not None and len(words) > budget:
                answers[i], finish[i] = " ".join(words[:budget]), "length"
        choices = []
        for i, (answer, thought) in enumerate(zip(answers, thoughts)):
            message = {"role": "assistant", "content": answer}
            if thought:
                message["reasoning_content"] = thought
            choices.append({"index": i, "finish_reason": finish[i], "logprobs": None,
                            **({"message": message} if chat else {"text": answer})})
        reasoning_tokens = sum(len(t.split()) for t in thoughts) + self.settings.hidden_reasoning_tokens * n
        completion_tokens = sum(len(a.split()) for a in answers) + reasoning_tokens
        prompt_tokens = len(text.split())
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                 "total_tokens": prompt_tokens + completion_tokens}
        if reasoning_tokens:
            usage["completion_tokens_details"] = {"reasoning_tokens": reasoning_tokens}
        return {
            "id": f"cmpl-{_digest(body)}", "object": "chat.completion" if chat else "text_completion",
            "created": int(time.time()), "model": body.get("model", ""), "choices": choices,
            "system_fingerprint": "fp_fault_server", "usage": usage,
        }


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # listen backlog: many clients connect at once
    app: FaultServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real API servers do
    disable_nagle_algorithm = True
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (stdlib signature)
        pass

    def do_GET(self) -> None:
        if self.path == "/admin/stats":
            self.send_json(200, self.server.app.stats())
        elif self.path == "/v1/models":
            self.send_json(200, {"object": "list", "data": [{"id": "fault-server", "object": "model"}]})
        else:
            self.send_json(404, _error(f"no route {self.path}"))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        app = self.server.app
        if self.path in ("/v1/chat/completions", "/v1/completions"):
            app.handle(self, self.path, body)
        elif self.path == "/admin/config":
            app.configure(**body)
            self.send_json(200, asdict(app.settings))
        elif self.path == "/admin/heal":
            app.heal()
            self.send_json(200, asdict(app.settings))
        else:
            self.send_json(404, _error(f"no route {self.path}"))

    def send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self.send_raw(status, json.dumps(payload).encode(), headers)

    def send_raw(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def send_truncated(self, data: bytes) -> None:
        """Promise the whole body, send half of it, then close the socket."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data[: len(data) // 2])
        self.wfile.flush()
        self.connection.shutdown(socket.SHUT_RDWR)
        self.close_connection = True


def _error(message: str, param: str | None = None, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


def _fraction(hex_digest: str) -> float:
    """A prompt's deterministic position in [0, 1)."""
    return int(hex_digest, 16) / 16 ** len(hex_digest)


def _prompt_text(prompt: Any) -> str:
    if isinstance(prompt, list):
        return "\n".join(str(m.get("content", "")) for m in prompt if isinstance(m, dict))
    return str(prompt or "")


def _parse_fault(spec: str) -> Fault:
    """`MODE[:TIMES]`, e.g. `500:2`."""
    mode, _, times = spec.partition(":")
    return Fault(mode, int(times or 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (see READY line)")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each answer")
    parser.add_argument("--log", help="append one JSON line per request to this file")
    parser.add_argument("--fault", action="append", default=[], type=_parse_fault,
                        help="MODE[:TIMES], repeatable: " + ", ".join(MODES))
    parser.add_argument("--fail-fraction", type=float, default=0.0)
    parser.add_argument("--fail-status", type=int, default=500)
    parser.add_argument("--ignore-n", action="store_true")
    parser.add_argument("--answer-template", default=DEFAULT_ANSWER)
    parser.add_argument("--answer-variant", action="append", default=[], help="repeatable: see answer_variants")
    args = parser.parse_args()
    server = FaultServer(
        args.host, args.port, args.log, latency=args.latency, faults=args.fault,
        fail_fraction=args.fail_fraction, fail_status=args.fail_status,
        ignore_n=args.ignore_n, answer_template=args.answer_template, answer_variants=args.answer_variant,
    )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    server.start()
    print(f"READY {server.url}", flush=True)
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    server.close()


if __name__ == "__main__":
    main()
