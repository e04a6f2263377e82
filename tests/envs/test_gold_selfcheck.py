"""Gold self-check: every env's reference generations must score ~100% through its own
scorer, and cross-wired ones ~0%, so a scorer or a data mapping that is off shows at once.

`score_item` is called directly from a small thread pool (no Ray). MMLU is checked on a
fixed random sample of 1500 of its 14042 questions to keep the suite fast; every other
env on all of its local rows. omni_math and numina use the hub-shaped test fixtures.
"""

import random
from multiprocessing.pool import ThreadPool
from pathlib import Path

import pytest

from skyeval import SkyEnvBuilder
from skyeval.scorers.choice import LETTERS
from tests.conftest import load_summary, run_cli, run_folder

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
MATH_ENVS = ["aime24", "aime25", "amc23", "math500", "gsm8k", "minervamath", "olympiadbench_math_en", "liveaops"]
CHOICE_ENVS = ["gpqa_diamond", "mmlu", "mmlu_pro", "arc_c"]
FIXTURE_ENVS = ["omni_math", "numina"]
SAMPLES = {"mmlu": 1500}
SLOW = {"minervamath", "olympiadbench_math_en", "liveaops"}  # > 30 s each on 2 cores (long symbolic answers)


def marked(name):
    return pytest.param(name, marks=[pytest.mark.slow] if name in SLOW else [])


def env_and_problems(name):
    knobs = {"data_dir": str(FIXTURES), "local_files": f"{name}.jsonl"} if name in FIXTURE_ENVS else {}
    env = SkyEnvBuilder.build(name, knobs)
    problems = env.load_problems()
    if name in SAMPLES:
        problems = random.Random(0).sample(problems, SAMPLES[name])
    return env, problems


def cross_wired(problems):
    """Math: the expected answer of the next problem whose answer differs (neighbours with
    the same answer, e.g. two GSM8K answers of 10, are no test). Choice: the next letter
    (another question's letter would match by chance 25% of the time)."""
    if "num_options" in problems[0]:
        return [LETTERS[(LETTERS.index(p["expected"]) + 1) % p["num_options"]] for p in problems]
    n = len(problems)
    return [
        next(q["expected"] for k in range(1, n) if str((q := problems[(i + k) % n])["expected"]) != str(p["expected"]))
        for i, p in enumerate(problems)
    ]


def score_all(env, items):
    with ThreadPool(2) as pool:
        return pool.map(env.score_item, items)


@pytest.mark.parametrize("name", [marked(n) for n in MATH_ENVS + CHOICE_ENVS + FIXTURE_ENVS])
def test_reference_scores_full_marks_and_cross_wired_scores_none(name, data_dir):
    env, problems = env_and_problems(name)
    generations = [env.reference_generation(p) for p in problems]
    gold = score_all(env, [{**p, "generation": g} for p, g in zip(problems, generations)])
    wired = score_all(env, [{**p, "generation": g, "expected": e}
                            for p, g, e in zip(problems, generations, cross_wired(problems))])
    misses = [(p["id"], r.get("extracted"), p["expected"], r.get("timed_out")) for p, r in zip(problems, gold) if r["score"] < 1]
    hit_rate = 1 - len(misses) / len(problems)
    wired_rate = sum(r["score"] for r in wired) / len(problems)
    print(f"\n{name}: {len(problems)} problems, gold {hit_rate:.4f}, cross-wired {wired_rate:.4f}")
    for problem_id, extracted, expected, timed_out in misses:
        print(f"  miss {problem_id}: extracted {extracted!r} vs expected {expected!r}{' (timed out)' if timed_out else ''}")
    assert hit_rate >= 0.99, misses
    assert wired_rate <= 0.01


@pytest.mark.parametrize("name", ["aime25", "olympiadbench_math_en", "gpqa_diamond"])
def test_cli_reference_run(name, tmp_path, data_dir):
    run_cli("evaluate", f"+env={name}", "model_config=reference", "env.limit=40", cwd=tmp_path)
    summary = load_summary(run_folder(tmp_path / "outputs", f"{name}_reference_t0.0"))
    assert summary["counts"]["scored"] == min(40, summary["counts"]["problems"]) and summary["counts"]["failed"] == 0
    assert summary["metrics"]["accuracy"] >= 0.99
