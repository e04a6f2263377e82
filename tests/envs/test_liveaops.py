"""LiveAoPSBench (`+env=liveaops`) on the real v1.0 file and on SkyThought's later format."""

import json

import pytest

from skyeval import SkyEnvBuilder
from skyeval.envs.base import RowScorer
from skyeval.envs.math import LiveAoPSEnv

LIVEAOPS = "liveaops/LiveAoPSBench_v1.0.jsonl"


def rows(data_dir):
    path = data_dir / LIVEAOPS
    if not path.exists():
        pytest.skip(f"{path} not found (set SKYEVAL_DATA_DIR)")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def problem_with(env, answers):
    return next(p for p in env.iter_problems() if p["answers"] == answers)


def test_reads_every_problem_with_its_month_and_skythoughts_prompt(data_dir):
    raw = rows(data_dir)
    env = SkyEnvBuilder.build("liveaops")
    problems = env.load_problems()
    assert len(problems) == len(raw) == 4671
    assert problems[0]["id"] == "0" and problems[0]["expected"] == ["2"] and problems[0]["date"] == "2024-01"
    assert {p["date"] for p in problems} == {f"2024-{m:02d}" for m in range(1, 12)}
    assert problems[1]["expected"] == raw[1]["answers"] and len(problems[1]["expected"]) == 3
    prompt = env.apply_prompt_template_on_item(problems[0])["prompt"]
    assert prompt == [{"role": "user", "content": "Return your final response within \\boxed{}. " + raw[0]["question"]}]


def test_any_listed_answer_counts_by_default_and_only_the_first_with_answers_first(data_dir):
    rows(data_dir)
    any_env, first_env = SkyEnvBuilder.build("liveaops"), SkyEnvBuilder.build("liveaops", {"answers": "first"})
    forms = problem_with(any_env, ["40\\%", "40"])
    assert any_env.score_item({**forms, "generation": "So \\boxed{40}."})["score"] == 1.0
    assert any_env.score_item({**forms, "generation": "So \\boxed{41}."})["score"] == 0.0  # not a listed value
    values = problem_with(any_env, ["\\frac{33}{64}", "\\frac{35}{128}"])
    strict = problem_with(first_env, ["\\frac{33}{64}", "\\frac{35}{128}"])
    assert strict["expected"] == ["\\frac{33}{64}"]
    second = "The probability is \\boxed{\\frac{35}{128}}."
    assert any_env.score_item({**values, "generation": second})["score"] == 1.0
    assert first_env.score_item({**strict, "generation": second})["score"] == 0.0
    assert first_env.score_item({**strict, "generation": "\\boxed{\\frac{33}{64}}"})["score"] == 1.0
    with pytest.raises(ValueError, match="Did you mean 'first'"):
        SkyEnvBuilder.build("liveaops", {"answers": "frist"})


def test_value_classes_tell_forms_of_one_answer_from_different_values():
    assert LiveAoPSEnv.value_classes(["40\\%", "40"]) == [["40\\%", "40"]]
    assert LiveAoPSEnv.value_classes(["f(x)=x\\quad\\forall x>0", "f(x) = x \\quad \\forall x > 0"]) == \
        [["f(x)=x\\quad\\forall x>0", "f(x) = x \\quad \\forall x > 0"]]  # equal but for LaTeX spacing
    assert LiveAoPSEnv.value_classes(["\\dfrac{3}{2}", "\\frac{3}{2}", "1.5"]) == [["\\dfrac{3}{2}", "\\frac{3}{2}", "1.5"]]
    assert LiveAoPSEnv.value_classes(["\\frac{33}{64}", "\\frac{35}{128}"]) == [["\\frac{33}{64}"], ["\\frac{35}{128}"]]
    assert LiveAoPSEnv.value_classes(["117", "270", "348"]) == [["117"], ["270"], ["348"]]
    assert LiveAoPSEnv.value_classes(["4198", "\\frac{54577}{13}"]) == [["4198"], ["\\frac{54577}{13}"]]


