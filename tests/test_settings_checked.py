"""Settings are checked before the run folder is claimed (issue 33 item 4): a model source
that is neither a local path nor in the Hugging Face cache (with the hub unreachable or
offline), a dataset line that is not JSON and a missing API key are each one line, exit 2,
with nothing left on disk and no "internal error". Driven through the CLI."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import run_cli

GSM8K = ("evaluate", "+env=gsm8k", "env.limit=2")


def _refused(tmp_path: Path, *args: str, env: dict | None = None) -> str:
    results = tmp_path / "out"
    proc = run_cli(*GSM8K, *args, f"logging.results_dir={results}", cwd=tmp_path, env=env, check=False)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("skyeval: error: "), proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    assert not results.exists() or not any(results.iterdir()), list(results.rglob("*"))
    return lines[0]


@pytest.mark.parametrize("offline", [False, True])
def test_a_missing_hub_model_is_exit_2_before_any_folder(tmp_path, data_dir, offline):
    # online: "0" explicitly, since skyeval turns this process offline once a test found the hub unreachable
    hub = {"HF_HUB_OFFLINE": "1"} if offline else {"HF_HUB_OFFLINE": "0", "HF_DATASETS_OFFLINE": "0",
                                                   "HF_ENDPOINT": "http://127.0.0.1:9"}  # nothing listens on port 9
    line = _refused(tmp_path, "model_config=vllm", "model_config.model_source=no/such-model",
                    env={**hub, "HF_HOME": str(tmp_path / "hf")})  # an empty cache
    assert "model_config.model_source=no/such-model: not a local path and not in the Hugging Face cache" in line
    assert ("offline mode" in line) == offline


def test_a_missing_local_model_path_is_exit_2_before_any_folder(tmp_path, data_dir):
    line = _refused(tmp_path, "model_config=vllm", f"model_config.model_source={tmp_path / 'no-model'}")
    assert "no such file or folder" in line


def test_an_unreadable_dataset_line_is_named_before_any_folder(tmp_path, data_dir):
    lines = (data_dir / "gsm8k" / "test.jsonl").read_text().splitlines()[:5]
    lines[3] = lines[3][:50]  # a torn line: the 4th
    (tmp_path / "copy" / "gsm8k").mkdir(parents=True)
    (tmp_path / "copy" / "gsm8k" / "test.jsonl").write_text("\n".join(lines) + "\n")
    line = _refused(tmp_path, f"data_dir={tmp_path / 'copy'}", "model_config=reference")
    assert "unreadable dataset file" in line and "test.jsonl, line 4" in line


def test_a_missing_api_key_leaves_no_folder(tmp_path, data_dir):
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    results = tmp_path / "out"
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "skyeval.cli", *GSM8K, "model_config=openai",
                           "model_config.model_source=gpt-4o-mini", f"logging.results_dir={results}"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "environment variable OPENAI_API_KEY is not set" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not results.exists() or not any(results.iterdir())
