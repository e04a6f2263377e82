"""An OpenRLHF-style remote reward: `python -m skyeval.cli serve-reward +env=math500 port=8000`.

`POST /get_reward` with `{"query": [...], "prompts": [...], "labels": [...]}` (OpenRLHF's
`--remote_rm_url` body: each query is the prompt followed by the response) answers
`{"rewards": [...], "scores": [...], "extra_logs": {"correct": [...], "format": [...],
"length": [...]}, "errors": [...]}`: `scores` repeats `rewards` (OpenRLHF reads either),
`extra_logs` holds each component (OpenRLHF logs them), `errors` the reason an item scored
0 without being graded (a timeout), else null. The response is what follows the
prompt's first occurrence in the query; without `prompts`, the whole query. `GET
/health` says the env and the pool. A malformed request gets a 4xx with one line
(`{"error": ...}`), never zeros. Served by uvicorn (starlette); Ctrl-C or SIGTERM stops
it gracefully: requests in flight finish, then the scoring pool stops.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import logging
import socket
import sys
from dataclasses import dataclass, field
from typing import Any

from skyeval.errors import ConfigError, GoldError, InfrastructureError
from skyeval.reward.components import COMPONENTS, RewardConfig
from skyeval.reward.scoring import Reward

log = logging.getLogger(__name__)

USAGE = """usage: skyeval serve-reward +env=NAME [port=8000] [host=127.0.0.1] [env.KNOB=V ...] [reward.FIELD=V ...]

  +env=NAME                      the benchmark whose grader scores (math500, gsm8k, humaneval, ...)
  port=P host=H                  where to listen (default 127.0.0.1:8000)
  env.timeout_s=10               the env's own knobs
  reward.weights.format=0.2      RewardConfig: weights.{correct,format,length}, max_length,
  reward.max_length=4096           overlong_buffer, think_tags, workers, item_timeout_s
  max_batch=4096 max_body_mb=64  larger requests get 413
"""


@dataclass
class ServeConfig:
    """The reward server: which env grades, where it listens, the reward's settings and
    the size a request may have."""

    env: str
    env_knobs: dict[str, Any] = field(default_factory=dict)
    host: str = "127.0.0.1"
    port: int = 8000
    reward: RewardConfig = field(default_factory=RewardConfig)
    max_batch: int = 4096
    max_body_mb: float = 64.0


class BadRequest(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status


def build_app(reward: Reward, max_batch: int = 4096, max_body_mb: float = 64.0) -> Any:
    """The starlette app serving `reward`; its shutdown stops the reward's scoring pool."""
    import contextlib

    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.exceptions import HTTPException
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    max_bytes = int(max_body_mb * 2**20)

    async def get_reward(request: Any) -> Any:
        try:
            payload = _json(await _body(request, max_bytes))
            completions, prompts, labels = parse_request(payload, max_batch)
        except BadRequest as err:
            return JSONResponse({"error": str(err)}, status_code=err.status)
        try:
            results = await run_in_threadpool(reward.score, completions, labels, prompts=prompts)
        except GoldError as err:  # a malformed label: the caller's error, never a silent 0
            return JSONResponse({"error": str(err)}, status_code=422)
        except InfrastructureError as err:  # the scorer could not run: never a reward of 0
            return JSONResponse({"error": f"scoring unavailable: {str(err).splitlines()[0]}"}, status_code=503)
        rewards = [r["reward"] for r in results]
        return JSONResponse({"rewards": rewards, "scores": rewards,
                             "extra_logs": {name: [r[name] for r in results] for name in COMPONENTS},
                             "errors": [r["error"] for r in results]})

    async def health(request: Any) -> Any:
        pool = reward.env.scorer_pool(reward.config.workers, reward.config.item_timeout_s)
        return JSONResponse({"status": "ok", "env": reward.env.name, "workers": pool.workers,
                             "workers_replaced": pool.replaced})

    @contextlib.asynccontextmanager
    async def lifespan(app: Any):
        reward.env.scorer_pool(reward.config.workers, reward.config.item_timeout_s)  # start the workers now
        yield
        reward.close()

    async def http_error(request: Any, err: Any) -> Any:  # 404, 405: JSON like every other answer
        return JSONResponse({"error": f"{err.detail}: {request.method} {request.url.path}"}, status_code=err.status_code)

    return Starlette(routes=[Route("/get_reward", get_reward, methods=["POST"]),
                             Route("/health", health, methods=["GET"])],
                     exception_handlers={HTTPException: http_error}, lifespan=lifespan)


async def _body(request: Any, max_bytes: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > max_bytes:
        raise BadRequest(413, f"body of {declared} bytes is over the limit of {max_bytes} (max_body_mb)")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise BadRequest(413, f"body is over the limit of {max_bytes} bytes (max_body_mb)")
        chunks.append(chunk)
    return b"".join(chunks)


def _json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError) as err:
        raise BadRequest(400, f"body is not JSON: {str(err).splitlines()[0]}") from None


