"""What a plain run prints (issue 46): no warning a user cannot act on, and counts in words
("1 sample", not "1 samples"); and its summary names the machine."""

from __future__ import annotations

import os
import re

from tests.conftest import load_summary, run_cli, run_folder


def test_a_plain_evaluate_prints_its_lines_and_no_warning(tmp_path, data_dir):
    proc = run_cli("evaluate", "+env=math500", "model_config=reference", "env.limit=1",
                   f"logging.results_dir={tmp_path}", cwd=tmp_path)
    console = proc.stdout + proc.stderr
    assert not re.search(r"warn", console, re.I), console
    assert "complete: math500 | 1 sample, 1 scored, 0 failed | accuracy 1.0000" in proc.stdout
    folder = run_folder(tmp_path, "math500_reference_t0.0")
    assert "evaluate 1 sample of 1 problem in " in (folder / "logs.txt").read_text()
    machine = load_summary(folder)["machine"]  # tests/test_provenance.py checks its values
    assert machine["cpu"]["count"] == os.cpu_count() and machine["gpus"] == [] and "vllm" in machine
