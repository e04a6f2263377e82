"""Decontamination and dedup at scale: --rows rows (default 1,000,000) of about 1 KB
against every math and code benchmark of the local mirror, the Qwen2.5-Math suite and
IFEval, in one run.

The rows are written to a JSONL file first (untimed): each is sentences drawn at random
from MMLU-Pro's model outputs (reasoning text about maths, science and code: n-gram
lookups hit the benchmark vocabulary, while no benchmark text is copied), cut to ~1 KB; one row in
1000 has a benchmark problem planted in it (from MATH-500, the Qwen2.5-Math suite and
IFEval in turn), one in 100 is a copy of an earlier row with
its case changed (an exact duplicate). Then `curate.py decontaminate`'s code runs on it
(index build included in the time), then `dedup`. Printed: rows/s, wall time, rows
removed (and whether every planted problem was), the CPU time used (this process and its
workers: rows per CPU-second is what an idle machine would give per core, since the load
of a shared machine stretches wall time), the seconds each check took (n-gram and
paraphrase, summed over the workers), and the peak RSS of this process plus its worker
processes (sampled every 0.2 s). Targets with the paraphrase check on (the default):
>= 10,000 rows/s and <= 2 GiB on 2 cores. The 1-minute load average is printed before and
after (the machine may be shared).

    SKYEVAL_DATA_DIR=../shared/data python scripts/bench_decontaminate.py [--rows 1000000] [--no-paraphrase]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import tempfile
import threading
import time
from pathlib import Path

MATH_AND_CODE = ["aime24", "aime25", "amc23", "math500", "gsm8k", "minervamath", "olympiadbench", "humaneval",
                 "mbpp", "leetcode", "codeforces", "code_contests", "apps", "livecodebench", "taco", "omni_math"]
QWEN_SUITE_AND_IFEVAL = ["college_math", "gaokao2023en", "gaokao2024_I", "gaokao2024_II", "gaokao2024_mix",
                         "gaokao_math_cloze", "gaokao_math_qa", "cmath", "cn_middle_school", "svamp", "asdiv", "mawps",
                         "carp_en", "sat_math", "mmlu_stem", "aqua", "ifeval"]
PLANTED_FROM = ["math500", "svamp", "college_math", "ifeval", "gaokao2023en", "mmlu_stem"]


class PeakRSS:
    """The largest summed RSS of this process and its children, sampled in a thread."""

    def __init__(self) -> None:
        import psutil

        self.process, self.peak, self._stop = psutil.Process(), 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                procs = [self.process, *self.process.children(recursive=True)]
                self.peak = max(self.peak, sum(p.memory_info().rss for p in procs if p.is_running()))
            except Exception:  # noqa: BLE001 - a child that exited between listing and reading
                pass
            self._stop.wait(0.2)

    def __enter__(self) -> "PeakRSS":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def sentences() -> list[str]:
    import zipfile

    data = Path(os.environ["SKYEVAL_DATA_DIR"])
    with zipfile.ZipFile(data / "mmlu_pro" / "model_outputs_Meta-Llama-3_1-8B-Instruct_5shots.zip") as z:
        rows = json.loads(z.read(z.namelist()[0]))
    texts = [r["generated_text"] for r in rows if r.get("generated_text")]
    return [s.strip() for t in texts for s in re.split(r"(?<=[.!?])\s+", t) if 20 <= len(s.strip()) <= 400]


def make_rows(path: Path, count: int, seed: int = 0) -> tuple[set[int], int]:
    """Write the input; returns (ids of the rows holding a planted benchmark problem,
    planted exact duplicates)."""
    from skyeval.envs.registry import SkyEnvBuilder

    rng = random.Random(seed)
    pool = sentences()
    problems = [[p["question"] for p in SkyEnvBuilder.build(name).iter_problems()] for name in PLANTED_FROM]
    planted: set[int] = set()
    dups = 0
    recent: list[tuple[str, bool]] = []
    with path.open("w", encoding="utf-8") as fh:
        for i in range(count):
            if i % 100 == 99 and recent:
                text, contaminated = rng.choice(recent)
                text, dups = text.upper(), dups + 1
                if contaminated:
                    planted.add(i)
            else:
                parts, size = [], 0
                while size < 1000:
                    parts.append(rng.choice(pool))
                    size += len(parts[-1]) + 1
                text = " ".join(parts)[:1000]
                if i % 1000 == 500:
                    text = f"{text[:300]} {rng.choice(problems[(i // 1000) % len(problems)])}"
                    planted.add(i)
                recent = (recent + [(text, i in planted)])[-50:]
            fh.write(json.dumps({"id": i, "problem": text}) + "\n")
    return planted, dups


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--workers", type=int, default=0, help="worker processes (default: one per core)")
    parser.add_argument("--skip-dedup", action="store_true")
    parser.add_argument("--no-paraphrase", action="store_true", help="n-gram checks only")
    args = parser.parse_args()

    from skyeval.curation.decontaminate import BenchmarkIndex, decontaminate, report_table
    from skyeval.curation.dedup import dedup

    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "rows.jsonl"
        started = time.perf_counter()
        planted, dups = make_rows(source, args.rows)
        print(f"input: {args.rows} rows, {source.stat().st_size / 1e9:.2f} GB ({len(planted)} rows with a planted problem, "
              f"{dups} exact duplicates), written in {time.perf_counter() - started:.0f} s (untimed)")
        print(f"cores {os.cpu_count()}, load average before {os.getloadavg()[0]:.1f}")

        names = [n for n in MATH_AND_CODE + QWEN_SUITE_AND_IFEVAL if _readable(n)]
        with PeakRSS() as rss:
            cpu, started = _cpu_seconds(), time.perf_counter()
            index = BenchmarkIndex.from_envs(names, **({"paraphrase": None} if args.no_paraphrase else {}))
            built = time.perf_counter() - started
            report = decontaminate(source, Path(tmp) / "decon", index, workers=args.workers)
            wall, cpu = time.perf_counter() - started, _cpu_seconds() - cpu
        print(report_table(report))
        removed = {json.loads(line)["id"] for line in (Path(tmp) / "decon" / "removed.jsonl").open()}
        print(f"index: {report['index']['ngrams']:,} distinctive n-grams of {sum(report['index']['problems'].values())} "
              f"problems; rows with a planted problem found {len(planted & removed)} of {len(planted)}, "
              f"other rows removed {len(removed - planted)}")
        print(f"decontaminate: {args.rows:,} rows in {wall:.1f} s wall (index {built:.1f} s) = {args.rows / wall:,.0f} "
              f"rows/s (target >= 10,000); CPU {cpu:.0f} s = {args.rows / cpu:,.0f} rows per CPU-second, "
              f"{2 * args.rows / cpu:,.0f} rows/s on 2 idle cores; peak RSS {rss.peak / 2**30:.2f} GiB (target <= 2)")
        costs = report["check_seconds"]
        print("checks (seconds summed over workers): " + ", ".join(
            f"{name} {seconds:.1f} s = {1e6 * seconds / args.rows:.0f} us/row" for name, seconds in costs.items()))
        if not args.skip_dedup:
            with PeakRSS() as rss:
                cpu, started = _cpu_seconds(), time.perf_counter()
                dd = dedup(Path(tmp) / "decon" / "kept.jsonl", Path(tmp) / "dedup", workers=args.workers)
                wall, cpu = time.perf_counter() - started, _cpu_seconds() - cpu
            print(f"dedup: {dd['rows_in']:,} rows in {wall:.1f} s wall = {dd['rows_in'] / wall:,.0f} rows/s; CPU {cpu:.0f} s "
                  f"= {dd['rows_in'] / cpu:,.0f} rows per CPU-second; exact {dd['exact_duplicates']} (planted {dups}), "
                  f"near {dd['near_duplicates']}; peak RSS {rss.peak / 2**30:.2f} GiB")
        print(f"load average after {os.getloadavg()[0]:.1f}")


def _cpu_seconds() -> float:
    """User + system time of this process and its finished children (the worker pools)."""
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _readable(name: str) -> bool:
    """Benchmarks the mirror lacks (livecodebench, taco, omni_math here) are reported, not fatal."""
    from skyeval.envs.registry import SkyEnvBuilder

    try:
        next(iter(SkyEnvBuilder.build(name).iter_problems()), None)
        return True
    except Exception as err:  # noqa: BLE001
        print(f"not checked: {name} ({type(err).__name__}: {err})")
        return False


if __name__ == "__main__":
    main()
