"""IFEval: the self-check (responses written to follow and to break each of the 25
instructions), the env on the real data, the four accuracies in summary.json (failed
samples count as following nothing), and one CLI run against a scripted model."""

from __future__ import annotations

import json

import pytest

from skyeval import SkyEnvBuilder
from skyeval.errors import GoldError
from skyeval.metrics import MetricsAccumulator
from skyeval.scorers.ifeval import CHECKERS, score_ifeval
from tests.conftest import load_summary, run_cli

# instruction: (kwargs, follows, breaks) — each response written by hand for its rule
SELF_CHECK = {
    "keywords:existence": ({"keywords": ["river", "bridge"]}, "The river ran under the old Bridge.", "The river ran."),
    "keywords:frequency": ({"keyword": "tea", "frequency": 2, "relation": "at least"}, "Tea first, then TEA again.",
                           "Coffee, then tea."),
    "keywords:forbidden_words": ({"forbidden_words": ["bad"]}, "A badge is not banned.", "That was BAD."),
    "keywords:letter_frequency": ({"letter": "q", "let_frequency": 2, "let_relation": "less than"}, "Quiet.",
                                  "Quick quiz."),
    "language:response_language": ({"language": "de"}, "Das ist ein kurzer deutscher Satz über das Wetter.",
                                   "This is an English sentence about the weather."),
    "length_constraints:number_sentences": ({"num_sentences": 2, "relation": "less than"},
                                            "Dr. Smith arrived at 3 p.m. in Washington D.C. today.",
                                            "One. Two."),
    "length_constraints:number_paragraphs": ({"num_paragraphs": 2}, "First part.\n***\nSecond part.",
                                             "First part.\n***\n\n***\nSecond part."),
    "length_constraints:number_words": ({"num_words": 5, "relation": "at least"}, "one two three four five",
                                        "one two three four"),
    "length_constraints:nth_paragraph_first_word": ({"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "then"},
                                                    "First.\n\n\"Then, second.", "First.\n\nAnd then second."),
    "detectable_content:number_placeholders": ({"num_placeholders": 2}, "Dear [name], at [address].",
                                               "Dear [name]."),
    "detectable_content:postscript": ({"postscript_marker": "P.S."}, "Bye.\n\nP.S. see you.", "Bye. PS see you."),
    "detectable_format:number_bullet_lists": ({"num_bullets": 2}, "* one\n- two", "* one\n- two\n* three"),
    "detectable_format:constrained_response": ({}, "My answer is maybe.", "Maybe."),
    "detectable_format:number_highlighted_sections": ({"num_highlights": 2}, "*one* and **two**", "*one* only"),
    "detectable_format:multiple_sections": ({"section_spliter": "SECTION", "num_sections": 2},
                                            "SECTION 1\nintro\nSECTION 2\nbody", "SECTION 1\nall in one"),
    "detectable_format:json_format": ({}, '```json\n{"a": 1}\n```', '{"a": 1} and some words'),
    "detectable_format:title": ({}, "<<A Title>>\nText.", "<A Title>\nText."),
    "combination:two_responses": ({}, "One answer.\n******\nAnother answer.", "One answer.\n******\nOne answer."),
    "combination:repeat_prompt": ({"prompt_to_repeat": "Write a haiku."}, "write a haiku. Leaves fall.",
                                  "A haiku: leaves fall."),
    "startend:end_checker": ({"end_phrase": "Any other questions?"}, "Done. Any other questions?",
                             "Any other questions? Done."),
    "startend:quotation": ({}, '"All of it quoted."', '"Only the start quoted.'),
    "change_case:capital_word_frequency": ({"capital_frequency": 2, "capital_relation": "at least"},
                                           "I DON'T agree.", "I do not agree."),
    "change_case:english_capital": ({}, "THIS IS ALL IN CAPITAL LETTERS.", "THIS IS NOT all in capitals."),
    "change_case:english_lowercase": ({}, "this is all in lowercase letters.", "This is not."),
    "punctuation:no_comma": ({}, "No comma at all.", "One, comma."),
}


def test_the_self_check_covers_the_25_instructions_of_the_data(data_dir):
    rows = [json.loads(line) for line in (data_dir / "ifeval" / "input_data.jsonl").open()]
    used = {i for row in rows for i in row["instruction_id_list"]}
    assert used == set(CHECKERS) == set(SELF_CHECK) and len(CHECKERS) == 25


@pytest.mark.parametrize("instruction", sorted(SELF_CHECK))
def test_each_checker_passes_what_follows_and_fails_what_breaks(instruction):
    kwargs, follows, breaks = SELF_CHECK[instruction]
    assert score_ifeval(follows, [instruction], [kwargs])["strict"] == [True]
    assert score_ifeval(breaks, [instruction], [kwargs])["strict"] == [False]
    assert score_ifeval("   ", [instruction], [kwargs])["loose"] == [False]  # an empty response follows nothing


def test_loose_accepts_a_response_whose_first_or_last_line_or_asterisks_break_it():
    lines = "Sure, here it is:\n<<a title>>\nthis part is all in lowercase.\n**Hope this helps!**"
    result = score_ifeval(lines, ["change_case:english_lowercase", "detectable_format:title"], [{}, {}])
    assert result["strict"] == [False, True] and result["loose"] == [True, True]
    assert result["score"] == 0.0 and result["prompt_level_loose"] == 1.0
    assert (result["followed_strict"], result["followed_loose"], result["instructions"]) == (1, 2, 2)


def test_reasoning_is_never_checked():
    text = "<think>Let me think, with commas, about it</think>No comma here."
    assert score_ifeval(text, ["punctuation:no_comma"], [{}])["strict"] == [True]
    assert score_ifeval("<think>no comma here yet", ["punctuation:no_comma"], [{}])["strict"] == [False]  # unclosed: no answer


def test_env_reads_the_541_prompts_and_scores_a_problem_with_a_generation(data_dir):
    env = SkyEnvBuilder.build("ifeval", {})
    problems = env.load_problems()
    assert len(problems) == 541
    first = problems[0]
    row = json.loads((data_dir / "ifeval" / "input_data.jsonl").open().readline())
    assert first["question"] == row["prompt"] and first["id"] == str(row["key"])  # the prompt, unchanged
    assert env.apply_prompt_template_on_item(first)["prompt"] == [{"role": "user", "content": row["prompt"]}]
    result = env.score_item({**first, "generation": "Short, with a comma."})
    assert result["score"] == 0.0 and len(result["strict"]) == len(first["instruction_id_list"])
    assert env.reference_generation(first) is None  # no reference answers: NoReference failures


def test_a_malformed_instruction_is_a_gold_error_not_a_zero():
    env = SkyEnvBuilder.build("ifeval", {})
    with pytest.raises(GoldError, match="needs"):
        env.score_item({"generation": "x", "instruction_id_list": ["keywords:existence"], "kwargs": [{}]})
    with pytest.raises(GoldError, match="unknown IFEval instruction"):
        env.score_item({"generation": "x", "instruction_id_list": ["keywords:nope"], "kwargs": [{}]})


def test_instruction_level_accuracy_counts_failed_samples_as_following_nothing():
    env = SkyEnvBuilder.build("ifeval", {})
    acc = MetricsAccumulator(2, unit_metrics=env.unit_metrics())
    two = {"instruction_id_list": ["punctuation:no_comma", "startend:quotation"], "kwargs": [{}, {}]}
    one = {"instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}
    acc.note_units("a", env.units(two))
    acc.note_units("b", env.units(one))
    for pid, idx, problem, text in [("a", 0, two, '"No comma."'), ("a", 1, two, "No comma."), ("b", 0, one, "A, b")]:
        acc.add_score({"id": pid, "sample_idx": idx, **env.score_item({**problem, "generation": text})})
    acc.add_failure({"id": "b", "sample_idx": 1})
    metrics = acc.summary()
    assert metrics["accuracy"] == metrics["prompt_level_strict_acc"] == pytest.approx(1 / 4)
    assert metrics["prompt_level_loose_acc"] == pytest.approx(1 / 4)
    assert metrics["inst_level_strict_acc"] == pytest.approx(3 / 6)  # 2 + 1 + 0 of 2 + 2 + 1 + 1
    assert metrics["unit_metrics_scored_only"]["inst_level_strict_acc"] == pytest.approx(3 / 5)
    merged = MetricsAccumulator.from_state(json.loads(json.dumps(acc.state())))
    assert merged.summary()["inst_level_strict_acc"] == metrics["inst_level_strict_acc"]


def test_cli_run_reports_the_four_accuracies(tmp_path, data_dir):
    from tests.backends.fault_server import FaultServer

    env = SkyEnvBuilder.build("ifeval", {"limit": 12})
    problems = env.load_problems()
    # a scripted model: the first 6 prompts get "yes" in quotes, the rest a plain line
    answers = {p["question"][:120]: ('"My answer is yes."' if i < 6 else "Plain line, with comma.\n")
               for i, p in enumerate(problems)}
    with FaultServer(answer_table=answers) as server:
        run_cli("evaluate", "+env=ifeval", "env.limit=12", "model_config=openai", "model_config.model_source=scripted",
                f"model_config.api_url={server.url}", "model_config.api_key_env=null",
                f"logging.results_dir={tmp_path}", "logging.experiment_name=run", cwd=tmp_path)
    summary = load_summary(tmp_path / "run")
    scored = [env.score_item({**p, "generation": answers[p["question"][:120]]}) for p in problems]
    instructions = sum(r["instructions"] for r in scored)
    expected = {
        "prompt_level_strict_acc": sum(r["score"] for r in scored) / 12,
        "prompt_level_loose_acc": sum(r["prompt_level_loose"] for r in scored) / 12,
        "inst_level_strict_acc": sum(r["followed_strict"] for r in scored) / instructions,
        "inst_level_loose_acc": sum(r["followed_loose"] for r in scored) / instructions,
    }
    assert summary["counts"]["scored"] == 12 and summary["counts"]["failed"] == 0
    assert {k: summary["metrics"][k] for k in expected} == pytest.approx(expected)
    assert summary["metrics"]["accuracy"] == pytest.approx(expected["prompt_level_strict_acc"])
