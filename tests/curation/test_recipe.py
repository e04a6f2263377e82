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
from tests.conftest import REPO, read_jsonl

pytestmark = pytest.mark.slow

MARKER = "<!-- the recipe: tests/curation/test_recipe.py and scripts/bench_curation.py run the next block -->"
PROBLEMS = 8


def recipe() -> str:
    """The bash block after the recipe's marker in docs/curation.md."""
    text = (REPO / "docs" / "curation.md").read_text(encoding="utf-8")
    return re.search(r"```bash\n(.*?)^```", text[text.index(MARKER):], re.M | re.S).group(1)


# the sampling model: four different traces per problem, reasoning in <think>, the third
# one wrong; the prompt carries the gold (see sampler.yaml), so the others are right
SAMPLES = [
    "<think>\nI add the numbers given, one by one, and reach {number}.\n</think>\n\nThe answer is $\\boxed{{{number}}}$.",
    "<think>\nFirst I list what the problem gives me. Then I combine those quantities in the order the story tells "
    "them, checking each step against the question, and the total comes to {number}.\n</think>\n\n"
    "Therefore the final answer is $\\boxed{{{number}}}$.",
    "<think>\nA quick guess, without checking.\n</think>\n\nThe answer is $\\boxed{{{number}1}}$.",
    "<think>\nWorking backwards: the result has to agree with every condition stated, and {number} does.\n</think>\n\n"
    "$\\boxed{{{number}}}$ is what the question asks for.",
]
# the second model: a rewrite (its reasoning and answer: one of its own for each trace) that
# also ends with a difficulty label
REWRITE = ("<reasoning>\nRestated ({prompt_hash}): the quantities of the problem, combined in order, give {number}."
           "\n</reasoning>\n"
           "<answer>\nThe answer is $\\boxed{{{number}}}$.\n</answer>\nDifficulty: 3")
SAMPLER_CONFIG = """model_config:
  type: openai
  model_source: sampler
  api_url: {url}
  api_key_env: null
template:
  messages:
    - role: user
      content: "{{question}}\\nPut the final answer in \\\\boxed{{}}. (reference: {{expected}})"
"""


def run_recipe(cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """The recipe in bash, `python` being this interpreter (the project's environment)."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    return subprocess.run(["bash", "-c", recipe()], cwd=cwd, env={**os.environ, **env, "PATH": path},
                          capture_output=True, text=True, timeout=1800)


def test_the_recipe_runs_as_written_and_a_rerun_sends_nothing(tmp_path, data_dir):
    (tmp_path / "scripts").symlink_to(REPO / "scripts")  # the recipe runs from a checkout
    with FaultServer(answer_variants=SAMPLES) as sampler, FaultServer(answer_template=REWRITE) as second:
        (tmp_path / "sampler.yaml").write_text(SAMPLER_CONFIG.format(url=sampler.url))
        env = {"SOURCE": "+experiment=numina_rejection_sampling env=gsm8k "
                         f"env._target_=skyeval.curation.rejection.GSM8KRejectionEnv env.limit={PROBLEMS}",
               "SAMPLER": "--config sampler.yaml",
               "REWRITER": f"--model openai --set model_source=rewriter --set api_url={second.url} "
                           "--set api_key_env=null",
               "AGAINST": "math500", "PYTHONPATH": str(REPO)}
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
