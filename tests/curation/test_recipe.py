"""docs/curation.md's Sky-T1 recipe runs as written (bash, the block after its marker), with
a loopback server for each model; run again, it sends no request to either."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.backends.fault_server import FaultServer
from tests.conftest import read_jsonl
from tests.curation.recipe_models import REWRITE, SAMPLES, recipe, recipe_env

pytestmark = pytest.mark.slow

PROBLEMS = 8


def run_recipe(cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """The recipe in bash, `python` being this interpreter (the project's environment)."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    return subprocess.run(["bash", "-c", recipe()], cwd=cwd, env={**os.environ, **env, "PATH": path},
                          capture_output=True, text=True, timeout=1800)


def test_the_recipe_runs_as_written_and_a_rerun_sends_nothing(tmp_path, data_dir):
    with FaultServer(answer_variants=SAMPLES) as sampler, FaultServer(answer_template=REWRITE) as second:
        env = recipe_env(tmp_path, PROBLEMS, sampler.url, second.url, "math500")
        first = run_recipe(tmp_path, env)
        assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-5000:]
        asked = (len(sampler.log), len(second.log))
        again = run_recipe(tmp_path, env)
        assert again.returncode == 0, again.stderr[-5000:]
        assert (len(sampler.log), len(second.log)) == asked  # the re-run sent nothing
    curated = tmp_path / "outputs" / "sky_t1" / "curated"
    kept = PROBLEMS * 3  # three right answers of four
    assert asked == (PROBLEMS, PROBLEMS + kept)  # one request of n=4 per problem; a label and a rewrite each
    assert f"rewrite: 0 requests sent, {kept} answers from the cache" in again.stdout
    assert f"difficulty: 0 requests sent, {PROBLEMS} answers from the cache" in again.stdout

    rewritten = read_jsonl(curated / "rewrite.jsonl")
    assert len(rewritten) == kept
    for row in rewritten:
        assert re.match(r"<think>\nRestated \([0-9a-f]{8}\): the quantities", row["messages"][-1]["content"])
        assert row["metadata"]["difficulty"] == 3 and row["metadata"]["rewrite"]["what"] == "both"
    clean = read_jsonl(curated / "rewrite_clean" / "kept.jsonl")
    assert clean == rewritten  # nothing contaminated
    # this rewriter restates a problem's traces in nearly the same words: they are near
    # duplicates of one another, never of another problem's (test_conversations.py: distinct
    # responses are all kept)
    final, duplicates = read_jsonl(curated / "final" / "kept.jsonl"), read_jsonl(curated / "final" / "duplicates.jsonl")
    assert {r["id"] for r in final} == {r["id"] for r in rewritten} and len(final) + len(duplicates) == kept
    assert duplicates and all(clean[d["duplicate_of"]]["id"] == d["id"] for d in duplicates)
    assert len(read_jsonl(curated / "sft.jsonl")) == len(read_jsonl(curated / "sft_sharegpt.jsonl")) == kept
    assert {p["kind"] for p in read_jsonl(curated / "pairs.jsonl")} == {"shortest_longest", "short_incorrect_long_correct"}
    assert len(read_jsonl(curated / "best-of-n.jsonl")) == PROBLEMS
    report = json.loads((curated / "decontaminated" / "report.json").read_text())
    assert report["rows_in"] == PROBLEMS * 4 and report["index"]["problems"] == {"math500": 500}
