"""The views of a run folder that holds more than its summary selects (a smaller re-run):
compare, the viewer and the trackers' table, reading the summary's selection side by side
with reading every record of the folder.

Writes two run folders of P problems x 8 samples (default 30,000: 240k records each, a
~600-character generation per sample), whose summaries select P/2 problems x n=4 (a
quarter: 60k records), and the same two folders with summaries that select everything
(the baseline: what the views read before). Prints, per view, wall time and Python peak
memory (tracemalloc, a second call), and the records each read.

Run: python scripts/bench_views.py [--problems 30000]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import tracemalloc
from pathlib import Path

SAMPLES = 8


def write_folder(path: Path, problems: int, seed: int, select: bool) -> None:
    """A run folder as `evaluate` writes it; its summary selects problems < P/2 and n = 4
    (`select`), else all of it."""
    import random

    rng = random.Random(seed)
    for kind in ("generations", "scores", "failures", "shards"):
        (path / kind).mkdir(parents=True, exist_ok=True)
    filler = "Let me think step by step about this problem. " * 12
    with (path / "generations" / "part-00000.jsonl").open("w") as gens, \
            (path / "scores" / "part-00000.jsonl").open("w") as scores, \
            (path / "failures" / "part-00000.jsonl").open("w") as failures:
        for p in range(problems):
            for i in range(SAMPLES):
                if rng.random() < 0.01:
                    failures.write(json.dumps({"id": str(p), "sample_idx": i, "stage": "generate",
                                               "error_type": "EndpointError", "message": "closed"}) + "\n")
                    continue
                right = rng.random() < 0.6
                usage = {"prompt_tokens": 80, "completion_tokens": 300}
                gens.write(json.dumps({"id": str(p), "sample_idx": i, "prompt": f"Problem {p}: solve it.",
                                       "generation": f"{filler}\\boxed{{{p if right else -1}}}",
                                       "finish_reason": "stop", "usage": usage}) + "\n")
                scores.write(json.dumps({"id": str(p), "sample_idx": i, "score": float(right),
                                         "extracted": str(p if right else -1), "expected": str(p),
                                         "finish_reason": "stop", "usage": usage}) + "\n")
    with (path / "scores" / "per_problem-part-00001.jsonl").open("w") as rows:
        for p in range(problems // 2 if select else problems):
            rows.write(json.dumps({"id": str(p)}) + "\n")
    n = 4 if select else SAMPLES
    summary = {"env": "gsm8k", "model": f"model-{seed}", "stage": "evaluate", "status": "complete",
               "counts": {"problems": problems // 2, "samples": problems // 2 * n},
               "metrics": {"accuracy": 0.6}, "config": {"sampling_params": {"n": n, "temperature": 0.6}}}
    (path / "summary.json").write_text(json.dumps(summary))


def measure(name: str, fn) -> None:
    """Wall time of one call, then Python peak memory of another under tracemalloc (which slows it)."""
    start = time.perf_counter()
    count = fn()
    elapsed = time.perf_counter() - start
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(f"  {name:<34} {elapsed:7.2f} s  {peak / 2**20:7.1f} MiB peak  ({count} records)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", type=int, default=30_000)
    args = parser.parse_args()

    from skyeval.report.compare import compare_runs
    from skyeval.report.runs import RunInfo
    from skyeval.report.viewer import write_viewer
    from skyeval.run import trackers

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        start = time.perf_counter()
        for select in (True, False):
            for seed in (1, 2):
                write_folder(root / f"{'sel' if select else 'all'}{seed}", args.problems, seed, select)
        print(f"four folders of {args.problems * SAMPLES} records each; the summaries select "
              f"{args.problems // 2} problems x n=4 ({args.problems // 2 * 4} records), or everything; "
              f"written in {time.perf_counter() - start:.1f} s")
        for label, prefix in (("the summary's selection", "sel"), ("the whole folder (before)", "all")):
            a, b = root / f"{prefix}1", root / f"{prefix}2"
            print(f"reading {label}:")
            measure("compare", lambda: compare_runs(a, b)["matched"]["samples"])
            out = root / f"viewer-{prefix}"

            def viewer() -> int:
                write_viewer([RunInfo.load(a)], ["a"], out)
                index = (out / "data" / "index.js").read_text().split("=", 1)[1].rstrip().rstrip(";")
                return json.loads(index)["runs"][0]["samples"]

            measure("viewer (write_viewer, one run)", viewer)
            measure("trackers (sample_rows)", lambda: sum(1 for _ in trackers.sample_rows(a)))

if __name__ == "__main__":
    main()
