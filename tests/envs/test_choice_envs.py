"""Multiple-choice envs on the real benchmark mirror."""

import csv

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from skyeval import SkyEnvBuilder
from skyeval.config import CONF_DIR, register_resolvers
from skyeval.envs.choice import MMLU_PRO_CATEGORIES, ARCEnv, choice_problem
from skyeval.envs.registry import build_from_config

register_resolvers()


def test_choice_problem_letters_options_and_gold():
    p = choice_problem("q1", " Which? ", [" red", "blue\n", "green"], 2, topic="colours")
    assert p["question"] == "Which?\n\n(A) red\n(B) blue\n(C) green"
    assert p["choices"] == ["red", "blue", "green"] and p["expected"] == "C" and p["num_options"] == 3
    assert p["topic"] == "colours"
    outside = choice_problem("q2", "Which?", ["a", "b"], 2)  # a gold outside the options: named, never graded
    assert outside["expected"] is None and outside["bad_gold"] == "the gold 2 is not one of its 2 options (A-B)"
    with pytest.raises(ValueError):
        choice_problem("q3", "Which?", ["a"], 0)


def test_reference_generation_restates_the_option_and_boxes_the_letter(data_dir):
    env = SkyEnvBuilder.build("arc_c")
    problem = env.load_problems()[0]
    text = env.reference_generation(problem)
    assert text.endswith("The answer is \\boxed{C}.") and "Planetary days will become shorter." in text
    assert env.score_item({**problem, "generation": text})["score"] == 1.0
    assert env.score_item({**problem, "generation": "I think \\boxed{A}"})["score"] == 0.0


def test_gpqa_shuffle_is_seeded_per_question_and_independent_of_order_and_limit(data_dir):
    full = {p["id"]: p for p in SkyEnvBuilder.build("gpqa_diamond").load_problems()}
    assert len(full) == 198
    limited = SkyEnvBuilder.build("gpqa_diamond", {"limit": 5}).load_problems()
    assert all(full[p["id"]] == p for p in limited)
    env = SkyEnvBuilder.build("gpqa_diamond")
    rows = list(env.load_rows())
    assert [env.to_problem(r, i)["choices"] for i, r in enumerate(reversed(rows))][::-1] == [
        full[r["Record ID"].strip()]["choices"] for r in rows]
    for row in rows:
        p = full[row["Record ID"].strip()]
        assert p["choices"][ord(p["expected"]) - ord("A")] == row["Correct Answer"].strip()
        assert all(c == c.strip() for c in p["choices"])
    other = {p["id"]: p for p in SkyEnvBuilder.build("gpqa_diamond", {"seed": 1}).load_problems()}
    assert sum(other[i]["choices"] != full[i]["choices"] for i in full) > 100
    letters = [p["expected"] for p in full.values()]
    assert all(letters.count(letter) > 30 for letter in "ABCD")  # the shuffle spreads the gold


def test_mmlu_subjects_from_file_names_and_subjects_knob(data_dir):
    problems = SkyEnvBuilder.build("mmlu").load_problems()
    assert len(problems) == 14042 and len({p["subject"] for p in problems}) == 57
    with open(data_dir / "mmlu/data/test/abstract_algebra_test.csv", newline="") as f:
        first = next(csv.DictReader(f))
    p = problems[0]
    assert p["subject"] == "abstract_algebra" and p["choices"][int(first["answer"])] == first[f"choice{first['answer']}"]
    assert p["expected"] == "ABCD"[int(first["answer"])]
    some = SkyEnvBuilder.build("mmlu", {"subjects": ["anatomy", "virology"]}).load_problems()
    assert {p["subject"] for p in some} == {"anatomy", "virology"} and len(some) == 135 + 166
    with pytest.raises(Exception, match="unknown mmlu subject 'anatomyy'. Did you mean 'anatomy'"):
        SkyEnvBuilder.build("mmlu", {"subjects": ["anatomyy"]})


def test_mmlu_hub_rows_work_too():
    env = SkyEnvBuilder.build("mmlu")
    row = {"question": "2+2?", "subject": "elementary_mathematics", "choices": ["3", "4", "5", "6"], "answer": 1}
    p = env.to_problem(row, 7)
    assert p["expected"] == "B" and p["subject"] == "elementary_mathematics" and p["id"] == "elementary_mathematics-7"


def test_mmlu_pro_options_letters_and_categories(data_dir):
    problems = SkyEnvBuilder.build("mmlu_pro").load_problems()
    assert len(problems) == 12032 and {p["num_options"] for p in problems} == {3, 4, 5, 6, 7, 8, 9, 10}
    assert {p["category"] for p in problems} == set(MMLU_PRO_CATEGORIES)
    odd = next(p for p in problems if p["id"] == "3983")  # answer "C" vs answer_index 1: the letter is right
    assert odd["expected"] == "C" and odd["choices"][2] == "N—H"
    maths = SkyEnvBuilder.build("mmlu_pro", {"categories": ["math", "computer science"]}).load_problems()
    assert len(maths) == 1351 + 410
    with pytest.raises(Exception, match="unknown mmlu_pro category 'maths'"):
        SkyEnvBuilder.build("mmlu_pro", {"categories": "maths"})


def test_arc_challenge_full_test_and_numeric_hub_labels(data_dir):
    problems = SkyEnvBuilder.build("arc_c").load_problems()
    assert len(problems) == 1172 and {p["num_options"] for p in problems} == {3, 4, 5}
    row = {"id": "NYSEDREGENTS_2015_4_1", "question": "Which is a gas?",
           "choices": {"text": ["ice", "steam", "rock", "wood"], "label": ["1", "2", "3", "4"]}, "answerKey": "2"}
    p = ARCEnv().to_problem(row, 0)
    assert p["expected"] == "B" and "(B) steam" in p["question"]


def test_list_knobs_from_the_cli():
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=["+env=mmlu_pro", "env.categories=[math,law]", "env.limit=3"])
    env = build_from_config(OmegaConf.to_container(cfg.env, resolve=True))
    assert env.categories == ["math", "law"] and env.limit == 3
