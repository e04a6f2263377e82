"""skyeval as an RL reward: throughput against a hand-written reward, and the reward server.

1. 4,096 MATH-500-style completions (half right, half wrong, each with a think block that
   holds a wrong intermediate answer), rewarded in trainer-sized batches through the TRL
   adapter (`skyeval.reward.trl("math500")`, its pool started before timing, as in
   training where it is reused across steps), against a single-process math-verify loop
   (`parse`/`verify` per completion: the reward users write into training scripts). Also
   the adapter on one worker, to tell the pool's share from the grader's own. Rounds
   alternate which side goes first; medians are compared. Agreement with the intended
   labels is printed for both (the hand-written loop grades think blocks too).
2. The reward server (`skyeval serve-reward +env=math500`, a subprocess on 127.0.0.1):
   requests/s and p50/p99 latency for batches of 64 from `--clients` concurrent clients.

Run: SKYEVAL_DATA_DIR=../shared/data python scripts/bench_reward.py [--rounds 3] [--batch 256]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def completions(count: int, seed: int = 0) -> tuple[list[str], list[str], list[float], list[str]]:
    """(completions, golds, intended labels, prompts) from MATH-500's problems."""
    from skyeval.envs.registry import SkyEnvBuilder

    problems = SkyEnvBuilder.build("math500").load_problems()
    rng = random.Random(seed)
    texts, golds, labels, prompts = [], [], [], []
    for i in range(count):
        problem = problems[i % len(problems)]
        gold, right = problem["expected"], i % 2 == 0
        decoy = rng.choice(["17", "\\frac{3}{4}", "2\\sqrt{2}", "-1", "x+1"])
        thought = (f"<think>Let me work through this. {problem['question'][:300]} A first attempt gives "
                   f"\\boxed{{{decoy}}}, but let me check that again carefully.</think>\n")
        answer = gold if right else f"{gold}+1" if rng.random() < 0.5 else decoy
        if not right and answer == gold:
            answer = f"{gold}+2"
        texts.append(thought + f"Putting it together, the final answer is $\\boxed{{{answer}}}$.")
        golds.append(gold)
        labels.append(1.0 if right else 0.0)
        prompts.append(problem["question"])
    return texts, golds, labels, prompts


def handwritten_reward(completions: list[str], answer: list[str], **kwargs) -> list[float]:
    """What users paste into training scripts: math-verify on each completion, one process."""
    from math_verify import parse, verify

    rewards = []
    for completion, gold in zip(completions, answer):
        try:
            rewards.append(float(verify(parse(f"${gold}$"), parse(completion))))
        except Exception:  # noqa: BLE001 - as user code does
            rewards.append(0.0)
    return rewards


def cpu_seconds() -> float:
    """CPU time of this process and its children (the scoring workers) so far."""
    import psutil

    total = 0.0
    for process in [psutil.Process(), *psutil.Process().children(recursive=True)]:
        try:
            times = process.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def timed(fn, texts: list[str], golds: list[str], prompts: list[str], batch: int) -> tuple[float, float, list[float]]:
    """(wall s, CPU s, rewards) of rewarding `texts` in calls of `batch`."""
    start, cpu, out = time.perf_counter(), cpu_seconds(), []
    for at in range(0, len(texts), batch):
        out += fn(prompts=prompts[at:at + batch], completions=texts[at:at + batch], answer=golds[at:at + batch])
    return time.perf_counter() - start, cpu_seconds() - cpu, out


