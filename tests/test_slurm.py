"""A 4-shard SLURM job array of one run, on a real SLURM: one job is killed mid-way, the
same command resubmitted resumes only that shard, and the merged run equals the unsharded
one. Uses the SLURM whose controller answers `scontrol ping`; when none does (no SLURM, or
`sbatch` installed but no controller running), starts the one-node cluster of
../shared/tools/local_slurm.sh (Debian's slurm-wlm, as root). It never skips: where neither
works the test fails with the reason (deselect it with `-m "not slurm"`)."""

from __future__ import annotations

import json
import os
import re
import shlex
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


def sweep_folder(results: Path, launcher: subprocess.Popen) -> Path:
    """The array's one run folder, once it exists: `run_<digest>` (a sweep point's folder
    name holds its fingerprint's digest)."""
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and launcher.poll() is None:
        found = [p for p in results.glob("run_*") if re.fullmatch(r"run_[0-9a-f]{8}", p.name)]
        if found:
            return found[0]
        time.sleep(0.05)
    raise AssertionError(f"no run folder under {results} (launcher exit {launcher.poll()})")


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
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    log = (tmp_path / "launcher.log").open("w")
    launcher = subprocess.Popen(array_command(results, partition, name), cwd=REPO, env=env, stdout=log,
                                stderr=subprocess.STDOUT)
    try:
        folder = sweep_folder(results, launcher)
        killed = kill_one_shard_mid_way(folder, launcher)
        wait_for_jobs(name)
        # no accounting daemon here (no sacct): the launcher follows its jobs with squeue, sees
        # the killed one end, and ends with the run's line and that shard's, exit 2
        assert launcher.wait(timeout=900) == 2
    finally:
        if launcher.poll() is None:
            launcher.terminate()
            launcher.wait(timeout=60)
    said = (tmp_path / "launcher.log").read_text()
    assert f"shard {killed} of {SHARDS}: killed: its SLURM job ended" in said, said[-3000:]
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


# ---- the documented path: submit, watch, stop, resume, merge (docs/scaling.md) ---------------
DOCS = REPO / "docs" / "scaling.md"
LIMIT = 40  # problems: 2 shards of about 20, against a server the test holds and releases
HANG_S = 600  # bounds a wait for SLURM or a shard (seconds when quiet); never a speed check


def documented(start: str) -> list[str]:
    """The command of docs/scaling.md beginning with `start`, as argv (continuation lines joined)."""
    for block in re.findall(r"^```bash\n(.*?)^```", DOCS.read_text(encoding="utf-8"), re.M | re.S):
        for line in block.replace("\\\n", " ").splitlines():
            if line.strip().startswith(start):
                return shlex.split(line.strip().split(" #")[0])
    raise AssertionError(f"docs/scaling.md has no command starting with {start!r}")


def as_run(argv: list[str], **values: str) -> list[str]:
    """A documented command with its placeholders filled in, run by this interpreter."""
    argv = [sys.executable if a == "python" else a for a in argv]
    for name, value in values.items():
        argv = [a.replace(name, value) for a in argv]
    return argv


def wait_until(what: str, done, bound: float = HANG_S) -> None:
    deadline = time.monotonic() + bound
    while not done():
        assert time.monotonic() < deadline, f"{what}: not after {bound:.0f} s"
        time.sleep(0.2)


def live(jobs: list[str]) -> list[str]:
    """The jobs SLURM lists as pending or running."""
    from skyeval.run.slurm import job_states

    return sorted(job for job, state in job_states(jobs).items() if state.live)


def saved_prompts(folder: Path) -> set[str]:
    return {json.dumps(r["prompt"]) for r in iter_records(folder, "generations")} if folder.exists() else set()


def asked_after(server, since: int, prompts: set[str]) -> list[str]:
    """Prompts of `prompts` the server was asked for after its `since`-th request."""
    return [p for p in (json.dumps(e.get("messages")) for e in server.log[since:]) if p in prompts]


