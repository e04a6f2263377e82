"""A 4-shard SLURM job array of one run, on a real SLURM: one job is killed mid-way, the
same command resubmitted resumes only that shard, and the merged run equals the unsharded
one. Uses the SLURM whose controller answers `scontrol ping`; when none does (no SLURM, or
`sbatch` installed but no controller running), starts the one-node cluster of
../shared/tools/local_slurm.sh (Debian's slurm-wlm, as root). It never skips: where neither
works the test fails with the reason (deselect it with `-m "not slurm"`)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from skyeval.results import iter_records

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[1]
LOCAL_SLURM = REPO.parent / "shared" / "tools" / "local_slurm.sh"
SHARDS = 4
# 1319 problems x 64 samples: each shard runs a few seconds, long enough to be killed mid-way
RUN = ["+env=gsm8k", "sampling_params.n=64", "logging.experiment_name=run"]


def no_controller() -> str | None:
    """Why no SLURM controller answers here, or None when one does."""
    if shutil.which("scontrol") is None:
        return "scontrol is not on PATH"
    try:
        ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return "scontrol ping did not answer within 60 s"
    if ping.returncode == 0 and "is UP" in ping.stdout:
        return None
    said = (ping.stdout + ping.stderr).strip().splitlines()
    return f"scontrol ping: {said[0][:300] if said else f'exit {ping.returncode}'}"


def unavailable(reason: str):
    """Fail (never skip) with why SLURM can't run here."""
    pytest.fail(f"SLURM test cannot run: {reason} (deselect it with -m 'not slurm')", pytrace=False)


@pytest.fixture(scope="module")
def partition() -> str:
    """The default partition of a reachable SLURM (the local cluster, started here if no
    controller answers)."""
    reason = no_controller()
    if reason:
        if not LOCAL_SLURM.exists():
            unavailable(f"no controller answers ({reason}) and {LOCAL_SLURM} is not there to start one")
        if os.geteuid() != 0:
            unavailable(f"no controller answers ({reason}) and starting {LOCAL_SLURM} needs root")
        started = subprocess.run(["bash", str(LOCAL_SLURM), "start"], capture_output=True, text=True, timeout=900)
        if started.returncode:
            unavailable(f"no controller answered ({reason}); {LOCAL_SLURM} start failed: "
                        f"{(started.stderr or started.stdout).strip()[-500:]}")
        if again := no_controller():
            unavailable(f"{LOCAL_SLURM} started, yet no controller answers: {again}")
    found = subprocess.run(["sinfo", "-h", "-o", "%P %a"], capture_output=True, text=True, timeout=60)
    up = [line.split()[0] for line in found.stdout.splitlines() if line.endswith(" up")]
    if found.returncode or not up:
        unavailable(f"no SLURM partition is up: {found.stderr.strip() or found.stdout.strip()}")
    return next((p.rstrip("*") for p in up if p.endswith("*")), up[0])


def cli(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "skyeval.cli", *args], cwd=REPO, env=env, text=True,
                          capture_output=True, timeout=900)
    if check and done.returncode:
        raise AssertionError(f"{' '.join(args)} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done


def array_command(results: Path, partition: str, name: str) -> list[str]:
    return [sys.executable, "-m", "skyeval.cli", "evaluate", "-m", *RUN, f"logging.results_dir={results}",
            "hydra/launcher=slurm", f"hydra.launcher.partition={partition}", "hydra.launcher.cpus_per_task=1",
            "hydra.launcher.mem_gb=2", "hydra.launcher.timeout_min=30", f"hydra.launcher.name={name}",
            f"shard.count={SHARDS}", f"shard.index=range(0,{SHARDS})"]


def states(folder: Path) -> dict[int, dict]:
    out = {}
    for path in (folder / "shards").glob("shard-*-of-*.json"):
        try:
            out[int(path.name.split("-")[1])] = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, FileNotFoundError):  # being replaced right now
            continue
    return out


def generated(folder: Path, index: int) -> int:
    return sum(1 for p in (folder / "generations").glob(f"shard-{index:05d}-part-*.jsonl") for _ in p.open())


