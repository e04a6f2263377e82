"""Throughput of the HTTP backend against a fixed-latency loopback server.

Starts tests/backends/fault_server.py in a subprocess (every answer after --latency s),
then sends --requests chat requests at --concurrency through skyeval's OpenAIBackend,
through the whole CLI (`evaluate` on as many synthetic math problems: start-up, reading,
templating, generating, scoring and writing the run folder, timed as a process) and through
a bare AsyncOpenAI + semaphore loop, and prints the throughputs, the ratio of ideal
(concurrency / latency) and the ratios to the bare loop. Targets: the backend >= 0.9 of
ideal; the CLI end to end >= 0.9 of the bare loop.

    python scripts/bench_http.py --requests 2000 --concurrency 128 --latency 1.0
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from pathlib import Path

from skyeval.backends.base import GenerationRequest, SamplingParams, ScalingConfig
from skyeval.backends.openai import HTTPConfig, OpenAIBackend

SERVER = Path(__file__).resolve().parents[1] / "tests" / "backends" / "fault_server.py"


def start_server(latency: float) -> tuple[subprocess.Popen, str]:
    """The server process and its base URL (from its READY line)."""
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "--port", "0", "--latency", str(latency)],
        stdout=subprocess.PIPE, text=True,
    )
    line = proc.stdout.readline().strip()
    if not line.startswith("READY "):
        proc.kill()
        raise RuntimeError(f"fault server did not start: {line!r}")
    return proc, line.split(" ", 1)[1]


def messages(tag: str, i: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"{tag} request {i}: what is {i} + 1?"}]


def bench_skyeval(url: str, requests: int, concurrency: int) -> float:
    """Seconds for all requests through OpenAIBackend.generate."""
    backend = OpenAIBackend(HTTPConfig("bench", url), ScalingConfig(concurrency=concurrency))
    batch = (GenerationRequest(f"q{i}", messages("skyeval", i), [0]) for i in range(requests))  # a stream, as the pipeline passes
    start = time.perf_counter()
    results = list(backend.generate(batch, SamplingParams(max_tokens=16)))
    elapsed = time.perf_counter() - start
    backend.close()
    failed = sum(not r.ok for r in results)
    if len(results) != requests or failed:
        raise RuntimeError(f"skyeval: {len(results)} results, {failed} failed")
    return elapsed


async def _bare(url: str, requests: int, concurrency: int) -> float:
    import openai

    limits = type(openai.DEFAULT_CONNECTION_LIMITS)(
        max_connections=concurrency, max_keepalive_connections=concurrency
    )
    client = openai.AsyncOpenAI(
        base_url=url, api_key="EMPTY", max_retries=0,
        http_client=openai.DefaultAsyncHttpxClient(limits=limits),
    )
    slots = asyncio.Semaphore(concurrency)

    async def one(i: int) -> str | None:
        async with slots:
            response = await client.chat.completions.create(
                model="bench", messages=messages("bare", i), max_tokens=16, temperature=0.0, seed=0
            )
        return response.choices[0].message.content

    start = time.perf_counter()
    answers = await asyncio.gather(*(one(i) for i in range(requests)))
    elapsed = time.perf_counter() - start
    await client.close()
    if len(answers) != requests:
        raise RuntimeError("bare loop lost answers")
    return elapsed


def bench_cli(url: str, requests: int, concurrency: int) -> float:
    """Seconds for `python -m skyeval.cli evaluate` on `requests` problems, process start to exit."""
    import os
    import shutil
    import tempfile

    sys.path.insert(0, str(Path(__file__).parent))
    from bench_scale import write_problems

    work = Path(tempfile.mkdtemp(prefix="skyeval_bench_http_"))
    try:
        write_problems(work / "data", requests, 200)
        cmd = [sys.executable, "-m", "skyeval.cli", "evaluate", "+env=math500", f"data_dir={work / 'data'}",
               "model_config=openai", "model_config.model_source=bench", f"model_config.api_url={url}",
               "model_config.api_key_env=null", f"scaling.concurrency={concurrency}", "sampling_params.max_tokens=16",
               f"logging.results_dir={work / 'out'}"]
        start = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "SKYEVAL_DATA_DIR": str(work / "data")})
        elapsed = time.perf_counter() - start
        if proc.returncode != 0 or f"{requests} samples, {requests} scored" not in proc.stdout:
            raise RuntimeError(f"CLI run failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
        return elapsed
    finally:
        shutil.rmtree(work, ignore_errors=True)


def bench_bare(url: str, requests: int, concurrency: int) -> float:
    """Seconds for all requests through a bare AsyncOpenAI + semaphore loop."""
    return asyncio.run(_bare(url, requests, concurrency))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=128)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=2,
                        help="alternate the two clients this many times; the best of each counts")
    args = parser.parse_args()
    import openai  # noqa: F401 (import time is not part of either measurement)

    clients = {"bare AsyncOpenAI loop": bench_bare, "skyeval OpenAIBackend": bench_skyeval,
               "skyeval CLI end to end": bench_cli}
    seconds: dict[str, list[float]] = {name: [] for name in clients}
    ideal = args.concurrency / args.latency
    print(f"{args.requests} requests, concurrency {args.concurrency}, latency {args.latency}s: "
          f"ideal {ideal:.1f} req/s")
    proc, url = start_server(args.latency)
    try:
        for round_ in range(args.rounds):
            order = list(clients) if round_ % 2 == 0 else list(reversed(clients))
            for name in order:
                seconds[name].append(clients[name](url, args.requests, args.concurrency))
                report(f"round {round_ + 1}: {name}", args.requests / seconds[name][-1], ideal)
    finally:
        proc.terminate()
        proc.wait()
    best = {name: args.requests / min(times) for name, times in seconds.items()}
    for name, rate in best.items():
        report(f"best: {name}", rate, ideal)
    bare = best["bare AsyncOpenAI loop"]
    print(f"skyeval backend / bare throughput: {best['skyeval OpenAIBackend'] / bare:.3f}")
    print(f"skyeval CLI end to end / bare throughput: {best['skyeval CLI end to end'] / bare:.3f} (target >= 0.9)")


def report(label: str, rate: float, ideal: float) -> None:
    print(f"  {label:38s} {rate:7.1f} req/s  {rate / ideal:.3f} of ideal", flush=True)


if __name__ == "__main__":
    main()
