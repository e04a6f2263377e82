"""The CLI end to end, from a clean working directory, as users run it."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, load_summary, read_jsonl, run_cli
from tests.conftest import run_folder as conftest_run_folder


def run_folder(tmp_path, name):
    return conftest_run_folder(tmp_path / "outputs", name)


def test_demo_math500_reference_scores_all_and_writes_a_complete_run_folder(tmp_path, data_dir):
    proc = run_cli("evaluate", "+env=math500", "model_config=reference", cwd=tmp_path)
    folder = run_folder(tmp_path, "math500_reference_t0.0")
    assert "run folder:" in proc.stdout
    summary = load_summary(folder)
    assert summary["metrics"]["accuracy"] >= 0.99
    assert summary["counts"] == {"problems": 500, "samples": 500, "generated": 500, "scored": 500, "failed": 0, "missing": 0,
                                 "resumed": 0}
    for part in ("generations", "scores", "failures", "logs.txt", "config.yaml", "summary.json"):
        assert (folder / part).exists(), part
    assert len(read_jsonl(folder / "scores")) == 500
    assert summary["git_commit"] is None or len(summary["git_commit"]) == 40
    assert summary["versions"]["ray"] and summary["config"]["env"]["name"] == "math500"
    assert "evaluate 500 samples of 500 problems" in (folder / "logs.txt").read_text()


def test_multirun_over_temperatures_writes_one_folder_per_job(tmp_path, data_dir):
    run_cli("evaluate", "+env=aime24", "model_config=reference", "-m", "sampling_params.temperature=0.0,0.6", cwd=tmp_path)
    names = sorted(p.name.rsplit("_", 1)[0] for p in (tmp_path / "outputs").iterdir() if (p / "summary.json").exists())
    assert names == ["aime24_reference_t0.0", "aime24_reference_t0.6"]
    for name in names:
        assert load_summary(run_folder(tmp_path, name))["metrics"]["accuracy"] == 1.0


def test_generate_then_score(tmp_path, data_dir):
    run_cli("generate", "+env=AIME24", "env.limit=5", cwd=tmp_path)
    folder = run_folder(tmp_path, "aime24_reference_t0.0")
    summary = load_summary(folder)
    assert summary["stage"] == "generate" and summary["counts"]["generated"] == 5 and summary["metrics"] == {}
    assert read_jsonl(folder / "scores") == []
    run_cli("score", f"run_dir={folder}", cwd=tmp_path)
    summary = load_summary(folder)
    assert summary["stage"] == "score" and summary["counts"]["scored"] == 5 and summary["metrics"]["accuracy"] == 1.0


def test_user_config_file_with_overrides(tmp_path, data_dir):
    (tmp_path / "AIME24.yaml").write_text(
        "env:\n  name: AIME24\n  limit: 4\n"
        "model_config:\n  model_source: reference\n"
        "template:\n  system_prompt_name: qwq\n"
        "sampling_params:\n  temperature: 0.0\n  n: 2\n"
        "logging:\n  experiment_name: my_aime_run\n"
    )
    run_cli("evaluate", "--config", "AIME24.yaml", "env.limit=3", cwd=tmp_path)
    folder = tmp_path / "outputs" / "my_aime_run"  # a name the user chose is taken as it is
    summary = load_summary(folder)
    assert summary["counts"]["problems"] == 3 and summary["counts"]["samples"] == 6
    assert summary["metrics"]["pass@k"]["2"] == 1.0
    prompt = read_jsonl(folder / "generations")[0]["prompt"]
    assert prompt[0]["role"] == "system" and "Qwen" in prompt[0]["content"]


def test_bad_input_gets_one_clear_line(tmp_path, data_dir):
    proc = run_cli("evaluate", "+env=math50", cwd=tmp_path, check=False)
    assert proc.returncode == 2 and "Did you mean 'math500'" in proc.stderr and "Traceback" not in proc.stderr
    proc = run_cli("evaluate", "+env=math500", "+env.nope=1", cwd=tmp_path, check=False)
    assert proc.returncode == 2 and "no knob 'nope'" in proc.stderr
    proc = run_cli("evaluate", cwd=tmp_path, check=False)
    assert proc.returncode != 0 and "+env=" in proc.stderr
    proc = run_cli("frobnicate", cwd=tmp_path, check=False)
    assert proc.returncode == 2 and "unknown command" in proc.stderr
    proc = run_cli("evaluate", "+env=math500", "data_dir=/nonexistent", cwd=tmp_path, check=False)
    assert proc.returncode == 2 and "math500/test.jsonl" in proc.stderr


def test_secrets_never_reach_a_written_file(tmp_path, data_dir):
    secret, token = "sk-live-abcdefghijklmnop", "hf_SECRETTOKEN123456"
    run_cli("evaluate", "+env=aime24", "env.limit=2", f"+hf_token={token}", cwd=tmp_path,
            env={"OPENAI_API_KEY": secret})
    written = "".join(p.read_text(errors="replace") for p in (tmp_path / "outputs").rglob("*") if p.is_file())
    assert written and secret not in written and token not in written


def test_results_dir_under_skyhome(tmp_path, data_dir):
    home = tmp_path / "skyhome"
    run_cli("evaluate", "+env=aime24", "env.limit=1", cwd=tmp_path, env={"SKYHOME": str(home)})
    assert (conftest_run_folder(home / "outputs", "aime24_reference_t0.0") / "summary.json").exists()


def test_slurm_launcher_knobs_through_submitit_local(tmp_path, data_dir):
    run_cli("evaluate", "-m", "+env=aime24", "env.limit=2", "hydra/launcher=slurm_local",
            "sampling_params.temperature=0.0,1.0", cwd=tmp_path, timeout=600)
    for name in ("aime24_reference_t0.0", "aime24_reference_t1.0"):
        assert load_summary(run_folder(tmp_path, name))["counts"]["scored"] == 2
    assert list((tmp_path / "outputs" / ".submitit").iterdir())  # submitit's job folders


def test_a_malformed_row_becomes_load_failures_and_the_rest_is_scored(tmp_path, data_dir):
    rows = [json.loads(line) for line in (data_dir / "math500" / "test.jsonl").read_text().splitlines()[:4]]
    del rows[1]["problem"]
    (tmp_path / "mirror" / "math500").mkdir(parents=True)
    (tmp_path / "mirror" / "math500" / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    run_cli("evaluate", "+env=math500", f"data_dir={tmp_path / 'mirror'}", "sampling_params.n=2", cwd=tmp_path)
    folder = run_folder(tmp_path, "math500_reference_t0.0")
    summary = load_summary(folder)
    assert summary["status"] == "complete_with_failures"
    assert summary["counts"]["samples"] == 8 and summary["counts"]["scored"] == 6 and summary["counts"]["failed"] == 2
    failures = read_jsonl(folder / "failures")
    assert [(f["id"], f["sample_idx"], f["stage"], f["error_type"]) for f in failures] == [
        ("row-1", 0, "load", "KeyError"), ("row-1", 1, "load", "KeyError")]


BAD_KEYS = [  # (arguments, the line's key, its did-you-mean)
    (["sampling_params.temprature=0.5"], "sampling_params.temprature", "temperature"),
    (["+sampling_params.temprature=0.5"], "sampling_params.temprature", "temperature"),
    (["model_config=openai", "model_config.api_ur=http://127.0.0.1:9/v1"], "model_config.api_ur", "api_url"),
    (["scaling.concurency=3"], "scaling.concurency", "concurrency"),
    (["retry_failure=true"], "retry_failure", "retry_failures"),
    (["--config", "{dir}/typo.yaml"], "sampling_params.temprature", "temperature"),
    (["--config", "{dir}/typo_model.yaml"], "model_config.api_ur", "api_url"),
    (["--config={dir}/typo.yaml"], "sampling_params.temprature", "temperature"),
]


def test_every_bad_key_is_one_line_with_a_did_you_mean_exit_2_and_no_folder(tmp_path, data_dir):
    """Issue 25 item 11: on the command line, with `+`, and inside a `--config` file."""
    (tmp_path / "typo.yaml").write_text("env: {name: aime24}\nsampling_params: {temprature: 0.5}\n")
    (tmp_path / "typo_model.yaml").write_text("env: {name: aime24}\nmodel_config: {type: openai, api_ur: x}\n")
    results = tmp_path / "out"
    for args, key, close in BAD_KEYS:
        args = [a.format(dir=tmp_path) for a in args]
        if not any(a.startswith("--config") for a in args):
            args = ["+env=aime24", *args]
        proc = run_cli("evaluate", *args, f"logging.results_dir={results}", cwd=tmp_path, check=False)
        assert proc.returncode == 2, (args, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and f"unknown key {key!r}. Did you mean {close!r}?" in lines[0], (args, lines)
        assert not results.exists() or not any(results.iterdir()), (args, list(results.iterdir()))


def test_lm_eval_flags_point_to_their_hydra_form(tmp_path, data_dir):
    for args, form in ((["--limit", "5"], "env.limit=5"), (["--tasks", "gsm8k"], "+env=gsm8k"),
                       (["--output_path=res"], "logging.results_dir=res")):
        proc = run_cli("evaluate", "+env=aime24", *args, f"logging.results_dir={tmp_path / 'out'}", cwd=tmp_path,
                       check=False)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1 and f"here write {form}" in lines[0], proc.stderr
    proc = run_cli("evaluate", "+env=aime24", "--frobnicate", cwd=tmp_path, check=False)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        "skyeval: error: unknown flag --frobnicate: settings are key=value overrides, e.g. env.limit=5 "
        "(skyeval evaluate --help)"]
    assert not (tmp_path / "out").exists()


def test_every_foreign_flag_is_named_at_once():
    """`--tasks math500 --limit 5` named --tasks alone, then --limit on the next try."""
    from skyeval.cli import _refuse_unknown_flags
    from skyeval.errors import ConfigError

    with pytest.raises(ConfigError) as found:
        _refuse_unknown_flags(["--tasks", "math500", "--limit", "5", "--temperature=0.6", "--frobnicate", "-m"])
    assert str(found.value) == (
        "4 flags are not skyeval's: --tasks is lm-eval's flag; here write +env=math500; --limit is lm-eval's "
        "flag; here write env.limit=5; --temperature is not a flag here; write sampling_params.temperature=0.6; "
        "unknown flag --frobnicate: settings are key=value overrides, e.g. env.limit=5 (skyeval evaluate --help)")


def test_the_summarys_command_reruns_as_written(tmp_path, data_dir):
    """Issue 25 item 12: run summary.json's `command` as it is; it resumes the same folder."""
    import shlex
    import subprocess
    import sys

    (tmp_path / "run.yaml").write_text("env: {name: aime24}\nsampling_params: {n: 2}\n")
    run_cli("evaluate", "--config", "run.yaml", "env.limit=2", "-m", "sampling_params.temperature=0.6",
            cwd=tmp_path)
    folder = run_folder(tmp_path, "aime24_reference_t0.6")
    command = shlex.split(load_summary(folder)["command"])
    assert command[:3] == ["python", "-m", "skyeval.cli"] and "stage=evaluate" not in command
    proc = subprocess.run([sys.executable, *command[1:]], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    summary = load_summary(folder)
    assert summary["counts"]["resumed"] == 4 and summary["counts"]["scored"] == 4


def test_summary_records_the_system_prompt_used_and_why(tmp_path, data_dir):
    run_cli("evaluate", "+env=aime24", "env.limit=1", "template.system_prompt=none", cwd=tmp_path)
    folder = run_folder(tmp_path, "aime24_reference_t0.0")
    assert load_summary(folder)["template"] == {"kind": "chat", "system_prompt_used": None,
                                                "system_prompt_reason": "none: template.system_prompt=none"}
    assert all(m["role"] != "system" for m in read_jsonl(folder / "generations")[0]["prompt"])


def test_console_one_line_per_failed_request_and_the_final_line_once(tmp_path, data_dir):
    """Issue 25 item 15: a request of n=4 that fails prints one warning (not 5); the result
    line is printed once."""
    from tests.backends.fault_server import FaultServer

    with FaultServer(fail_fraction=1.0, fail_status=400) as server:
        proc = run_cli("evaluate", "+env=aime24", "env.limit=2", "model_config=openai",
                       "model_config.model_source=test-model", f"model_config.api_url={server.url}",
                       "model_config.max_retries=0", "sampling_params.n=4", cwd=tmp_path)
    failed = [line for line in proc.stderr.splitlines() if " failed" in line and "WARNING" in line]
    assert len([line for line in failed if "problem " in line]) == 2, proc.stderr  # one per request
    assert not any("failed after" in line for line in proc.stderr.splitlines())
    assert (proc.stdout + proc.stderr).count("complete_with_failures: aime24 | 8 samples") == 1
    assert "complete_with_failures: aime24" in (run_folder(tmp_path, "aime24_test-model_t0.0") / "logs.txt").read_text()


def test_sweep_summary_names_the_swept_values_and_a_resume_says_what_it_sends(tmp_path, data_dir):
    proc = run_cli("evaluate", "+env=aime24", "env.limit=2", "-m", "sampling_params.temperature=0.0,0.6", cwd=tmp_path)
    assert "sweep: 2 runs over sampling_params.temperature | record " in proc.stdout
    assert "  sampling_params.temperature=0.6: complete: aime24 | 2 samples, 2 scored, 0 failed | accuracy 1.0000" \
        in proc.stdout
    proc = run_cli("evaluate", "+env=aime24", "env.limit=3", "sampling_params.temperature=0.6", cwd=tmp_path)
    assert "resuming: 1 request to send (1 of 3 samples); the folder holds the rest" in proc.stderr


def test_score_refuses_a_misspelt_override_in_one_line(tmp_path, data_dir):
    run_cli("evaluate", "+env=aime24", "env.limit=1", cwd=tmp_path)
    folder = run_folder(tmp_path, "aime24_reference_t0.0")
    proc = run_cli("score", f"run_dir={folder}", "sampling_params.temprature=1", cwd=tmp_path, check=False)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        "skyeval: error: unknown key 'sampling_params.temprature'. Did you mean 'temperature'? "
        "Keys of sampling_params: extra, max_tokens, max_waits, min_thinking_tokens, n, seed, stop, "
        "temperature, top_k, top_p"]


