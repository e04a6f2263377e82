"""`skyeval status` and what it reads: each shard's line from its state, its SLURM job's
state and the part files; a sweep's record; the partition check's arithmetic. SLURM's
answers are given as data here (its real commands run in tests/test_slurm.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from skyeval.errors import ConfigError
from skyeval.results import RunFolder, write_json
from skyeval.run import slurm, status, sweeps


def state(status_: str, **more) -> dict:
    counts = {"problems": 10, "samples": 20, "generated": 20, "scored": 19, "failed": 1, "missing": 0, "resumed": 0}
    return {"status": status_, "counts": counts, "host": "elsewhere", "pid": 1, "started_at": "2026-01-01T00:00:00+00:00",
            "duration_s": 3.5, **more}


def shard_folder(tmp_path: Path, states: dict[int, dict], count: int) -> RunFolder:
    folder = RunFolder(tmp_path / "run")
    (folder.path / "shards").mkdir(parents=True)
    folder.config.write_text("stage: evaluate\n")
    for kind in ("generations", "scores", "failures"):
        folder.dir(kind).mkdir()
    for index, value in states.items():
        write_json(folder.path / "shards" / f"shard-{index:05d}-of-{count:05d}.json", value)
    (folder.dir("scores") / "shard-00001-part-00000.jsonl").write_text('{"id": "a"}\n{"id": "b"}\n')
    (folder.dir("scores") / "per_problem-shard-00001-part-00000.jsonl").write_text('{"id": "a"}\n')
    return folder


def job(index: int, job_id: str, folder: RunFolder, count: int) -> dict:
    return {"index": index, "dir": str(folder.path), "overrides": ["+env=gsm8k", f"shard.count={count}",
                                                                   f"shard.index={index}"],
            "job": job_id, "log": f"/logs/{job_id}.err"}


def test_each_shard_is_one_line_from_its_state_and_its_job(tmp_path):
    folder = shard_folder(tmp_path, {
        0: state("complete", slurm_job="7_0"),
        1: state("interrupted", slurm_job="7_1", stopped_by="SIGTERM (kill, timeout or SLURM's scancel)"),
        2: state("failed", slurm_job="7_2", error="DataNotFoundError: no file matches\nmore"),
        3: state("running", slurm_job="7_3"),
        4: state("running", slurm_job="7_4"),
    }, 6)
    jobs = [job(i, f"7_{i}", folder, 6) for i in range(6)]
    states = {"7_1": slurm.JobState("7_1", "CANCELLED"), "7_3": slurm.JobState("7_3", "RUNNING", node="n1"),
              "7_4": slurm.JobState("7_4", "FAILED", "NonZeroExitCode"), "7_5": slurm.JobState("7_5", "PENDING", "Resources")}
    run, *lines = status.report(folder, jobs, states)
    assert run.kind == "queued" and run.text == "queued: 6 shards: 1 done, 1 cancelled, 1 failed, 1 running, 1 killed, 1 queued"
    assert [line.kind for line in lines] == ["done", "cancelled", "failed", "running", "killed", "queued"]
    assert lines[0].text == "shard 0 of 6: done (complete): 20 samples, 19 scored, 1 failed in 3.5 s | SLURM job 7_0"
    assert lines[1].text.startswith("shard 1 of 6: cancelled by SIGTERM (kill, timeout or SLURM's scancel): 2 samples "
                                    "(2 scored, 0 failed) saved; the same command resumes it")  # per-problem rows not counted
    assert lines[2].text == ("shard 2 of 6: failed: DataNotFoundError: no file matches | SLURM job 7_2 | log /logs/7_2.err")
    assert lines[3].text.startswith("shard 3 of 6: running: 0 samples (0 scored, 0 failed) since 2026-01-01")
    assert lines[4].text.startswith("shard 4 of 6: killed: its SLURM job ended failed (SLURM FAILED, NonZeroExitCode) "
                                    "while its state says running") and lines[4].text.endswith("| log /logs/7_4.err")
    assert lines[5].text == "shard 5 of 6: queued (Resources) | SLURM job 7_5"


def test_a_resubmitted_shard_is_queued_not_its_old_state_and_done_shards_show_the_headline(tmp_path):
    folder = shard_folder(tmp_path, {0: state("interrupted", slurm_job="7_0"), 1: state("complete", slurm_job="7_1")}, 2)
    jobs = [job(0, "9_0", folder, 2), job(1, "9_1", folder, 2)]
    _, first, _ = status.report(folder, jobs, {"9_0": slurm.JobState("9_0", "PENDING", "Priority")})
    assert first.text == "shard 0 of 2: queued (Priority) | SLURM job 9_0"
    for index in (0, 1):
        write_json(folder.path / "shards" / f"shard-{index:05d}-of-00002.json", state("complete", slurm_job=f"9_{index}"))
    write_json(folder.summary, {"status": "complete", "env": "gsm8k", "counts": state("x")["counts"],
                                "metrics": {"accuracy": 0.5}})
    headline, *lines = status.report(folder, jobs, {})
    assert headline.kind == "done" and headline.text.startswith("complete: gsm8k | 20 samples") and len(lines) == 2


def test_a_local_shard_whose_process_is_gone_is_killed_and_a_live_one_runs(tmp_path):
    import socket

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    folder = shard_folder(tmp_path, {0: state("running", host=socket.gethostname(), pid=int(gone.stdout)),
                                     1: state("running", host=socket.gethostname(), pid=os.getppid())}, 2)
    _, killed, running = status.report(folder, [], {})
    assert killed.kind == "killed" and "its process is gone" in killed.text
    assert running.kind == "running" and running.text.startswith("shard 1 of 2: running: 2 samples")


def test_a_sweep_record_lives_in_the_results_folder_and_reads_back_in_job_order(tmp_path):
    record = sweeps.new_record(tmp_path)
    assert record.parent == tmp_path / "sweeps"
    sweeps.append(record, [{"index": 1, "dir": "b"}, {"index": 0, "dir": "a"}])
    with record.open("a") as f:
        f.write('{"index": 2, "di')  # torn by a crash
    assert [j["dir"] for j in sweeps.read(record)] == ["a", "b"]
    assert sweeps.records(tmp_path) == [record]


def test_status_takes_one_folder_or_sweep_and_says_what_is_wrong(tmp_path):
    for args, said in [([], "status takes run_dir=PATH or sweep=PATH"),
                       ([f"run_dir={tmp_path}"], "is not a run folder (no config.yaml)"),
                       ([f"sweep={tmp_path}"], "no sweep record there")]:
        with pytest.raises(ConfigError, match=re.escape(said)):
            status.main(args)


@pytest.mark.parametrize("limit, minutes", [("infinite", None), ("30:00", 30), ("2:00:00", 120), ("1-00:00:00", 1440)])
def test_partition_time_limits_read_as_minutes(limit, minutes):
    assert slurm._minutes(limit) == minutes


def test_a_job_the_partition_can_never_run_names_each_setting_to_change():
    offer = slurm.Offer("gpu", cpus=16, mem_mb=64 * 1024, gpus=4, nodes=2, max_minutes=60)
    slurm.check_resources(offer, cpus=16, mem_gb=64, gpus=4, nodes=2, minutes=60)  # fits exactly
    with pytest.raises(ConfigError) as err:
        slurm.check_resources(offer, cpus=32, mem_gb=128, gpus=8, nodes=3, minutes=240)
    assert str(err.value).endswith("Set hydra.launcher.cpus_per_task=16 hydra.launcher.mem_gb=64 "
                                   "hydra.launcher.gpus_per_node=4 hydra.launcher.nodes=2 hydra.launcher.timeout_min=60 "
                                   "(or another hydra.launcher.partition)")
    assert "offers 16 CPUs, 64.0 GB and 4 GPUs on its largest node, 2 nodes, at most 60 min" in str(err.value)
    assert slurm._gpus("gpu:a100:4(S:0-1),gpu:2") == 6 and slurm._gpus("(null)") == 0