def bench_adapter(args: argparse.Namespace) -> dict:
    from skyeval.reward import trl

    texts, golds, labels, prompts = completions(args.completions)
    cores = len(os.sched_getaffinity(0))
    pooled, single = trl("math500", workers=cores), trl("math500", workers=1)
    for fn in (pooled, single, handwritten_reward):  # warm up: pools started, math-verify imported
        timed(fn, texts[:64], golds[:64], prompts[:64], 64)
    times: dict[str, list[float]] = {"skyeval": [], "skyeval_1worker": [], "handwritten": []}
    cpu: dict[str, list[float]] = {name: [] for name in times}
    results = {}
    sides = [("skyeval", pooled), ("skyeval_1worker", single), ("handwritten", handwritten_reward)]
    for round_ in range(args.rounds):
        for name, fn in sides[round_ % 3:] + sides[:round_ % 3]:
            elapsed, used, results[name] = timed(fn, texts, golds, prompts, args.batch)
            times[name].append(elapsed)
            cpu[name].append(used)
    pooled.reward.close()
    single.reward.close()
    median = {name: statistics.median(values) for name, values in times.items()}
    print(f"\n== TRL adapter vs a hand-written math-verify reward: {len(texts)} completions, batches of "
          f"{args.batch}, {cores} cores, {args.rounds} rounds, load average {os.getloadavg()[0]:.1f}")
    for name in times:
        agree = sum((r > 0.5) == (lab > 0.5) for r, lab in zip(results[name], labels)) / len(labels)
        print(f"  {name:16s} median {median[name]:7.2f} s  {len(texts) / median[name]:8.1f} rewards/s  "
              f"CPU {statistics.median(cpu[name]):6.2f} s  (rounds: {', '.join(f'{t:.2f}' for t in times[name])})  "
              f"agrees with labels: {agree:.1%}")
    speedup = median["handwritten"] / median["skyeval"]
    print(f"  speedup skyeval/handwritten: {speedup:.2f}x   (1 worker: "
          f"{median['handwritten'] / median['skyeval_1worker']:.2f}x; pool over 1 worker: "
          f"{median['skyeval_1worker'] / median['skyeval']:.2f}x)")
    return {"median_s": median, "speedup": speedup}


def bench_server(args: argparse.Namespace) -> dict:
    import socket

    texts, golds, _, prompts = completions(64 * 16, seed=1)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "skyeval.cli", "serve-reward", "+env=math500", f"port={port}"],
                            cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_healthy(port, proc)
        bodies = []
        for at in range(0, len(texts), 64):
            query = [p + t for p, t in zip(prompts[at:at + 64], texts[at:at + 64])]
            bodies.append(json.dumps({"query": query, "prompts": prompts[at:at + 64], "labels": golds[at:at + 64]}).encode())
        latencies: list[float] = []
        lock = threading.Lock()
        counter = iter(range(args.requests))

        def client() -> None:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
            while (i := next(counter, None)) is not None:
                start = time.perf_counter()
                conn.request("POST", "/get_reward", body=bodies[i % len(bodies)], headers={"Content-Type": "application/json"})
                response = conn.getresponse()
                response.read()
                if response.status != 200:
                    raise RuntimeError(f"server answered {response.status}")
                with lock:
                    latencies.append(time.perf_counter() - start)
            conn.close()

        for _ in range(2):  # warm up
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
            conn.request("POST", "/get_reward", body=bodies[0], headers={"Content-Type": "application/json"})
            conn.getresponse().read()
            conn.close()
        start = time.perf_counter()
        threads = [threading.Thread(target=client) for _ in range(args.clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - start
    finally:
        proc.terminate()
        proc.wait(120)
    latencies.sort()
    p50, p99 = latencies[len(latencies) // 2], latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    print(f"\n== reward server (math500), batches of 64, {args.clients} clients, {len(latencies)} requests, "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"  {len(latencies) / elapsed:.1f} requests/s  ({64 * len(latencies) / elapsed:.0f} rewards/s)  "
          f"latency p50 {p50 * 1000:.0f} ms  p99 {p99 * 1000:.0f} ms")
    return {"requests_per_s": len(latencies) / elapsed, "p50_s": p50, "p99_s": p99}


def _wait_healthy(port: int, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("the reward server exited at start")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/health")
            if conn.getresponse().status == 200:
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("the reward server did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--completions", type=int, default=4096)
    parser.add_argument("--batch", type=int, default=256, help="completions per reward call (a trainer step)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=256, help="server requests of 64 completions")
    parser.add_argument("--clients", type=int, default=8)
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    bench_adapter(args)
    bench_server(args)


if __name__ == "__main__":
    main()