def parse_request(payload: Any, max_batch: int) -> tuple[list[str], list[str] | None, list[Any]]:
    """(responses, prompts or None, labels) of a /get_reward body, or BadRequest naming
    the first thing wrong with it."""
    if not isinstance(payload, dict):
        raise BadRequest(422, f"body must be a JSON object with query, prompts, labels; got {type(payload).__name__}")
    unknown = sorted(set(payload) - {"query", "prompts", "labels"})
    if unknown:
        raise BadRequest(422, f"unknown field(s) {unknown}: the body has query, prompts, labels")
    query, prompts, labels = payload.get("query"), payload.get("prompts"), payload.get("labels")
    if not isinstance(query, list) or not all(isinstance(q, str) for q in query):
        raise BadRequest(422, "query must be a list of strings (prompt + response each)")
    if len(query) > max_batch:
        raise BadRequest(413, f"{len(query)} queries is over the limit of {max_batch} per request (max_batch)")
    if not isinstance(labels, list) or len(labels) != len(query):
        got = f"{len(labels)} labels" if isinstance(labels, list) else "no list of labels"
        raise BadRequest(422, f"labels must be a list with one gold answer per query: {got} for {len(query)} queries")
    for index, label in enumerate(labels):
        if label is None or isinstance(label, bool) or not isinstance(label, (str, int, float, list, dict)):
            raise BadRequest(422, f"labels[{index}] is {json.dumps(label)[:40]}: a gold answer (string) is needed")
    labels = [str(label) if isinstance(label, (int, float)) else label for label in labels]
    if prompts is None:
        return query, None, labels
    if not isinstance(prompts, list) or len(prompts) != len(query) or not all(isinstance(p, str) for p in prompts):
        raise BadRequest(422, f"prompts must be a list of {len(query)} strings (one per query) or absent")
    responses = []
    for index, (text, prompt) in enumerate(zip(query, prompts)):
        start = text.find(prompt)
        if start < 0:
            raise BadRequest(422, f"query[{index}] does not contain prompts[{index}]: cannot tell the response apart")
        responses.append(text[start + len(prompt):])
    return responses, prompts, labels


def config_from_args(args: list[str]) -> ServeConfig:
    """`+env=NAME env.KNOB=V key=V ...` -> ServeConfig (misspelt keys refused, with the closest)."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    env, knobs, rest = None, {}, []
    for arg in args:
        key, eq, value = arg.lstrip("+").partition("=")
        if not eq:
            raise ConfigError(f"expected key=value, got {arg!r}\n\n{USAGE}")
        if key == "env":
            env = value
        elif key.startswith("env."):
            knobs[key[4:]] = OmegaConf.from_dotlist([f"v={value}"]).v
        else:
            rest.append(f"{key}={value}")
    if not env:
        raise ConfigError(f"no env: add +env=NAME\n\n{USAGE}")
    schema = OmegaConf.structured(ServeConfig(env=env, env_knobs=knobs))
    try:
        merged = OmegaConf.to_object(OmegaConf.merge(schema, OmegaConf.from_dotlist(rest)))
    except OmegaConfBaseException as err:
        key = getattr(err, "full_key", None) or ""
        fields = [f.name for f in dataclasses.fields(ServeConfig)] + [f"reward.{f.name}" for f in dataclasses.fields(RewardConfig)]
        close = difflib.get_close_matches(str(key), fields, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"serve-reward: {str(err).splitlines()[0]}.{hint}\n\n{USAGE}") from None
    merged.reward = RewardConfig(**dataclasses.asdict(merged.reward))  # validated
    return merged


def serve(config: ServeConfig) -> None:
    """Build the env and serve until stopped."""
    import uvicorn

    sock = listen(config.host, config.port)  # a busy port is one line, before any banner
    reward = Reward(config.env, config.reward, config.env_knobs)
    app = build_app(reward, config.max_batch, config.max_body_mb)
    print(f"skyeval reward server: env {reward.env.name} on http://{config.host}:{sock.getsockname()[1]} "
          "(POST /get_reward, GET /health)", flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=30))
    server.run(sockets=[sock])


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to host:port for the server, or a ConfigError when it is taken."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn: a live listener still refuses
    try:
        sock.bind((host, port))
    except OSError as err:
        sock.close()
        raise ConfigError(f"serve-reward: cannot listen on {host}:{port}: {err.strerror or err} "
                          "(is another server there? choose another with port=P)") from None
    sock.set_inheritable(True)
    return sock


def main(args: list[str]) -> int:
    if any(a in ("-h", "--help") for a in args):
        print(USAGE)
        return 0
    serve(config_from_args(args))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