def wait_for_jobs(name: str) -> None:
    """Until SLURM lists no job of this array (a killed array's other jobs go on running)."""
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        listed = subprocess.run(["squeue", "-h", "-n", name, "-o", "%i"], capture_output=True, text=True)
        if listed.returncode == 0 and not listed.stdout.strip():
            return
        time.sleep(0.5)
    raise AssertionError(f"jobs named {name} still queued after 10 minutes")


def kill_one_shard_mid_way(folder: Path, launcher: subprocess.Popen) -> int:
    """SIGKILL (as a preemption or an OOM kill would) the job of the first shard seen with
    some but not all of its generations written; returns its index."""
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and launcher.poll() is None:
        for index, state in states(folder).items():
            if state.get("status") == "running" and state.get("slurm_job") and generated(folder, index) > 0:
                job = state["slurm_job"]
                subprocess.run(["scontrol", "suspend", job], capture_output=True)  # hold it still while we look
                if states(folder).get(index, {}).get("status") == "running":
                    # SIGKILL the shard's process itself (a stopped process dies of it too): a
                    # suspended job's steps sometimes stayed stopped through scancel, holding the
                    # shard's lock; then cancel the job, resumed so that its steps get the signal
                    if state.get("host") == socket.gethostname():
                        os.kill(state["pid"], signal.SIGKILL)
                    subprocess.run(["scontrol", "resume", job], capture_output=True)
                    subprocess.run(["scancel", "--full", "--signal=KILL", job], check=True)
                    subprocess.run(["scancel", job], capture_output=True)
                    return index
                subprocess.run(["scontrol", "resume", job], capture_output=True)
        time.sleep(0.05)
    raise AssertionError(f"no shard was caught running (launcher exit {launcher.poll()}); see {folder}")


def test_a_killed_array_job_resumes_only_its_shard_and_merges_to_the_unsharded_run(tmp_path, partition):
    results, name = tmp_path / "array", f"skyeval-test-{os.getpid()}"
    folder = results / "run"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    log = (tmp_path / "launcher.log").open("w")
    launcher = subprocess.Popen(array_command(results, partition, name), cwd=REPO, env=env, stdout=log,
                                stderr=subprocess.STDOUT)
    try:
        killed = kill_one_shard_mid_way(folder, launcher)
        wait_for_jobs(name)
    finally:
        # With accounting (sacct) the launcher reports the killed job as failed and exits; the
        # local cluster has none, so submitit cannot tell a killed job from a running one and
        # waits: stop it, as a user would.
        if launcher.poll() is None:
            launcher.terminate()
            launcher.wait(timeout=60)
    before = generated(folder, killed)
    assert states(folder)[killed]["status"] == "running"  # killed: it never wrote a finished state
    assert not (folder / "summary.json").exists()
    refused = cli("merge", f"run_dir={folder}", check=False)
    assert refused.returncode == 2 and f"{killed} (running or killed" in refused.stderr

    # the same command again: finished shards find all their samples done, the killed one resumes
    again = subprocess.run(array_command(results, partition, name), cwd=REPO, env=env, capture_output=True,
                           text=True, timeout=900)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    wait_for_jobs(name)
    final = states(folder)
    for index, state in final.items():
        samples = state["counts"]["samples"]
        assert state["status"] == "complete" and state["slurm_job"]
        if index != killed:
            assert state["counts"]["resumed"] == samples  # found done: nothing redone
    # the killed shard kept the generations it had written and made only the others
    assert 0 < before < final[killed]["counts"]["samples"] == generated(folder, killed)

    merged = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    keys = Counter((r["id"], r["sample_idx"]) for kind in ("scores", "failures") for r in iter_records(folder, kind))
    assert len(keys) == 1319 * 64 and set(keys.values()) == {1}

    cli("evaluate", *RUN, f"logging.results_dir={tmp_path / 'whole'}")
    whole = json.loads((tmp_path / "whole" / "run" / "summary.json").read_text(encoding="utf-8"))
    assert merged["metrics"] == whole["metrics"]
    assert {k: v for k, v in merged["counts"].items() if k != "resumed"} == \
        {k: v for k, v in whole["counts"].items() if k != "resumed"}
    assert merged["shards"]["count"] == SHARDS
