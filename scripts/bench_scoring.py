"""Scoring throughput: skyeval's scoring (the CLI's process pool, and `env.score(ds)` on Ray
Data) vs a single-process math-verify loop.

MATH-500's reference solutions are repeated to --items items (default 4000) and scored
three ways in one run: the CLI pipeline's scoring pool (`pipeline.scoring_pool`: one worker
process per core fed from one queue; started and warmed up before timing), skyeval's Ray Data stage (`Env.score`, every core; Ray start-up,
dataset creation and one warm-up pass that imports math-verify in the workers happen
before timing; the result is materialised with `take_all()`), and a plain loop of
`math_verify.parse` + `verify` in this process (imported and warmed up before timing).
Prints items/s of each, their accuracies and the ratio. Target: >= 1.6x on 2 cores.

Two workloads: the reference solutions (right answers: skyeval's grader skips
math-verify when the extracted answer's text equals the gold's), and the same solutions
cross-wired to the next problem with a different answer (wrong answers). On wrong answers
skyeval gains from the cores and from its grader: two plain numbers are compared without
math-verify, a gold is parsed once per process (n samples share it), and math-verify
parses the extracted answer, not the whole generation. Each side runs --rounds times,
alternating, and the medians are compared; the 1-minute load average is printed before
and after, since the machine may be shared.

    SKYEVAL_DATA_DIR=../shared/data python scripts/bench_scoring.py --items 4000
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time

from skyeval import SkyEnvBuilder


def skyeval_rate(env, items: list[dict]) -> tuple[float, float]:
    """(items/s, accuracy) of `env.score` over a Ray Dataset of `items`."""
    from skyeval.backends.ray_session import dataset_of

    env.score(dataset_of(items[:256])).take_all()  # warm-up: starts Ray, imports math-verify in every worker
    ds = dataset_of(items).materialize()
    start = time.perf_counter()
    rows = env.score(ds).take_all()
    elapsed = time.perf_counter() - start
    return len(rows) / elapsed, sum(r["score"] or 0.0 for r in rows) / len(rows)


def pool_rate(env, items: list[dict]) -> tuple[float, float]:
    """(items/s, accuracy) of the CLI's scoring pool (one worker process per core)."""
    from skyeval.run.pipeline import scoring_pool

    scores: list[float] = []
    pool = scoring_pool(env)
    on_done = lambda row, result: scores.append(result["score"] or 0.0)  # noqa: E731
    for item in items[: 64 * pool.workers]:  # warm-up: every worker imports math-verify
        pool.submit(item, on_done)
    pool.drain()
    scores.clear()
    start = time.perf_counter()
    for item in items:
        pool.submit(item, on_done)
    pool.drain()
    elapsed = time.perf_counter() - start
    pool.close()
    return len(scores) / elapsed, sum(scores) / len(scores)


def math_verify_rate(items: list[dict]) -> tuple[float, float]:
    """(items/s, accuracy) of a single-process `parse` + `verify` loop."""
    from math_verify import parse, verify

    verify(parse("$1$"), parse("\\boxed{1}"))  # warm-up: lazy imports inside math-verify
    start = time.perf_counter()
    correct = sum(bool(verify(parse(f"\\boxed{{{it['expected']}}}"), parse(it["generation"]))) for it in items)
    elapsed = time.perf_counter() - start
    return len(items) / elapsed, correct / len(items)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    env = SkyEnvBuilder.build("math500")
    problems = env.load_problems()
    items = [{**p, "generation": env.reference_generation(p)} for p in problems]
    items = (items * math.ceil(args.items / len(items)))[: args.items]

    wrong = [{**it, "expected": cross_wired_answer(items, i)} for i, it in enumerate(items)]
    print(f"items: {len(items)} (MATH-500 reference solutions), cores: {os.cpu_count()}, "
          f"load average (1 min) {os.getloadavg()[0]:.2f}")
    for name, workload in (("right answers", items), ("wrong answers", wrong)):
        base, pool, sky = [], [], []
        for _ in range(args.rounds):
            base.append(math_verify_rate(workload))
            pool.append(pool_rate(env, workload))
            sky.append(skyeval_rate(env, workload))
        base_rate, base_acc = statistics.median(r for r, _ in base), base[0][1]
        print(f"[{name}] math-verify loop (1 process): {base_rate:8.1f} items/s  accuracy {base_acc:.4f}")
        for label, runs in (("CLI scoring pool", pool), ("env.score (Ray Data)", sky)):
            rate, acc = statistics.median(r for r, _ in runs), runs[0][1]
            rounds = ", ".join(f"{s / b:.2f}" for (s, _), (b, _) in zip(runs, base))
            print(f"[{name}] skyeval {label}: {rate:8.1f} items/s  accuracy {acc:.4f}  "
                  f"ratio {rate / base_rate:.2f}x (rounds: {rounds}; target >= 1.6x on 2 cores)")
    print(f"load average (1 min) after: {os.getloadavg()[0]:.2f}")


def cross_wired_answer(items: list[dict], i: int) -> str:
    """The answer of the next item whose answer differs from item i's."""
    for j in range(1, len(items)):
        candidate = items[(i + j) % len(items)]["expected"]
        if candidate != items[i]["expected"]:
            return candidate
    return items[i]["expected"]


if __name__ == "__main__":
    main()
