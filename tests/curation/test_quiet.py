"""Curation steps are quiet and quick: no Ray below the size where it pays, Ray's lines in
a log file when a step does run on it, and usage errors before any work."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO, read_jsonl
from tests.curation.conftest import curate_main

RUN_CURATE = """
import runpy, sys
sys.argv = [{curate!r}, *sys.argv[1:]]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
finally:
    print("ray imported:", "ray" in sys.modules)
"""


def curate_process(*args: str, **env: str) -> subprocess.CompletedProcess:
    """`python scripts/curate.py ARGS` in a fresh interpreter that says, at exit, whether Ray was imported."""
    code = RUN_CURATE.format(curate=str(REPO / "scripts" / "curate.py"))
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=600,
                          cwd=REPO, env={**os.environ, **env})


def test_small_steps_never_start_ray_and_print_only_their_counts(gsm8k_run, tmp_path):
    for command in (["sft"], ["pairs", "--silc"], ["best-of-n", "--ks", "1,4"]):
        proc = curate_process(command[0], str(gsm8k_run), *command[1:], "--out", str(tmp_path / f"{command[0]}.jsonl"))
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert proc.stderr == "" and "ray imported: False" in proc.stdout
        assert read_jsonl(tmp_path / f"{command[0]}.jsonl")


def test_a_step_on_ray_puts_ray_lines_in_its_log(gsm8k_run, tmp_path):
    """SKYEVAL_DATASET_ENGINE=ray (as past the row count where Ray pays): the same rows, and
    Ray's notices ("Progress bars disabled", "Use 'expr' instead of 'fn'") in logs.txt."""
    local = curate_process("sft", str(gsm8k_run), "--out", str(tmp_path / "local" / "sft.jsonl"))
    proc = curate_process("sft", str(gsm8k_run), "--out", str(tmp_path / "ray" / "sft.jsonl"),
                          SKYEVAL_DATASET_ENGINE="ray", RAY_AUTH_MODE="disabled")
    assert local.returncode == proc.returncode == 0, proc.stderr[-3000:]
    assert "ray imported: True" in proc.stdout and "its messages are in" in proc.stdout
    assert "Progress bars" not in proc.stderr and "Use 'expr'" not in proc.stderr and "ray" not in proc.stderr.lower()
    log = (tmp_path / "ray" / "logs.txt").read_text()
    assert "Progress bars disabled" in log and "Use 'expr' instead of 'fn'" in log
    assert read_jsonl(tmp_path / "ray" / "sft.jsonl") == read_jsonl(tmp_path / "local" / "sft.jsonl")


@pytest.mark.parametrize("args, said", [
    (["--fields", "conversations"], "row 1 (id "),                       # the field is not there
    (["--on", "response", "--fields", "prompt"], "prompt give no response text"),
    (["--embeddings-url", "http://127.0.0.1:9/v1"], "needs both --embeddings-url and --embedding-model"),
])
def test_decontaminate_usage_errors_come_before_the_index_is_built(gsm8k_run, tmp_path, monkeypatch, capsys,
                                                                 args, said):
    from skyeval.curation.decontaminate import BenchmarkIndex

    def never(*args, **kwargs):
        raise AssertionError("the benchmark index was built before the usage error")

    monkeypatch.setattr(BenchmarkIndex, "build", never)
    with pytest.raises(SystemExit) as stop:
        curate_main()(["decontaminate", str(gsm8k_run), "--out", str(tmp_path / "o"), *args])
    assert stop.value.code == 2 and said in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:
        curate_main()(["decontaminate", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "o")])
    assert stop.value.code == 2 and "no such input" in capsys.readouterr().err
