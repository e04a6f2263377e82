"""The readability scorer on real gold solutions and on the failure modes it targets."""

import json
import os
import subprocess
import sys
from dataclasses import asdict

from skyeval.curation.readability import Readability, readability
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


def test_ordinary_unicode_is_not_garbage():
    text = "Soit θ ≤ π/2 ; l'aire vaut 3·π cm². 所以答案是 $\\boxed{3\\pi}$."
    assert readability(text) == Readability(1.0, 1.0, 1.0, 1.0, 1.0, [])


# Every factor below 1, each worked out by hand from the module docstring's rules:
# lines: 1 of the 2 lines is over 1000 characters (1139) -> 1 - 0.5 * 1/2 = 0.75;
# repetition: 250 distinct words then 255 "a": 502 4-grams, 251 distinct (247 within the
#   first line, 3 across the break, "a a a a") -> r = 0.5 -> 1 - (0.5 - 0.2) / 0.6 = 0.5;
# clean: 17 U+001F (a control character; whitespace, so words stay apart) in 1700
#   characters -> 1 - 10 * 0.01 = 0.9;  answer: none stated -> 0.5.
MIXED = (" ".join(f"w{i}" for i in range(250)) + "\n" + "\x1f".join(["a"] * 18) + " " + " ".join(["a"] * 237)
         + " " * 51)
MIXED_SCORE = Readability(0.75 * 0.5 * 0.9 * 0.5, 0.75, 0.5, 0.9, 0.5, ["lines", "repetition", "clean", "answer"])


def test_scores_are_deterministic_across_processes():
    """Same text, same score in any process (each has its own hash seed), and the values
    the factors' definitions give."""
    assert len(MIXED) == 1700 and readability(MIXED) == MIXED_SCORE
    program = ("import json, sys\nfrom dataclasses import asdict\nfrom skyeval.curation.readability import readability\n"
               "print(json.dumps(asdict(readability(sys.stdin.read()))))")
    runs = [subprocess.run([sys.executable, "-c", program], input=MIXED, capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": seed}, timeout=120).stdout for seed in ("1", "2", "3")]
    assert [json.loads(r) for r in runs] == [asdict(MIXED_SCORE)] * 3
