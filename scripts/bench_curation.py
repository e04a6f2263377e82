"""The Sky-T1 recipe of docs/curation.md at scale, timed step by step, with loopback servers.

Runs the recipe block of docs/curation.md as written (bash) on --problems GSM8K problems x
n=4 from the local mirror ($SKYEVAL_DATA_DIR), each `python` step under `/usr/bin/time -v`
(wall seconds and peak resident memory of the step's process), with two loopback
OpenAI-compatible servers (tests/backends/fault_server.py) answering at once: the
sampling model (four different traces per problem, one wrong: the prompt carries the gold)
and the second model (rewrites, difficulty labels). Then:

- runs the recipe again and counts the requests each server got (target: 0);
- plants 3 MATH-500 problems into the SFT export in both formats and decontaminates it
  (target: 3 of 3 removed), and dedups the sampled SFT export (target: no distinct
  response collapsed: every row kept);
- times `sft` on Ray (SKYEVAL_DATASET_ENGINE=ray) beside the default in-process run, the
  ratio showing what starting Ray costs a curation step of this size.

    SKYEVAL_DATA_DIR=../shared/data python scripts/bench_curation.py --problems 1000

Say the machine's load (printed before and after) when quoting the figures.
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
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from skyeval.envs.registry import SkyEnvBuilder  # noqa: E402
from tests.curation.recipe_models import REWRITE, SAMPLES, recipe, recipe_env  # noqa: E402

SERVER = REPO / "tests" / "backends" / "fault_server.py"
# every `python` of the recipe under /usr/bin/time: one record per step in $BENCH_TIMES
TIMED = """python() {
  /usr/bin/time -f "%e %M %U %S" -o "$BENCH_TIMES.one" "$BENCH_PYTHON" "$@"
  echo "$(cat "$BENCH_TIMES.one") $*" >> "$BENCH_TIMES"
}
"""


def start_server(*args: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, str(SERVER), "--port", "0", *args], stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip()
    if not line.startswith("READY "):
        proc.kill()
        raise RuntimeError(f"fault server did not start: {line!r}")
    return proc, line.split(" ", 1)[1]


def requests_seen(url: str) -> int:
    with urllib.request.urlopen(url.removesuffix("/v1") + "/admin/stats", timeout=30) as response:
        return json.load(response)["requests"]


def run(work: Path, env: dict[str, str], times: Path) -> list[tuple[str, float, float, float]]:
    """The recipe once; (step, wall s, peak MiB, cpu s) of each `python` step."""
    times.unlink(missing_ok=True)
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    done = subprocess.run(["bash", "-c", TIMED + recipe()], cwd=work, capture_output=True, text=True,
                          env={**os.environ, **env, "PATH": path, "BENCH_TIMES": str(times),
                               "BENCH_PYTHON": sys.executable})
    if done.returncode != 0:
        raise RuntimeError(f"the recipe failed:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}")
    steps = []
    for line in times.read_text().splitlines():
        wall, rss, user, system, command = line.split(" ", 4)
        steps.append((_step(command), float(wall), int(rss) / 1024, float(user) + float(system)))
    return steps


def _step(command: str) -> str:
    """`curate.py sft outputs/sky_t1 --exclude ...` -> `sft`, `-m skyeval.cli generate ...` -> `generate`."""
    words = command.split()
    name = words[2] if words[0] == "-m" else words[1]
    if name == "sft" and "sharegpt" in command:
        return "sft --format sharegpt"
    if name == "decontaminate":
        return "decontaminate (the run)" if words[2].endswith("sky_t1") else "decontaminate (rewrite.jsonl)"
    return name


def load() -> str:
    """The load averages (1, 5, 15 minutes)."""
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problems", type=int, default=1000)
    parser.add_argument("--against", default="aime24,aime25,amc23,math500,gpqa_diamond")
    parser.add_argument("--keep", action="store_true", help="keep the working folder")
    args = parser.parse_args()
    if shutil.which("time") is None and not Path("/usr/bin/time").exists():
        sys.exit("bench_curation: needs /usr/bin/time (Debian: apt-get install time)")
    work = Path(tempfile.mkdtemp(prefix="bench_curation_"))
    servers = []
    try:
        sampler, sampler_url = start_server(*[a for s in SAMPLES for a in ("--answer-variant", s)])
        second, second_url = start_server("--answer-template", REWRITE)
        servers += [sampler, second]
        env = recipe_env(work, args.problems, sampler_url, second_url, args.against)
        print(f"load before: {load()} on {os.cpu_count()} cores")
        started = time.monotonic()
        steps = run(work, env, work / "times.txt")
        total = time.monotonic() - started
        asked = (requests_seen(sampler_url), requests_seen(second_url))
        again = run(work, env, work / "times2.txt")
        repeated = (requests_seen(sampler_url) - asked[0], requests_seen(second_url) - asked[1])
        print(f"load after: {load()}")
        samples = args.problems * 4
        print(f"\nthe recipe at {args.problems} problems x n=4 ({samples} samples): {total:.1f} s")
        print("| step | wall | peak RSS | CPU |\n|---|---|---|---|")
        for name, wall, rss, cpu in steps:
            print(f"| {name} | {wall:.1f} s | {rss:.0f} MiB | {cpu:.1f} s |")
        print(f"\nrequests: sampler {asked[0]}, second model {asked[1]}; the re-run sent {repeated[0]} and "
              f"{repeated[1]} (target 0, 0) in {sum(w for _, w, _, _ in again):.1f} s of steps")
        run_dir = work / "outputs" / "sky_t1"
        print(planted_copies(work, run_dir, env))
        print(distinct_kept(work, run_dir))
        print(ray_ratio(work, run_dir, env))
    finally:
        for proc in servers:
            proc.terminate()
            proc.wait(30)
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


def _curate(work: Path, env: dict[str, str], *args: str, **extra: str) -> tuple[float, subprocess.CompletedProcess]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "curate.py"), *args], cwd=work,
                          capture_output=True, text=True, env={**os.environ, **env, **extra})
    if done.returncode != 0:
        raise RuntimeError(f"curate.py {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return time.monotonic() - started, done


def planted_copies(work: Path, run_dir: Path, env: dict[str, str]) -> str:
    """3 MATH-500 problems written into user turns of each SFT export, then decontaminated."""
    copies = [p["question"] for p in SkyEnvBuilder.build("math500", {"limit": 3}).load_problems()]
    found = []
    for name, key, user in (("sft.jsonl", "messages", "content"), ("sft_sharegpt.jsonl", "conversations", "value")):
        rows = [json.loads(line) for line in (run_dir / "curated" / name).read_text().splitlines()]
        for row, problem in zip(rows[len(rows) // 4::len(rows) // 4], copies):
            next(t for t in row[key] if t.get("role", t.get("from")) in ("user", "human"))[user] = problem
        (work / f"planted-{name}").write_text("".join(json.dumps(r) + "\n" for r in rows))
        _curate(work, env, "decontaminate", str(work / f"planted-{name}"), "--against", "math500",
                "--out", str(work / f"planted-{key}"))
        report = json.loads((work / f"planted-{key}" / "report.json").read_text())
        found.append(f"{key}: {report['removed']} of 3 removed ({report['rows_in']} rows)")
    return "planted copies: " + "; ".join(found)


def distinct_kept(work: Path, run_dir: Path) -> str:
    rows = len((run_dir / "curated" / "sft.jsonl").read_text().splitlines())
    _curate(work, {}, "dedup", str(run_dir / "curated" / "sft.jsonl"), "--out", str(work / "sft-dedup"))
    report = json.loads((work / "sft-dedup" / "report.json").read_text())
    return (f"dedup of the sampled SFT export (distinct responses, on the {report['on']}): kept {report['kept']} "
            f"of {rows}")


def ray_ratio(work: Path, run_dir: Path, env: dict[str, str]) -> str:
    local, _ = _curate(work, env, "sft", str(run_dir), "--out", str(work / "local" / "sft.jsonl"))
    ray, _ = _curate(work, env, "sft", str(run_dir), "--out", str(work / "ray" / "sft.jsonl"),
                     SKYEVAL_DATASET_ENGINE="ray")
    same = (work / "local" / "sft.jsonl").read_text() == (work / "ray" / "sft.jsonl").read_text()
    return (f"sft in this process {local:.1f} s, on Ray {ray:.1f} s: Ray/in-process {ray / local:.2f}x "
            f"(same rows: {same})")


if __name__ == "__main__":
    sys.exit(main())
