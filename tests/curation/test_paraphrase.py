"""The meaning-level (paraphrase) check on the development set of tests/curation/data:
GSM8K test problems reworded by others and with a distracting sentence inserted must be
found; clean math word problems and science questions must not be flagged."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from skyeval.curation.decontaminate import DEFAULT_PARAPHRASE, BenchmarkIndex
from skyeval.curation.paraphrase import ParaphraseIndex, quantities
from tests.conftest import REPO

CURATE = str(REPO / "scripts" / "curate.py")


def eval_script():
    spec = importlib.util.spec_from_file_location("eval_decontaminate", REPO / "scripts" / "eval_decontaminate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_quantities_read_number_words_money_percent_and_fractions():
    assert quantities("She has five cats and $1,200.") == {"5", "1200"}
    assert quantities("50% of them, twenty-five more") == {"50", "0.5", "25"}
    assert quantities("two hundred and three quarters, ¾ and 1/4 of a dozen") == {"200", "0.75", "0.25", "12"}
    assert quantities("He runs twice a week, half an hour") == {"2", "0.5"}
    assert quantities("No numbers here.") == set()


def test_dev_set_reworded_and_distractors_found_clean_rows_not_flagged(data_dir):
    """The figures docs/curation.md gives for the default threshold (scripts/eval_decontaminate.py)."""
    results = eval_script().evaluate(data_dir, [DEFAULT_PARAPHRASE])
    cell = {kind: r["by_threshold"][DEFAULT_PARAPHRASE] for kind, r in results.items()}
    rows = {kind: r["rows"] for kind, r in results.items()}
    print("\n", {k: (c["found"], rows[k]) for k, c in cell.items()})
    assert rows == {"reworded": 1315, "distractor": 400, "clean_math": 2200, "clean_gsm8k_train": 1000,
                    "clean_science": 800}
    assert cell["reworded"]["right"] >= 0.95 * rows["reworded"]
    assert cell["reworded"]["paraphrase_only"] >= 0.9 * rows["reworded"]  # n-grams alone find almost none
    assert cell["distractor"]["right"] >= 0.98 * rows["distractor"]
    assert cell["clean_math"]["found"] + cell["clean_science"]["found"] <= 2  # of 3,000
    assert cell["clean_gsm8k_train"]["found"] <= 0.01 * rows["clean_gsm8k_train"]  # same authors and style


def test_few_common_quantities_and_few_words_are_not_evidence(data_dir):
    """A short problem whose quantities are small common numbers is matched by chance by
    many texts (ASDiv's age problems and GSM8K's "Jerry is twice as old as he was 5 years
    ago"): it is trusted less, so a text on the same topic is no match."""
    test = [json.loads(line)["question"] for line in (data_dir / "gsm8k" / "test.jsonl").open()]
    jerry = test.index("Jerry is twice as old as he was 5 years ago. How old will Jerry be in 3 years?")
    index = ParaphraseIndex.build(test)
    assert index.trust[jerry] < 0.5 < sorted(index.trust)[len(test) // 2]
    ages = ["Five years ago, I was thrice as old as my son and ten years later I shall be twice as old as my son. "
            "How old are we now?",
            "Five years ago, Nancy was thrice as old as Sam. Ten years later, Nancy will be twice as old as Sam. "
            "How old are Nancy and Sam?"]
    assert index.check(ages) == [None, None]
    assert index.check(ages, threshold=0.01)[0].problem == jerry  # the best candidate, far below the threshold


def test_the_paraphrase_check_alone_finds_distractor_inserted_problems(data_dir):
    """The n-gram check finds them all; the meaning-level check must too, on its own."""
    module = eval_script()
    test = [json.loads(line)["question"] for line in (data_dir / "gsm8k" / "test.jsonl").open()]
    index = ParaphraseIndex.build(test)
    rows = module.dev_rows(data_dir)["distractor"]
    found = index.check([r["problem"] for r in rows])
    right = sum(1 for r, m in zip(rows, found) if m is not None and m.problem == r["gsm8k_idx"])
    print(f"\n{right} of {len(rows)}")
    assert right >= 0.95 * len(rows)


def test_a_paraphrase_match_records_its_score_and_problem():
    bench = {"gsm8k": [
        ("p1", "Janet's ducks lay 16 eggs per day. She eats three for breakfast every morning and bakes muffins "
               "for her friends every day with four. She sells the remainder at the farmers' market daily for $2 "
               "per fresh duck egg. How much in dollars does she make every day at the farmers' market?"),
        ("p2", "A robe takes 2 bolts of blue fiber and half that much white fiber. How many bolts in total does it "
               "take?"),
        ("p3", "Carla is downloading a 200 GB file. Normally she can download 2 GB/minute, but 40% of the way "
               "through the download, Windows forces a restart to install updates, which takes 20 minutes."),
    ]}
    index = BenchmarkIndex.build(bench)
    reworded = ("Janet has ducks that produce sixteen eggs daily. Three of them she consumes at breakfast and four "
                "go into muffins she bakes for friends. The rest she sells at the farmers' market at $2 apiece. "
                "What are her daily earnings at the market in dollars?")
    other = "Sam has 16 marbles and gives three to a friend and four to his sister. How many are left?"
    found = index.check([[("problem", reworded)], [("problem", other)]])
    (match,) = found[0]
    assert (match.benchmark, match.problem_id, match.match, match.field) == ("gsm8k", "p1", "paraphrase", "problem")
    assert match.score >= DEFAULT_PARAPHRASE and match.ngram is None and 0 < match.overlap <= 1
    assert found[1] == []
    off = BenchmarkIndex.build(bench, paraphrase=None)
    assert off.check([[("problem", reworded)]]) == [[]] and off.describe()["paraphrase"] is None
    with pytest.raises(ValueError):
        ParaphraseIndex.build(["x"], threshold=0)


def test_cli_report_splits_kinds_and_report_only_tabulates_thresholds(tmp_path, data_dir):
    rows = eval_script().dev_rows(data_dir)
    sample = rows["reworded"][:40] + rows["distractor"][:10] + rows["clean_math"][:50]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in sample))

    def curate(*args):
        proc = subprocess.run([sys.executable, CURATE, "decontaminate", str(tmp_path / "in.jsonl"), "--against",
                               "gsm8k", "--workers", "1", *args], capture_output=True, text=True, timeout=600, cwd=REPO)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    out = curate("--out", str(tmp_path / "out"))
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    split = report["removed_by_benchmark_and_match"]["gsm8k"]
    assert split["paraphrase"] >= 30 and split.get("contains", 0) + split.get("near", 0) >= 9
    assert report["removed_by_match"]["paraphrase"] == split["paraphrase"]
    assert set(report["check_seconds"]) == {"ngram", "paraphrase"}
    assert "removed_by_paraphrase_threshold" not in report
    assert out.splitlines()[0].split()[-5:] == ["exact", "near", "contains", "paraphrase", "model"]
    assert "check seconds" in out
    removed = [json.loads(line) for line in (tmp_path / "out" / "removed.jsonl").open()]
    para = [m for r in removed for m in r["contamination"] if m["match"] == "paraphrase"]
    assert para and all(m["score"] >= DEFAULT_PARAPHRASE and m["problem_id"] for m in para)

    out = curate("--report-only", "--out", str(tmp_path / "r"))
    sweep = json.loads((tmp_path / "r" / "report.json").read_text())["removed_by_paraphrase_threshold"]
    counts = list(sweep.values())
    assert counts == sorted(counts, reverse=True) and sweep[str(DEFAULT_PARAPHRASE)] == report["removed"]
    assert "paraphrase threshold  rows removed" in out and "(current)" in out

    off = curate("--no-paraphrase", "--report-only", "--out", str(tmp_path / "off"))
    report = json.loads((tmp_path / "off" / "report.json").read_text())
    assert report["index"]["paraphrase"] is None and set(report["check_seconds"]) == {"ngram"}
    assert "removed_by_paraphrase_threshold" not in report and "paraphrase threshold" not in off
    assert "paraphrase" not in report["removed_by_match"] and report["removed"] < len(sample) // 2


