"""One run unsharded against the same run as a SLURM job array of `--shards` shards
(hydra/launcher=slurm, shard.count=S, 'shard.index=range(0,S)'), side by side: N synthetic
math problems with L-char reference generations (scripts/bench_scale.py's data) through
`evaluate` with the reference backend.

Reports wall time (submission to merged summary.json), samples/s, the peak RSS of one
driver (the unsharded CLI; for the array, the largest of the shard jobs' processes), the
peak RSS of all processes of the run summed, and checks that both give the same counts and
metrics. Needs a SLURM (`sbatch`); on a test machine start one with
../shared/tools/local_slurm.sh start (root).

    python scripts/bench_shards.py --problems 100000 --chars 4096 --shards 4
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scale import GIB, REPO, run_cli, write_problems  # noqa: E402


def run_array(data_dir: Path, out: Path, shards: int, partition: str, cpus: int, mem_gb: int) -> dict:
    """The array through the submitit launcher; RSS sampled over every process whose command
    line names `out` (the launcher and the jobs' `submitit.core._submit <out>/.submitit/..`)."""
    import psutil

    env = {**os.environ, "PYTHONPATH": str(REPO), "SKYEVAL_DATA_DIR": str(data_dir)}
    cmd = [sys.executable, "-m", "skyeval.cli", "evaluate", "-m", "+env=math500", "model_config=reference",
           f"data_dir={data_dir}", f"logging.results_dir={out}", "hydra/launcher=slurm",
           f"hydra.launcher.partition={partition}", f"hydra.launcher.cpus_per_task={cpus}",
           f"hydra.launcher.mem_gb={mem_gb}", f"shard.count={shards}", f"shard.index=range(0,{shards})"]
    start = time.perf_counter()
    launcher = subprocess.Popen(cmd, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    job_peak = all_peak = launcher_peak = 0
    while launcher.poll() is None:
        total = 0
        for proc in psutil.process_iter(["pid", "cmdline", "memory_info"]):
            line = " ".join(proc.info["cmdline"] or [])
            if str(out) not in line or proc.info["memory_info"] is None:
                continue
            rss = proc.info["memory_info"].rss
            tree = rss
            try:
                tree += sum(c.memory_info().rss for c in proc.children(recursive=True))
            except psutil.NoSuchProcess:
                pass
            total += tree
            if proc.pid == launcher.pid:
                launcher_peak = max(launcher_peak, rss)
            elif "submitit" in line:
                job_peak = max(job_peak, rss)
        all_peak = max(all_peak, total)
        time.sleep(0.2)
    wall = time.perf_counter() - start
    output = launcher.stdout.read()
    if launcher.returncode != 0:
        raise RuntimeError(f"array failed ({launcher.returncode}):\n{output[-3000:]}")
    run_dir = next(p for p in out.iterdir() if p.is_dir() and not p.name.startswith("."))
    summary = json.loads((run_dir / "summary.json").read_text())
    return {"wall_s": wall, "samples": summary["counts"]["samples"], "summary": summary,
            "driver_peak": job_peak, "launcher_peak": launcher_peak, "all_peak": all_peak}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problems", type=int, default=100_000)
    parser.add_argument("--chars", type=int, default=4096, help="characters per reference generation")
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--partition", default="debug")
    parser.add_argument("--cpus-per-task", type=int, default=1)
    parser.add_argument("--mem-gb", type=int, default=4)
    parser.add_argument("--workdir", default=None, help="where data and run folders go (default: a temp dir)")
    args = parser.parse_args()
    if shutil.which("sbatch") is None:
        sys.exit("bench_shards: no sbatch on PATH (start a SLURM first, e.g. ../shared/tools/local_slurm.sh start)")
    work = Path(args.workdir or tempfile.mkdtemp(prefix="bench_shards_"))
    data = work / "data"
    write_problems(data, args.problems, args.chars)
    whole = run_cli(REPO, data, work / "whole")
    whole_summary = json.loads(next((work / "whole").glob("*/summary.json")).read_text())
    array = run_array(data, work / "array", args.shards, args.partition, args.cpus_per_task, args.mem_gb)
    same = (array["summary"]["metrics"] == whole_summary["metrics"]
            and {k: v for k, v in array["summary"]["counts"].items() if k != "resumed"}
            == {k: v for k, v in whole_summary["counts"].items() if k != "resumed"})
    print(f"{args.problems:,} problems x {args.chars} chars, reference backend, {os.cpu_count()} cores")
    print("| run | wall s | samples/s | driver peak RSS GiB | all processes GiB |")
    print("|---|---|---|---|---|")
    print(f"| unsharded | {whole['wall_s']:.1f} | {whole['samples'] / whole['wall_s']:,.0f} | "
          f"{whole['driver_peak'] / GIB:.2f} | {whole['all_peak'] / GIB:.2f} |")
    print(f"| SLURM array, {args.shards} shards | {array['wall_s']:.1f} | {array['samples'] / array['wall_s']:,.0f} | "
          f"{array['driver_peak'] / GIB:.2f} per job (launcher {array['launcher_peak'] / GIB:.2f}) | "
          f"{array['all_peak'] / GIB:.2f} |")
    print(f"same counts and metrics: {same}")
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
