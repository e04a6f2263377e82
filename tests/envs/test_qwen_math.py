"""The Qwen2.5-Math evaluation suite: names, the harness's question / gold / prompt
conventions, and the gold self-check (reference >= 0.99, cross-wired <= 0.01) on the first
100 problems of every set (docs/benchmarks.md gives the full-set figures)."""

from __future__ import annotations

import json
from multiprocessing.pool import ThreadPool

import pytest

from skyeval import SkyEnvBuilder
from skyeval.scorers.choice import LETTERS
from tests.envs.test_gold_selfcheck import cross_wired

SUITE = ["college_math", "gaokao2023en", "gaokao2024_I", "gaokao2024_II", "gaokao2024_mix", "gaokao_math_cloze",
         "gaokao_math_qa", "cmath", "cn_middle_school", "svamp", "asdiv", "mawps", "carp_en", "sat_math", "mmlu_stem",
         "aqua"]
SYSTEM = "Please reason step by step, and put your final answer within \\boxed{}."


def test_the_17_new_envs_are_listed_by_their_names(data_dir):
    assert set(SUITE + ["ifeval"]) <= set(SkyEnvBuilder.names())  # what `skyeval list` prints
    assert SkyEnvBuilder.build("GAOKAO2024_i", {"limit": 1}).name == "gaokao2024_I"  # any case, as other envs
    from skyeval.reward.sources import env_for

    assert env_for("gaokao2024_ii") == "gaokao2024_II"  # a verl data_source names it in any case too


def wired(problems):
    """Another gold per problem: the next letter(s) of a letter gold, else the next
    different value (`cross_wired`)."""
    letters = [p for p in problems if p.get("answer_type", "choice" if "num_options" in p else "value") != "value"]
    others = [{"expected": p["expected"]} for p in problems if p not in letters]
    values = iter(cross_wired(others) if others else [])
    return ["".join(LETTERS[(LETTERS.index(c) + 1) % p["num_options"]] for c in p["expected"]) if p in letters
            else next(values) for p in problems]


@pytest.mark.parametrize("name", SUITE)
def test_reference_scores_full_marks_and_cross_wired_none(name, data_dir):
    env = SkyEnvBuilder.build(name, {"limit": 100})
    problems = env.load_problems()
    assert len(problems) == min(100, {"gaokao2024_I": 14, "gaokao2024_II": 14, "gaokao2024_mix": 91,
                                      "sat_math": 32}.get(name, 100))
    scorable = [p for p in problems if p["expected"] is not None]
    generations = [env.reference_generation(p) for p in scorable]
    with ThreadPool(2) as pool:
        gold = pool.map(env.score_item, [{**p, "generation": g} for p, g in zip(scorable, generations)])
        crossed = pool.map(env.score_item, [{**p, "generation": g, "expected": e}
                                            for p, g, e in zip(scorable, generations, wired(scorable))])
    hits = sum(r["score"] for r in gold) / len(problems)  # problems without a gold count as misses
    assert hits >= 0.99, [(p["id"], r.get("extracted"), p["expected"]) for p, r in zip(scorable, gold) if r["score"] < 1]
    assert sum(r["score"] for r in crossed) / len(problems) <= 0.01


def test_questions_and_golds_follow_the_harness(data_dir):
    def first(name):
        return SkyEnvBuilder.build(name, {"limit": 1}).load_problems()[0]

    svamp = first("svamp")
    assert svamp["question"].startswith("There are 87 oranges") and ". How big is each group" in svamp["question"]
    assert svamp["expected"] == "145"
    assert first("asdiv")["expected"] == "9"  # "9 (apples)"
    assert first("mawps")["expected"] == "43"  # 43.0
    assert first("college_math")["expected"] == "10-4 n"  # "$10-4 n$"
    mmlu = first("mmlu_stem")
    assert mmlu["question"].endswith("(D) increase the mortality rate") and "\nAnswer Choices: (A) " in mmlu["question"]
    assert (mmlu["expected"], mmlu["num_options"]) == ("C", 4)
    aqua = first("aqua")
    assert aqua["question"].endswith("Answer Choices: (A) 5 (√3 + 1)  (B) 6 (√3 + √2)  (C) 7 (√3 – 1)  (D) 8 (√3 – 2)  (E) None of these")
    assert aqua["num_options"] == 5
    qa = first("gaokao_math_qa")
    assert qa["question"].endswith("选项: (A) $\\{x \\mid x>-1\\}$ (B) $\\{x \\mid x \\geq 1\\}$ (C) $\\{x \\mid-1<x<1\\}$ "
                                   "(D) $\\{x \\mid 1 \\leq x<2\\}$") and qa["expected"] == "D"
    mix = SkyEnvBuilder.build("gaokao2024_mix", {}).load_problems()
    assert (mix[0]["expected"], mix[0]["answer_type"]) == ("C", "choice")
    value = next(p for p in mix if p["answer_type"] == "value")
    assert value["expected"] == "(4,0)"
    multi = [p for p in SkyEnvBuilder.build("gaokao2024_I", {}).load_problems() if p["answer_type"] == "choices"]
    assert [p["expected"] for p in multi] == ["BC", "ACD", "ABD"]
    yes_no = [p for p in SkyEnvBuilder.build("asdiv", {}).load_problems() if p["expected"] in ("Yes", "No")]
    assert yes_no and all(p["question"].endswith(" (Yes or No)") for p in yes_no)


