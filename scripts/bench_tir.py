"""Speed of the turn loop (tools=python) against a loopback model that calls the tool 4
times per sample, then answers.

Two figures, each against a baseline measured in the same run:

- the loop's own overhead per call: with one sample in flight, the time between two
  requests of the same sample (the server's clock) minus that call's own run time on its
  sandbox worker (`skyeval.tools.python.run_call`, the sandbox included, timed around it in
  the worker). Target: p50 <= 50 ms on 2 cores;
- samples/s with --samples samples (4 calls each) at --concurrency, and the ratio to the
  bound the sandbox workers set (workers / (4 x a call's run time)).

    python scripts/bench_tir.py --samples 64 --concurrency 16
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from skyeval.backends.base import GenerationRequest, SamplingParams, ScalingConfig  # noqa: E402
from skyeval.backends.openai import HTTPConfig, OpenAIBackend  # noqa: E402
from skyeval.tools import ToolsConfig, TurnLoop  # noqa: E402
from skyeval.scorers.pool import ScorerPool  # noqa: E402
from skyeval.tools.python import Call, Outcome, run_call  # noqa: E402
from tests.backends.fault_server import FaultServer  # noqa: E402

CALLS = 4
PROGRAM = "total = sum(i * i for i in range(10000))\nprint(total)"


def reply(body: dict) -> str:
    """A program until the sample has CALLS outputs, then an answer."""
    said = "\n".join(str(m.get("content", "")) for m in body["messages"])
    if said.count("```output") < CALLS:
        return f"Step {said.count('```output') + 1}.\n```python\n{PROGRAM}\n```"
    return "So the answer is \\boxed{333283335000}."


def run(loop: TurnLoop, server: FaultServer, samples: int, tag: str) -> tuple[float, list]:
    """Seconds for `samples` samples through `loop`, and the server's log of their requests."""
    start_log = len(server.log)
    requests = (GenerationRequest(f"{tag}{i}", [{"role": "user", "content": f"{tag} {i}"}], [0]) for i in range(samples))
    start = time.perf_counter()
    results = list(loop.generate(requests, SamplingParams(max_tokens=4096)))
    elapsed = time.perf_counter() - start
    calls = [r.loop["tool_calls"] for r in results if r.ok]
    if len(calls) != samples or set(calls) != {CALLS}:
        raise RuntimeError(f"{len(results)} results, calls {sorted(set(calls))}")
    return elapsed, server.log[start_log:]


def make_loop(server: FaultServer, concurrency: int, tools: ToolsConfig) -> TurnLoop:
    """A loop whose sandbox workers have run a first sample (their start and the sandbox's
    probe are a run's one-time cost, not a call's)."""
    backend = OpenAIBackend(HTTPConfig("bench", server.url, api_key_env=None), ScalingConfig(concurrency=concurrency))
    loop = TurnLoop(backend, tools)
    run(loop, server, 2 * (tools.workers or len(os.sched_getaffinity(0))), "warm-up")
    return loop


def timed_call(call: Call) -> Outcome:
    """`run_call`, its output replaced by how long it took (the bench's model ignores it)."""
    start = time.perf_counter()
    outcome = run_call(call)
    return Outcome(outcome.status, f"{time.perf_counter() - start:.6f}")


def overheads(log: list) -> list[float]:
    """Per call: seconds between the requests before and after it (server clock), minus the
    call's run time on its worker (the output block of the later request)."""
    by_sample: dict[str, list[dict]] = {}
    for entry in log:
        by_sample.setdefault(entry["messages"][0]["content"], []).append(entry)
    out = []
    for entries in by_sample.values():
        for before, after in zip(entries, entries[1:]):
            ran = float(re.findall(r"```output\n(.*?)\n```", after["messages"][-1]["content"])[-1])
            out.append(after["t"] - before["t"] - ran)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=64)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--serial", type=int, default=12, help="samples run one at a time for the overhead figure")
    args = parser.parse_args()
    tools = ToolsConfig(name="python")
    cores = len(os.sched_getaffinity(0))
    call = Call.of(PROGRAM, (), tools, [])
    run_call(call)  # the sandbox's probe, once
    direct = []
    for _ in range(3 * args.serial):
        start = time.perf_counter()
        run_call(call)
        direct.append(time.perf_counter() - start)
    program_s = statistics.median(direct)
    with FaultServer(responder=reply) as server:
        loop = make_loop(server, 1, tools)
        loop.stop_tools()
        loop._pool = ScorerPool(timed_call, tools.workers, chunk_size=1)  # the same workers, each call timed
        try:
            run(loop, server, 2, "warm-timed-")
            serial = []
            for i in range(args.serial):  # one sample in flight: nothing waits behind anything
                serial.extend(overheads(run(loop, server, 1, f"serial-{i}-")[1]))
        finally:
            loop.close()
        loop = make_loop(server, args.concurrency, tools)
        try:
            elapsed, _ = run(loop, server, args.samples, "sample")
        finally:
            loop.close()
    overhead = sorted(serial)
    p50, p90 = statistics.median(overhead), overhead[int(0.9 * (len(overhead) - 1))]
    rate = args.samples / elapsed
    bound = (tools.workers or cores) / (CALLS * program_s)
    print(f"machine: {cores} cores, load {os.getloadavg()[0]:.1f}")
    print(f"a call's program (run directly, sandbox included): median {program_s * 1000:.1f} ms over {len(direct)} runs")
    print(f"loop overhead per call beyond the program: p50 {p50 * 1000:.1f} ms, p90 {p90 * 1000:.1f} ms "
          f"over {len(overhead)} calls (target p50 <= 50 ms) {'OK' if p50 <= 0.05 else 'MISSED'}")
    print(f"throughput: {args.samples} samples x {CALLS} calls at concurrency {args.concurrency}: {rate:.2f} samples/s "
          f"({rate * CALLS:.1f} calls/s); sandbox-worker bound {bound:.2f} samples/s: ratio {rate / bound:.2f}")


if __name__ == "__main__":
    main()