def test_an_array_is_submitted_watched_stopped_resumed_and_merged_as_documented(tmp_path, partition):
    """docs/scaling.md's commands on the local SLURM, against a loopback server the test can
    hold: Ctrl-C on a waiting launcher cancels its jobs (SIGTERM reaches skyeval: both shards
    saved `interrupted`); the same command with wait=false returns at once; `scancel` of one
    shard leaves it `interrupted`; a resubmit while the other still runs is refused naming
    its job; the resubmit after it asks for no answer already saved and ends with one line:
    the merged accuracy and folder. `status` says each state on the way."""
    from .backends.fault_server import FaultServer

    env = {**os.environ, "PYTHONPATH": str(REPO), "SKYHOME": str(tmp_path), "OPENAI_API_KEY": "EMPTY"}
    submit = documented("python -m skyeval.cli evaluate -m +env=gsm8k model_config=openai")
    assert "hydra.launcher.wait=false" in submit and "hydra/launcher=slurm" in submit
    extra = [f"env.limit={LIMIT}", "scaling.concurrency=2", f"hydra.launcher.partition={partition}"]

    def run(argv: list[str], **kw) -> subprocess.CompletedProcess:
        return subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=HANG_S, **kw)

    with FaultServer(latency=0.2) as server:
        command = as_run(submit, MODEL="tiny", URL=server.url) + extra
        waiting = [a for a in command if a != "hydra.launcher.wait=false"]

        # 1. the waiting launcher, stopped by Ctrl-C once both shards have saved answers: it cancels its jobs
        log = (tmp_path / "launcher.log").open("w")
        launcher = subprocess.Popen(waiting, cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT)
        records = tmp_path / "outputs" / "sweeps"
        wait_until("a sweep record", lambda: any(records.glob("*.jsonl")))
        first = [json.loads(line) for line in next(records.glob("*.jsonl")).read_text().splitlines()]
        folder, jobs = Path(first[0]["dir"]), [entry["job"] for entry in first]
        wait_until("both shards saving", lambda: all(generated(folder, i) for i in (0, 1)))
        launcher.send_signal(signal.SIGINT)
        assert launcher.wait(timeout=HANG_S) == 130
        said = (tmp_path / "launcher.log").read_text()
        assert f"cancelled SLURM jobs {' '.join(sorted(jobs))}" in said, said[-3000:]
        wait_until("the cancelled jobs gone", lambda: not live(jobs))
        stopped = states(folder)
        assert {stopped[i]["status"] for i in (0, 1)} == {"interrupted"}, stopped  # SIGTERM reached skyeval
        assert all(stopped[i]["stopped_by"].startswith("SIGTERM") for i in (0, 1))
        for job in jobs:  # a fresh shard says nothing of resuming
            assert "resuming" not in Path(next(e["log"] for e in first if e["job"] == job)).read_text()
        watch = as_run(documented("python -m skyeval.cli status run_dir="), RUN_DIR=str(folder))
        shown = run(watch).stdout
        assert shown.count(": cancelled by SIGTERM") == 2, shown

        # 2. submitted without waiting: it returns at once; one shard is scancelled mid-way
        saved, asked = saved_prompts(folder), len(server.log)
        done = run(command)
        assert done.returncode == 0 and "submitted 2 SLURM jobs" in done.stdout, done.stdout + done.stderr
        second = [json.loads(line) for line in sorted(records.glob("*.jsonl"))[-1].read_text().splitlines()]
        job0, job1 = second[0]["job"], second[1]["job"]
        before = generated(folder, 0)
        wait_until("shard 0 saving again", lambda: generated(folder, 0) > before)
        server.configure(hold=True)  # both shards stall: shard 1 is still running when we resubmit
        assert run(as_run(documented("scancel"), JOB=job0)).returncode == 0
        wait_until("shard 0's job gone", lambda: not live([job0]))
        assert states(folder)[0]["status"] == "interrupted"
        assert "shard 0 of 2: cancelled by SIGTERM" in run(watch).stdout
        assert "shard 1 of 2: running" in run(watch).stdout
        refused = run(command)
        assert refused.returncode == 2 and f"still written by SLURM job {job1} (running)" in refused.stderr, \
            refused.stderr
        assert not asked_after(server, asked, saved)  # nothing saved before was asked again

        # 3. released, shard 1 ends; the same command, waiting, finishes shard 0 and merges
        server.configure(hold=False)
        wait_until("shard 1's job gone", lambda: not live([job1]))
        saved, asked = saved_prompts(folder), len(server.log)
        done = run(waiting)
        assert done.returncode == 0, done.stdout + done.stderr
        assert not asked_after(server, asked, saved)
    last = done.stdout.strip().splitlines()[-1]
    assert re.match(rf"  complete: gsm8k \| {LIMIT} samples, {LIMIT} scored, 0 failed \| accuracy [0-9.]+ "
                    rf"\(95% CI [0-9.]+-[0-9.]+, {LIMIT} problems x n=1\) \| {re.escape(str(folder))}$", last), last
    keys = Counter((r["id"], r["sample_idx"]) for kind in ("scores", "failures") for r in iter_records(folder, kind))
    assert len(keys) == LIMIT and set(keys.values()) == {1}
    shown = run(watch).stdout.splitlines()
    assert shown[1].startswith(f"complete: gsm8k | {LIMIT} samples") and shown[2].startswith("shard 0 of 2: done")
    merged = run(as_run(documented("python -m skyeval.cli merge"), RUN_DIR=str(folder)))
    assert merged.returncode == 0 and f"complete: gsm8k | {LIMIT} samples" in merged.stdout
    sweep = run(as_run(documented("python -m skyeval.cli status sweep=")))  # the latest sweep in ./outputs
    assert sweep.returncode == 0 and f"complete: gsm8k | {LIMIT} samples" in sweep.stdout, sweep.stdout + sweep.stderr


