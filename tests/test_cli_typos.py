"""Typos get suggestions at the Hydra level (issue 33 item 6): an unknown group option lists
the options with the closest one, `env=X` points to `+env=X`, a bare knob name to its full
key, a flag of lm-eval or SkyThought habits to its override; `skyeval list` (and lm-eval's
`--tasks list`) prints the benchmarks. Driven through the CLI."""

from __future__ import annotations

import pytest

from tests.conftest import run_cli

CASES = [
    (("+env=gsm8k", "model_config=opnai"),
     "skyeval: error: model_config=opnai: no such option. Did you mean 'openai'? Options: openai, openai_batch, ray, reference, vllm"),
    (("+env=gsm8k", "template=chat_boxd"), "template=chat_boxd: no such option. Did you mean 'chat_boxed'?"),
    (("env=math500",), "env=math500: no env is selected yet, so there is none to override; write +env=math500"),
    (("+env=gsm8k", "limit=5"), "limit=5: 'limit' is not a top-level setting; did you mean env.limit=5?"),
    (("+env=gsm8k", "temperature=0.3"), "did you mean sampling_params.temperature=0.3?"),
    (("+env=gsm8k", "--temperature", "0.5"),
     "--temperature is not a flag here; write sampling_params.temperature=0.5"),
    (("+env=gsm8k", "--max-tokens=64"), "--max-tokens is not a flag here; write sampling_params.max_tokens=64"),
]


@pytest.mark.parametrize("args,message", CASES, ids=[" ".join(a) for a, _ in CASES])
def test_a_typo_is_one_line_with_the_right_form(tmp_path, args, message):
    proc = run_cli("evaluate", *args, f"logging.results_dir={tmp_path}", cwd=tmp_path, check=False)
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and message in proc.stderr, proc.stderr
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("args", [("list",), ("evaluate", "--tasks", "list")])
def test_list_prints_the_benchmarks_with_counts_and_where_their_data_is(tmp_path, data_dir, args):
    proc = run_cli(*args, cwd=tmp_path)
    rows = {line.split()[0]: line.split()[1:] for line in proc.stdout.splitlines()[1:]}
    assert rows["math500"] == ["500", "local"] and rows["gsm8k"] == ["1,319", "local"]
    assert rows["numina"][:2] == ["-", "not"]  # no local copy here: the hub id is named, nothing downloaded
    assert "hub: AI-MO/NuminaMath-CoT" in proc.stdout
