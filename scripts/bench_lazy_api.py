"""The Python API: small runs against the CLI, and the best-of-N example at scale.

    SKYEVAL_DATA_DIR=../shared/data python scripts/bench_lazy_api.py --vs-cli   # README block vs CLI
    python scripts/bench_lazy_api.py --problems 250000 --n 4     # 1M sample rows

`--vs-cli`: the README's Python block (read_dataset -> generate -> score -> mean -> save to
one parquet file; the reference backend) and `python -m skyeval.cli evaluate +env=math500
env.limit=K` (a fresh results dir each time), each as a fresh process, alternating, median
of 3 wall times at K = 10 and 500 problems. Targets: <= 1.5x the CLI at 10, <= 1.2x at 500.

Without it:
Synthetic `a+b` problems in a JSONL file, the reference backend, an exact-match scorer
(cheap, so the figures are the pipeline's own: reading, generation actors, scoring, the
groupby shuffle, part-file writes). Runs the seed's example lazily:

    ds = env.read_dataset(); scored = env.score(env.generate(ds))
    scored.mean("score"); scored.groupby("id").map_groups(best-of-n) (and the built-in
    groupby("id").max("score")); env.save(scored, ...)

and prints the wall time of each step, the driver's peak RSS and the peak RSS summed over
every process this run started (Ray's workers included), sampled every 0.2 s.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

from skyeval import SamplingParams, ScalingConfig
from skyeval.backends.reference import ReferenceConfig
from skyeval.envs.base import Env


class Sums(Env):
    """`a+b = ?`; the reference writes the right sum except for every 10th problem."""

    def to_problem(self, row, index):
        return {"id": str(index), "question": f"{row['a']}+{row['b']}", "expected": str(row["a"] + row["b"])}

    def reference_generation(self, problem):
        wrong = int(problem["id"]) % 10 == 0
        return f"The sum is \\boxed{{{int(problem['expected']) + wrong}}}"

    def score_item(self, item):
        return {"score": float(item["generation"].endswith(f"{{{item['expected']}}}"))}


class PeakRSS:
    """Peak of the summed RSS of this process and all its descendants."""

    def __init__(self) -> None:
        self.peak, self._stop = 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        me = psutil.Process()
        while not self._stop.wait(0.2):
            total = 0
            for proc in [me, *me.children(recursive=True)]:
                try:
                    total += proc.memory_info().rss
                except psutil.Error:
                    pass
            self.peak = max(self.peak, total)

    def __enter__(self) -> "PeakRSS":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


README_BLOCK = """\
from skyeval import ReferenceConfig, SkyEnvBuilder

env = SkyEnvBuilder.build("math500", {{"limit": {limit}}})
env.setup(model_config=ReferenceConfig())
ds = env.read_dataset()
scored = env.score(env.generate(ds))
print(scored.mean(on="score"))
env.save(scored, "math500.parquet", format="parquet")
"""


def wall(argv: list[str], cwd: str) -> float:
    start = time.monotonic()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    elapsed = time.monotonic() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{done.stderr[-3000:]}")
    return elapsed


def vs_cli(rounds: int) -> None:
    """The README block vs the CLI, fresh processes, median of `rounds`."""
    targets = {10: 1.5, 500: 1.2}
    print(f"README Python block vs CLI (math500, reference backend), median of {rounds}, "
          f"load average {os.getloadavg()[0]:.2f}")
    for limit, target in targets.items():
        api, cli = [], []
        with tempfile.TemporaryDirectory() as tmp:
            script = Path(tmp, "readme_block.py")
            script.write_text(README_BLOCK.format(limit=limit))
            for round_ in range(rounds):
                api.append(wall([sys.executable, str(script)], tmp))
                cli.append(wall([sys.executable, "-m", "skyeval.cli", "evaluate", "+env=math500", f"env.limit={limit}",
                                 f"logging.results_dir={tmp}/cli{round_}"], tmp))
        ratio = statistics.median(api) / statistics.median(cli)
        print(f"  {limit:4d} problems: Python {statistics.median(api):6.2f} s  CLI {statistics.median(cli):6.2f} s  "
              f"ratio {ratio:.2f}x (target <= {target}x: {'met' if ratio <= target else 'NOT met'}); "
              f"rounds Python {', '.join(f'{t:.2f}' for t in api)}; CLI {', '.join(f'{t:.2f}' for t in cli)}")
    print(f"load average after {os.getloadavg()[0]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problems", type=int, default=250_000)
    parser.add_argument("--n", type=int, default=4)
    parser.add_argument("--vs-cli", action="store_true", help="time the README Python block against the CLI")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.vs_cli:
        vs_cli(args.rounds)
        return
    gib = 1 << 30
    with tempfile.TemporaryDirectory() as tmp, PeakRSS() as peak:
        folder = Path(tmp)
        with (folder / "sums.jsonl").open("w") as fh:
            for i in range(args.problems):
                fh.write(json.dumps({"a": i, "b": i % 97}) + "\n")
        env = Sums(data_dir=tmp, local_files="sums.jsonl")
        env.setup(ReferenceConfig(), ScalingConfig(), sampling_params=SamplingParams(n=args.n))
        steps = {}
        start = time.monotonic()
        ds = env.read_dataset()
        scored = env.score(env.generate(ds))
        steps["build (lazy)"] = time.monotonic() - start
        t = time.monotonic()
        mean = scored.mean("score")
        steps["mean"] = time.monotonic() - t
        t = time.monotonic()
        best = scored.groupby("id").map_groups(
            lambda g: {"id": [g["id"].iloc[0]], "best": [g["score"].fillna(0.0).max()]}, batch_format="pandas",
        ).materialize()  # one row per problem: small
        best_mean, groups = best.mean("best"), best.count()
        steps["groupby().map_groups() best-of-n"] = time.monotonic() - t
        t = time.monotonic()
        aggregated = scored.groupby("id").max("score").mean("max(score)")
        steps["groupby().max() best-of-n"] = time.monotonic() - t
        assert abs(aggregated - best_mean) < 1e-9, (aggregated, best_mean)
        t = time.monotonic()
        out = env.save(scored, folder / "run")
        steps["save"] = time.monotonic() - t
        written = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
        logs = (out / "logs.txt").read_text().strip().replace("\n", "; ")
        total = time.monotonic() - start
    rows = args.problems * args.n
    print(f"{rows} sample rows ({args.problems} problems x n={args.n})")
    for name, seconds in steps.items():
        print(f"  {name:32s} {seconds:8.1f} s")
    print(f"  total wall {total:.1f} s; mean score {mean:.4f}; best-of-{args.n} {best_mean:.4f} over {groups} problems")
    print(f"  save: {logs}; {written / 2**20:.0f} MiB written")
    print(f"  driver peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB; "
          f"all processes peak {peak.peak / gib:.2f} GiB")


if __name__ == "__main__":
    main()