def test_reads_skythoughts_later_file_with_one_answer_field(tmp_path, data_dir):
    raw = rows(data_dir)[:6]
    later = tmp_path / "liveaops" / "LiveAoPSBench-2024.jsonl"
    later.parent.mkdir()
    later.write_text("".join(json.dumps({"question": r["question"], "answer": r["answers"][0],
                                         "post_time": r["post_time"]}) + "\n" for r in raw), encoding="utf-8")
    env = SkyEnvBuilder.build("liveaops", {"data_dir": str(tmp_path), "local_files": "liveaops/LiveAoPSBench-2024.jsonl"})
    problems = env.load_problems()
    assert [p["expected"] for p in problems] == [[r["answers"][0]] for r in raw]
    assert [p["date"] for p in problems] == ["2024-01"] * 6
    gold = [env.score_item({**p, "generation": env.reference_generation(p)})["score"] for p in problems]
    assert gold == [1.0] * 6
    wrong = env.score_item({**problems[0], "generation": env.reference_generation(problems[2])})
    assert problems[0]["expected"] != problems[2]["expected"] and wrong["score"] == 0.0


def test_a_row_without_an_answer_has_no_expected_and_scores_null(tmp_path):
    path = tmp_path / "liveaops" / "LiveAoPSBench-2024.jsonl"
    path.parent.mkdir()
    path.write_text(json.dumps({"question": "Q?", "answer": "", "post_time": {"year": 2024, "month": 3}}) + "\n")
    env = SkyEnvBuilder.build("liveaops", {"data_dir": str(tmp_path), "local_files": "liveaops/LiveAoPSBench-2024.jsonl"})
    (problem,) = env.load_problems()
    assert problem["expected"] is None and problem["date"] == "2024-03"
    assert RowScorer(env).outcome({**problem, "generation": "\\boxed{1}"})["score"] is None


@pytest.mark.slow
def test_answer_list_counts_documented_in_benchmarks_md(data_dir):
    """docs/benchmarks.md's counts (scripts/liveaops_answers.py): ~90 s on two free cores, minutes on a loaded machine."""
    rows(data_dir)
    env = SkyEnvBuilder.build("liveaops")
    several = [p for p in env.iter_problems() if len(p["answers"]) > 1]
    split = sum(len(env.value_classes(p["answers"])) > 1 for p in several)
    assert (len(several), len(several) - split, split) == (1471, 1165, 306)


@pytest.mark.parametrize(
    ("answers", "classes"),
    [  # lists (ids 69, 990, 1126, 1499, 4313) the release before issue 47 grouped the same way
        (["AB = 0", "0"], 1),
        ([r"(2-\sqrt[3]{2})^2=0.547", "0.547"], 1),
        (["48.875", r"48+\frac{42}{48}=48.875"], 1),
        ([r"(12,3,4), \left(6,\frac{27}{5}, \frac{38}{5}\right)", "(x, y, z) = (12, 3, 4), (6, 5.4, 7.6)"], 1),
        (["x^2+y^2+z^2=0", "0"], 2),  # an equation to solve is no value (issue 47)
    ],
)
def test_value_classes_keep_the_forms_of_one_answer(answers, classes):
    assert len(LiveAoPSEnv.value_classes(answers)) == classes


def test_audit_lists_the_problems_whose_answers_disagree_in_value(tmp_path, data_dir):
    from skyeval.report.audit import main as audit
    from tests.conftest import run_cli, run_folder

    rows(data_dir)
    run_cli("evaluate", "+env=liveaops", "model_config=reference", "env.limit=50", cwd=tmp_path)
    folder = run_folder(tmp_path / "outputs", "liveaops_reference_t0.0")
    assert audit([f"run_dir={folder}"]) == 0
    listed = [json.loads(line) for line in (folder / "audit" / "answer_disagreements.jsonl").read_text().splitlines()]
    by_id = {r["id"]: r for r in listed}
    assert by_id["44"]["classes"] == [["\\frac{33}{64}"], ["\\frac{35}{128}"]] and by_id["44"]["date"] == "2024-01"
    assert by_id["37"]["answers"] == ["4198", "\\frac{54577}{13}"]
    assert "63" not in by_id and "1" not in by_id  # forms of one answer (spacing; three forms of f(x) = x)
    summary = json.loads((folder / "audit" / "summary.json").read_text())
    several = sum(len(p["answers"]) > 1 for p in SkyEnvBuilder.build("liveaops", {"limit": 50}).iter_problems())
    assert summary["answer_lists"] == several and summary["answer_lists_disagreeing"] == len(listed) >= 2
