"""The readability scorer on real gold solutions and on the failure modes it targets."""

from skyeval.curation.readability import readability
from skyeval.envs.registry import SkyEnvBuilder


def test_gold_solutions_read_well(data_dir):
    for name in ("math500", "gsm8k"):
        env = SkyEnvBuilder.build(name, {"limit": 200})
        scores = [readability(env.reference_generation(p)).score for p in env.load_problems()]
        assert sum(s >= 0.5 for s in scores) >= 0.99 * len(scores) and sum(scores) / len(scores) > 0.95, name


def test_each_failure_mode_lowers_the_score_and_is_named():
    good = "We add the numbers: $2 + 3 = 5$.\n\nThe final answer is $\\boxed{5}$."
    assert readability(good).score == 1.0 and readability(good).issues == []
    loop = readability("Wait, let me check again.\n" * 100 + "\\boxed{5}")
    assert loop.score == 0.0 and loop.issues == ["repetition"]
    wall = readability(" ".join(f"step{i} gives {i}" for i in range(400)) + " so \\boxed{5}")
    assert wall.lines == 0.5 and wall.issues == ["lines"]
    garbage = readability("The sum is \ufffd\ufffd\x00\x07 5. The answer is 5.")
    assert garbage.clean == 0.0 and "clean" in garbage.issues
    no_answer = readability("We add the numbers and get five.")
    assert no_answer.score == 0.5 and no_answer.issues == ["answer"]
    assert readability("   ").score == 0.0 and readability("").issues == ["empty"]


def test_ordinary_unicode_is_not_garbage_and_scores_are_deterministic():
    text = "Soit θ ≤ π/2 ; l'aire vaut 3·π cm². 所以答案是 $\\boxed{3\\pi}$."
    assert readability(text).clean == 1.0
    assert readability(text) == readability(text)