def test_prompts_are_the_harness_qwen25_math_cot_with_its_demonstrations(data_dir):
    def prompt(name, index=0):
        env = SkyEnvBuilder.build(name, {})
        problem = env.load_problems()[index]
        return env.apply_prompt_template_on_item(problem)["prompt"], problem

    messages, problem = prompt("svamp")
    assert messages == [{"role": "system", "content": SYSTEM}, {"role": "user", "content": problem["question"]}]
    messages, problem = prompt("mmlu_stem")
    user = messages[1]["content"]
    assert user.startswith("Simplify and write the result with a rational denominator") and user.count("The answer is (") == 5
    assert user.endswith("\n\n" + problem["question"])
    assert prompt("sat_math")[0][1]["content"].count("The answer is (") == 5  # the mmlu_stem demonstrations
    assert prompt("aqua")[0][1]["content"].count("The answer is (") == 4  # the harness has 4
    letter, _ = prompt("gaokao2024_mix", 0)
    assert letter[1]["content"].count("\n答案是 ") == 5
    valued, problem = prompt("gaokao2024_mix", 10)
    assert problem["answer_type"] == "value" and valued[1]["content"] == problem["question"]  # zero-shot
    env = SkyEnvBuilder.build("mmlu_stem", {"fewshot": False})
    problem = env.load_problems()[0]
    assert env.apply_prompt_template_on_item(problem)["prompt"][1]["content"] == problem["question"]


def test_multiple_select_needs_exactly_the_gold_letters(data_dir):
    env = SkyEnvBuilder.build("gaokao2024_I", {})
    problem = next(p for p in env.load_problems() if p["expected"] == "ACD")
    for text, score in [("答案是 \\boxed{ACD}", 1.0), ("\\boxed{D, C, A}", 1.0), ("\\boxed{AC}", 0.0),
                        ("\\boxed{ABCD}", 0.0), ("\\boxed{A}", 0.0), ("The answer is A, C and D.", 1.0)]:
        assert env.score_item({**problem, "generation": text})["score"] == score, text


def test_a_problem_without_a_gold_is_kept_and_fails_never_scored_zero(data_dir):
    env = SkyEnvBuilder.build("gaokao2023en", {})
    problems = env.load_problems()
    missing = [p["id"] for p in problems if p["expected"] is None]
    assert len(problems) == 385 and missing == ["167", "192"]
    assert env.reference_generation(problems[167]) is None


def test_a_whole_reference_run_in_process(data_dir, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    from skyeval.config import compose
    from skyeval.run.app import execute

    summary = execute(compose("+env=gaokao2024_mix", "model_config=reference"))
    assert summary["counts"]["problems"] == 91 and summary["counts"]["failed"] == 0
    assert summary["metrics"]["accuracy"] == 1.0
    assert summary["template"]["system_prompt_used"] == SYSTEM
    records = [json.loads(line) for path in (tmp_path / "outputs").glob("*/generations/part-*.jsonl")
               for line in path.read_text().splitlines()]
    assert len(records) == 91 and all(r["prompt"][0]["content"] == SYSTEM for r in records)


def test_each_value_set_has_its_documented_numeric_rule():
    """conf/env/<name>.yaml gives the rule (as `numeric_rule:` once the math envs take the
    knob, until then on its marked comment line) and docs/benchmarks.md's table the same one;
    when the knob exists, the built config carries it."""
    import re

    from skyeval.paths import CONF_DIR
    from tests.conftest import REPO

    table = (REPO / "docs" / "benchmarks.md").read_text()
    for name in SUITE:
        row = re.search(rf"^\| `{name}` \| [^|]+ \| [^|]+ \| ([^|]+) \|", table, re.M)
        documented = row.group(1).strip()
        conf = (CONF_DIR / "env" / f"{name}.yaml").read_text()
        given = re.search(r"^(?:# NUMERIC RULE [^\n]*?: )?numeric_rule: (\w+)", conf, re.M)
        if documented == "–":  # multiple choice: no numeric rule
            assert given is None, name
            continue
        assert given is not None and given.group(1) == documented, name
        if "numeric_rule" in SkyEnvBuilder.knobs(name):
            assert SkyEnvBuilder.config(name)["numeric_rule"] == documented, name
