"""The CLI end to end, from a clean working directory, as users run it."""

import json

from tests.conftest import load_summary, read_jsonl, run_cli
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
    assert "sweep: 2 runs over sampling_params.temperature" in proc.stdout
    assert "  sampling_params.temperature=0.6: aime24 accuracy 1.0000 | 2 samples" in proc.stdout
    proc = run_cli("evaluate", "+env=aime24", "env.limit=3", "sampling_params.temperature=0.6", cwd=tmp_path)
    assert "resuming: 1 requests to send (1 of 3 samples); the folder holds the rest" in proc.stderr


def test_score_refuses_a_misspelt_override_in_one_line(tmp_path, data_dir):
    run_cli("evaluate", "+env=aime24", "env.limit=1", cwd=tmp_path)
    folder = run_folder(tmp_path, "aime24_reference_t0.0")
    proc = run_cli("score", f"run_dir={folder}", "sampling_params.temprature=1", cwd=tmp_path, check=False)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        "skyeval: error: unknown key 'sampling_params.temprature'. Did you mean 'temperature'? "
        "Keys of sampling_params: extra, max_tokens, n, seed, stop, temperature, top_k, top_p"]