@pytest.mark.parametrize("value", ["0", "1.5", "x"])
def test_cli_refuses_a_paraphrase_threshold_out_of_range_in_one_line(tmp_path, value):
    (tmp_path / "in.jsonl").write_text('{"problem": "What is 2 + 3?"}\n')
    proc = subprocess.run([sys.executable, CURATE, "decontaminate", str(tmp_path / "in.jsonl"), "--against", "gsm8k",
                           "--paraphrase", value], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].endswith(f"argument --paraphrase: must be a number in (0, 1], "
                                                         f"got {value!r}")


def test_a_problem_under_several_names_is_indexed_once_and_reported_under_each():
    """ASDiv and MAWPS share problems: the copy (same normalized text) is not indexed again,
    does not change the words' weights, and a paraphrase of it is reported under both names."""
    janet = ("Janet's ducks lay 16 eggs per day. She eats three for breakfast every morning and bakes muffins for "
             "her friends every day with four. She sells the remainder at the farmers' market daily for $2 per "
             "fresh duck egg. How much in dollars does she make every day at the farmers' market?")
    robe = "A robe takes 2 bolts of blue fiber and half that much white fiber. How many bolts in total does it take?"
    copy = janet.upper().replace("?", " ?")
    bench = {"gsm8k": [("p1", janet), ("p2", robe)], "other": [("c1", copy)]}
    index = BenchmarkIndex.build(bench)
    assert index.describe()["paraphrase"]["same_problem_copies"] == 1
    alone = ParaphraseIndex.build([janet, robe])
    assert list(index.paraphrase.word_weights) == list(alone.word_weights)
    reworded = ("Janet has ducks that produce sixteen eggs daily. Three of them she consumes at breakfast and four "
                "go into muffins she bakes for friends. The rest she sells at the farmers' market at $2 apiece. "
                "What are her daily earnings at the market in dollars?")
    (matches,) = index.check([[("problem", reworded)]])
    assert sorted((m.benchmark, m.problem_id, m.match) for m in matches) == [
        ("gsm8k", "p1", "paraphrase"), ("other", "c1", "paraphrase")]
    assert len({m.score for m in matches}) == 1
