"""A scored rejection-sampling run shared by the curation tests, made as a user makes one
(generate, then score) with samples that differ the way a sampled model's do."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from tests.conftest import REPO

PROBLEMS = 12
N = 4


def gsm8k_samples(problem: dict) -> list[tuple[str, str, int]]:
    """(reasoning, answer, words) of the four samples of a GSM8K problem: three correct
    responses, each reasoned its own way, and a wrong one (sample 3)."""
    steps = problem["solution"].split("####")[0].strip()
    gold, given = problem["expected"], problem["question"].split(".")[0]
    samples = [
        (steps, f"The answer is $\\boxed{{{gold}}}$."),
        (f"We are told: {given}. First I list what the problem gives me, then I combine those numbers in the order "
         f"the story tells them, one operation at a time, and the running total ends at {gold}.",
         f"Therefore the final answer is $\\boxed{{{gold}}}$."),
        (f"Working backwards from what is asked: the result has to agree with every condition stated, so I try "
         f"the candidate {gold} against each condition in turn ({given}) and it fits all of them.",
         f"$\\boxed{{{gold}}}$ is what the question asks for."),
        ("I estimate it quickly without checking.", f"The answer is $\\boxed{{{int(gold) + 1}}}$."),
    ]
    return [(r, a, len(r.split()) + len(a.split())) for r, a in samples]


@pytest.fixture(scope="session")
def gsm8k_run(tmp_path_factory, data_dir) -> Path:
    """`generate +experiment=numina_rejection_sampling env=gsm8k ...` (12 problems x n=4,
    reference backend), the generations replaced by `gsm8k_samples` (reasoning apart, usage
    reported), then `score`: 36 samples correct and readable, 12 wrong."""
    from skyeval.cli import score
    from skyeval.config.compose import compose
    from skyeval.envs.registry import SkyEnvBuilder
    from skyeval.run.app import execute

    root = tmp_path_factory.mktemp("gsm8k-run")
    config = compose("+experiment=numina_rejection_sampling", "env=gsm8k",
                     "env._target_=skyeval.curation.rejection.GSM8KRejectionEnv", f"env.limit={PROBLEMS}",
                     f"sampling_params.n={N}", f"logging.results_dir={root}", stage="generate")
    folder = Path(execute(config)["run_dir"])
    problems = {p["id"]: p for p in SkyEnvBuilder.build("gsm8k", {"limit": PROBLEMS}).load_problems()}
    parts = sorted((folder / "generations").glob("*.jsonl"))
    records = [json.loads(line) for part in parts for line in part.read_text().splitlines()]
    for record in records:
        reasoning, answer, words = gsm8k_samples(problems[record["id"]])[record["sample_idx"]]
        record.update(generation=answer, reasoning=reasoning,
                      usage={"prompt_tokens": 60, "completion_tokens": words, "reasoning_tokens": len(reasoning.split())})
    for part in parts:
        part.unlink()
    (folder / "generations" / "part-00000.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    score([f"run_dir={folder}"])
    return folder


def curate_main():
    """scripts/curate.py's `main(argv)`, run in this process."""
    spec = importlib.util.spec_from_file_location("curate", REPO / "scripts" / "curate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.main
