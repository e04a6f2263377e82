"""Scale of the CLI's pipeline: N synthetic math problems, each with an L-char reference
generation, through `evaluate` with the reference backend (generate, score, write).

Reports wall time, samples/s, the driver's peak RSS, the peak RSS of all the processes it
started (summed over the process tree, sampled every 0.2 s) and the bytes written, for each
N; with --baseline-commit, the same at the first N for that commit of skyeval (checked out
with `git archive` into a temp dir), in the same run, and the ratios.

Targets (issue 13): driver peak RSS <= 1 GiB and flat (1M within 15% of 100k); all
processes <= 3 GiB; samples/s >= the pre-streaming pipeline's at 100k.

    python scripts/bench_scale.py --sizes 100000,1000000 --chars 4096 --baseline-commit 8088b14
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GIB = 2**30


def write_problems(data_dir: Path, count: int, chars: int) -> None:
    """`math500/test.jsonl` in the mirror's layout: each solution is ~`chars` long and ends in its answer."""
    rng = random.Random(0)
    words = ["so", "the", "sum", "is", "therefore", "we", "get", "x", "+", "=", "and", "then"]
    filler = " ".join(rng.choice(words) for _ in range(chars // 3))[: max(chars - 40, 0)]
    (data_dir / "math500").mkdir(parents=True, exist_ok=True)
    with (data_dir / "math500" / "test.jsonl").open("w") as fh:
        for i in range(count):
            answer = str(rng.randrange(10**6))
            fh.write(json.dumps({"problem": f"Problem {i}: compute the value.", "answer": answer,
                                 "solution": f"{filler}\n\nThe answer is $\\boxed{{{answer}}}$.",
                                 "unique_id": f"synthetic/{i}.json"}) + "\n")


def tree_rss(pid: int) -> tuple[int, int]:
    """RSS of `pid` and of it plus all its descendants, in bytes."""
    import psutil

    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0, 0
    total, own = 0, 0
    for proc in procs:
        try:
            rss = proc.memory_info().rss
        except psutil.NoSuchProcess:
            continue
        total += rss
        own = rss if proc.pid == pid else own
    return own, total


def run_cli(pythonpath: Path, data_dir: Path, out: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(pythonpath), "SKYEVAL_DATA_DIR": str(data_dir)}
    cmd = [sys.executable, "-m", "skyeval.cli", "evaluate", "+env=math500", "model_config=reference",
           f"data_dir={data_dir}", f"logging.results_dir={out}"]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=pythonpath, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    driver_peak = all_peak = 0
    while proc.poll() is None:
        own, total = tree_rss(proc.pid)
        driver_peak, all_peak = max(driver_peak, own), max(all_peak, total)
        time.sleep(0.2)
    wall = time.perf_counter() - start
    output = proc.stdout.read()
    if proc.returncode != 0:
        raise RuntimeError(f"CLI failed ({proc.returncode}):\n{output[-3000:]}")
    run_dir = next(p for p in out.iterdir() if p.is_dir())
    summary = json.loads((run_dir / "summary.json").read_text())
    written = sum(f.stat().st_size for f in run_dir.rglob("*") if f.is_file())
    return {"wall_s": wall, "samples": summary["counts"]["samples"], "accuracy": summary["metrics"]["accuracy"],
            "driver_peak": driver_peak, "all_peak": all_peak, "written": written}


def checkout(commit: str, into: Path) -> Path:
    archive = subprocess.run(["git", "archive", commit], cwd=REPO, capture_output=True, check=True).stdout
    into.mkdir(parents=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def line(label: str, n: int, r: dict) -> str:
    return (f"| {label} | {n:,} | {r['wall_s']:.1f} | {r['samples'] / r['wall_s']:,.0f} | {r['driver_peak'] / GIB:.2f} | "
            f"{r['all_peak'] / GIB:.2f} | {r['written'] / GIB:.2f} | {r['accuracy']} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100000,1000000", help="comma-separated problem counts")
    parser.add_argument("--chars", type=int, default=4096, help="characters per reference generation")
    parser.add_argument("--baseline-commit", default=None, help="also run this commit at the first size")
    parser.add_argument("--workdir", default=None, help="where data and run folders go (default: a temp dir)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    work = Path(args.workdir or tempfile.mkdtemp(prefix="skyeval_bench_scale_"))
    results = {}
    print("| code | problems | wall s | samples/s | driver peak GiB | all processes GiB | written GiB | accuracy |")
    print("|---|---|---|---|---|---|---|---|")
    try:
        for i, size in enumerate(sizes):
            data = work / f"data_{size}"
            write_problems(data, size, args.chars)
            if i == 0 and args.baseline_commit:
                base = run_cli(checkout(args.baseline_commit, work / "baseline"), data, work / f"out_base_{size}")
                print(line(args.baseline_commit, size, base), flush=True)
                results["baseline"] = base
            results[size] = run_cli(REPO, data, work / f"out_{size}")
            print(line("this tree", size, results[size]), flush=True)
            shutil.rmtree(work / f"out_{size}", ignore_errors=True)
            shutil.rmtree(data, ignore_errors=True)
        first, last = results[sizes[0]], results[sizes[-1]]
        print(f"\ndriver peak RSS, {sizes[-1]:,} vs {sizes[0]:,}: {last['driver_peak'] / first['driver_peak']:.2f}x (target <= 1.15)")
        if "baseline" in results:
            base = results["baseline"]
            ratio = (first["samples"] / first["wall_s"]) / (base["samples"] / base["wall_s"])
            print(f"samples/s at {sizes[0]:,} vs {args.baseline_commit}: {ratio:.2f}x (target >= 1.0); "
                  f"driver peak RSS {first['driver_peak'] / base['driver_peak']:.2f}x")
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