# ---- stopped by a signal: SIGTERM takes Ctrl-C's path --------------------------------------------
# `skyeval ARGS` whose reference backend, once it has yielded argv[2] samples, touches argv[1]
# (the test then knows the run is mid-way) and holds there until the test stops it.
HELD_CLI = [sys.executable, "-c", """
import sys, time
from pathlib import Path
from skyeval.backends.reference import ReferenceBackend
from skyeval.cli import main

held, after, generate = Path(sys.argv[1]), int(sys.argv[2]), ReferenceBackend.generate

def held_after(self, requests, sampling):
    for i, result in enumerate(generate(self, requests, sampling)):
        if i == after:
            held.touch()
            while True:
                time.sleep(0.01)
        yield result

ReferenceBackend.generate = held_after
main(sys.argv[3:])
"""]
STOPS = {"SIGINT": (signal.SIGINT, 130, "interrupted"), "SIGTERM": (signal.SIGTERM, 143, "stopped (SIGTERM)")}


def start(command: list[str], cwd: Path, tmpdir: Path) -> subprocess.Popen:
    """The CLI in its own session (a terminal's foreground group), with TMPDIR private to the test,
    Ctrl-C not ignored (a background `cmd &` ignores SIGINT, and children inherit that), and its
    output in cwd/stdout, cwd/stderr (files: local submitit jobs it leaves running hold its pipes)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(tmpdir)}
    with open(cwd / "stdout", "w") as out, open(cwd / "stderr", "w") as err:
        return subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=err, start_new_session=True,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def wait_for(condition, what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout  # a hang bound: it takes a few seconds
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        time.sleep(0.02)


def stop(proc: subprocess.Popen, signum: int, group: bool, cwd: Path, times: int = 1) -> str:
    """Send `signum` to the CLI (or its whole group: Ctrl-C, scancel), `times` times; its stderr
    once it exited. Whatever of its session is still alive then (local submitit jobs) is killed."""
    try:
        for _ in range(times):
            os.killpg(proc.pid, signum) if group else proc.send_signal(signum)
            time.sleep(0.02)
        proc.wait(timeout=120)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
    return (cwd / "stderr").read_text()


@pytest.mark.parametrize("name", STOPS)
def test_a_stopped_sweep_removes_its_temporary_folders(tmp_path, data_dir, name):
    signum, code, word = STOPS[name]
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    (tmp_path / "mine.yaml").write_text("sampling_params:\n  n: 1\n")  # --config: a temporary searchpath folder
    proc = start([*HELD_CLI, str(tmp_path / "held"), "20", "evaluate", "-m", "+env=aime24,amc23", "--config",
                  "mine.yaml", f"logging.results_dir={tmp_path / 'out'}"], tmp_path, tmpdir)
    wait_for((tmp_path / "held").exists, "the first job is mid-way")
    made = sorted(p.name[:-8] for p in tmpdir.iterdir())  # mkdtemp: prefix + 8 characters
    err = stop(proc, signum, False, tmp_path)
    assert made == ["skyeval_config_"], err[-3000:]  # the sweep's record is in the results folder
    assert proc.returncode == code, err[-3000:]
    assert err.splitlines()[-1] == f"{word}: finished samples are saved; re-run the same command to resume."
    assert "Traceback" not in err
    assert list(tmpdir.iterdir()) == []  # both removed
    folder = conftest_run_folder(tmp_path / "out", "aime24_reference_t0.0")  # the job under way: saved as such
    assert load_summary(folder)["status"] == "interrupted" and len(read_jsonl(folder / "generations")) == 20


def test_sigterm_while_waiting_for_submitit_jobs_leaves_no_temporary_folder(tmp_path, data_dir):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    proc = start([sys.executable, "-m", "skyeval.cli", "evaluate", "-m", "+env=math500", "sampling_params.n=64",
                  "hydra/launcher=slurm_local", "sampling_params.temperature=0.0,1.0",
                  f"logging.results_dir={tmp_path / 'out'}"], tmp_path, tmpdir)
    wait_for(lambda: len(list((tmp_path / "out").glob(".submitit/*/*_log.out"))) == 2, "both jobs started")
    made = [p.name[:-8] for p in tmpdir.iterdir()]
    err = stop(proc, signal.SIGTERM, False, tmp_path, times=5)  # `kill PID`, impatiently: the submitting process
    assert made == [] and proc.returncode == 143, err[-3000:]  # the sweep's record goes in the results folder
    assert err.splitlines()[-1] == "stopped (SIGTERM): finished samples are saved; re-run the same command to resume."
    assert "Traceback" not in err
    assert list(tmpdir.iterdir()) == []


@pytest.mark.parametrize("name, group", [("SIGINT", False), ("SIGTERM", False), ("SIGTERM", True)],
                         ids=["SIGINT", "SIGTERM", "SIGTERM-group"])
def test_a_stopped_evaluate_loses_nothing_and_the_rerun_resumes(tmp_path, data_dir, name, group):
    signum, code, word = STOPS[name]
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    args = ["evaluate", "+env=gsm8k", "env.limit=300", "sampling_params.n=2", f"logging.results_dir={tmp_path / 'out'}",
            "logging.experiment_name=run"]
    proc = start([*HELD_CLI, str(tmp_path / "held"), "250", *args], tmp_path, tmpdir)
    wait_for((tmp_path / "held").exists, "the run is mid-way")
    err = stop(proc, signum, group, tmp_path)
    assert proc.returncode == code and "Traceback" not in err, err[-3000:]
    assert err.splitlines()[-1] == f"{word}: finished samples are saved; re-run the same command to resume."
    folder = tmp_path / "out" / "run"
    assert load_summary(folder)["status"] == "interrupted"
    saved = {(r["id"], r["sample_idx"]): r["generation"] for r in read_jsonl(folder / "generations")}
    assert len(saved) == 250  # every sample generated before the signal
    assert list(tmpdir.iterdir()) == []

    run_cli(*args, cwd=tmp_path)
    summary = load_summary(folder)
    assert summary["status"] == "complete" and summary["counts"]["resumed"] == 250
    assert summary["counts"]["scored"] == 600 and summary["counts"]["failed"] == 0
    records = read_jsonl(folder / "generations")
    assert len(records) == 600  # nothing generated twice
    assert saved.items() <= {(r["id"], r["sample_idx"]): r["generation"] for r in records}.items()
    assert summary["metrics"]["accuracy"] == 1.0