def test_jobs_the_partition_can_never_run_are_refused_before_submitting(tmp_path, partition):
    """The launcher's defaults (8 CPUs, 64 GB) on a smaller node, or one CPU more than the
    largest node has: one line with what was asked and what the partition offers, exit 2,
    nothing submitted."""
    from skyeval.run.slurm import partition_offer

    offer = partition_offer(partition)
    asks = [] if offer.cpus < 8 else [f"hydra.launcher.cpus_per_task={offer.cpus + 1}"]
    done = cli("evaluate", "-m", "+env=gsm8k", "hydra/launcher=slurm", f"hydra.launcher.partition={partition}",
               f"logging.results_dir={tmp_path}", "shard.count=2", "shard.index=range(0,2)", *asks, check=False)
    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert f"SLURM partition {partition} can never run these jobs" in line
    assert f"asks for {8 if not asks else offer.cpus + 1} CPUs" in line and f"offers {offer.cpus} CPUs" in line
    assert f"hydra.launcher.cpus_per_task={offer.cpus}" in line
    assert not (tmp_path / ".submitit").exists() and not (tmp_path / "sweeps").exists()


def test_ctrl_c_on_a_waiting_launcher_names_the_jobs_it_leaves_running_or_cancels_them(tmp_path, partition, capsys):
    """`hydra.launcher.cancel_on_interrupt=false`: Ctrl-C leaves the jobs running and names
    them (exit 130); the default cancels them and says so. A real SLURM job stands in for
    the launcher's (the documented test above stops a waiting launcher itself)."""
    from skyeval.run.launcher import stop_jobs

    submitted = subprocess.run(["sbatch", "--parsable", "-p", partition, "-c", "1", "--mem=100M", "-o", "/dev/null",
                                "-J", f"skyeval-test-{os.getpid()}", "--wrap", "sleep 600"],
                               capture_output=True, text=True, timeout=60, check=True)
    job = submitted.stdout.strip().split(";")[0]
    record = tmp_path / "sweeps" / "record.jsonl"
    try:
        with pytest.raises(SystemExit) as stopped:
            stop_jobs([job], False, record)
        said = capsys.readouterr().err
        assert stopped.value.code == 130 and f"interrupted: SLURM jobs {job} still run" in said, said
        assert f"status sweep={record}" in said and f"scancel {job}" in said
        assert live([job]) == [job]
        with pytest.raises(SystemExit):
            stop_jobs([job], True, record)
        assert f"interrupted: cancelled SLURM jobs {job} (scancel)" in capsys.readouterr().err
        assert not live([job])
    finally:
        subprocess.run(["scancel", job], capture_output=True)
