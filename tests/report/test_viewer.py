"""The per-sample viewer in real headless Chromium, opened from file://."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skyeval.report.build import build_report
from tests.report.browser import count, screenshot, start, wait_idle
from tests.report.runfolders import FAILED, write_run


@pytest.fixture
def report(tmp_path) -> Path:
    """Two gsm8k runs (old, new) and one math500 run.

    old: 12 problems x 2 samples; right on problems 0-5 (both samples), wrong on 6-11, sample 1
         of problem 11 failed; sample 0 of 6 and 7 truncated; sample 0 of 8 a parse failure.
    new: right on problems 0-3 and 6-9 (both samples), wrong on 4, 5, 10, 11.
    Disagreeing problems: B better on 6, 7, 8, 9; B worse on 4, 5."""
    sweep = tmp_path / "sweep"
    old = {(str(p), i): 1.0 if p <= 5 else 0.0 for p in range(12) for i in range(2)}
    old[("11", 1)] = FAILED
    write_run(sweep / "gsm8k_old", old, model="old", n=2, truncated={("6", 0), ("7", 0)}, parse_failed={("8", 0)})
    new = {(str(p), i): 1.0 if p <= 3 or 6 <= p <= 9 else 0.0 for p in range(12) for i in range(2)}
    write_run(sweep / "gsm8k_new", new, model="new", n=2)
    write_run(sweep / "math500_new", {(str(p), 0): 1.0 for p in range(5)}, env="math500", model="new")
    return build_report([sweep]).parent


def pill(page, group: str, value: str):
    page.find_element("css selector", f"#{group} button[data-{'outcome' if group == 'f-outcome' else 'which'}='{value}']").click()


def listed_ids(page) -> list[str]:
    return [td.text for td in page.find_elements("css selector", "#list tbody tr td:first-child")]


def test_filters_search_and_detail(report, tmp_path):
    page = start(tmp_path)
    try:
        page.get((report / "viewer.html").as_uri())
        assert count(page) == 24 + 24 + 5  # every sample of the three runs
        from selenium.webdriver.support.ui import Select

        Select(page.find_element("id", "f-env")).select_by_value("gsm8k")
        assert count(page) == 48
        Select(page.find_element("id", "f-model")).select_by_value("old")
        assert count(page) == 24
        for outcome, expected in (("correct", 12), ("wrong", 11), ("failed", 1), ("truncated", 2), ("parse", 1), ("all", 24)):
            pill(page, "f-outcome", outcome)
            assert count(page) == expected, outcome
        pill(page, "f-outcome", "wrong")
        page.find_element("id", "f-search").send_keys("15")  # the wrong answer to problem 7 is 2*7+1
        assert count(page) == 2
        assert "2 of 24 samples match" in page.find_element("id", "count").text
        page.find_element("css selector", "#list tbody tr").click()
        wait_idle(page)
        detail = page.find_element("id", "detail").text
        for heading in ("PROMPT", "REASONING", "ANSWER", "EXTRACTED / GOLD"):
            assert heading in detail
        assert "Problem 7: what is 7 plus 7?" in detail and "thinking about 7 sample 0" in detail
        answers = page.find_element("css selector", "#detail table.answers").text
        assert answers.split() == ["extracted", "15", "gold", "14"] and "truncated" in detail
        screenshot(page, tmp_path, "viewer_samples")
    finally:
        page.quit()


def test_diff_mode_lists_the_disagreeing_problems(report, tmp_path):
    page = start(tmp_path)
    try:
        page.get((report / "viewer.html").as_uri() + "?mode=diff")
        from selenium.webdriver.support.ui import Select

        index = json.loads((report / "data" / "index.js").read_text().split("=", 1)[1].rstrip().rstrip(";"))
        key = {run["label"].split(" · ")[0] + "/" + run["env"]: run["key"] for run in index["runs"]}
        Select(page.find_element("id", "d-a")).select_by_value(key["old/gsm8k"])
        Select(page.find_element("id", "d-b")).select_by_value(key["new/gsm8k"])
        assert count(page) == 6
        assert sorted(listed_ids(page)) == ["4", "5", "6", "7", "8", "9"]
        math_option = page.find_element("css selector", f"#d-b option[value='{key['new/math500']}']")
        assert not math_option.is_enabled()  # another benchmark cannot be B
        pill(page, "d-which", "won")
        assert count(page) == 4 and sorted(listed_ids(page)) == ["6", "7", "8", "9"]
        pill(page, "d-which", "lost")
        assert count(page) == 2 and sorted(listed_ids(page)) == ["4", "5"]
        pill(page, "d-which", "all")
        wait_idle(page)
        page.find_element("css selector", "#list tbody tr").click()
        wait_idle(page)
        detail = page.find_element("id", "detail").text
        assert "A · old · gsm8k" in detail and "B · new · gsm8k" in detail
        assert "old answer to" in detail and "new answer to" in detail
        screenshot(page, tmp_path, "viewer_diff")
    finally:
        page.quit()


@pytest.mark.slow
def test_100k_samples_stay_usable(tmp_path):
    """1000 problems x 100 samples: chunked data, every sample counted, filters work, a page of rows rendered."""
    run = tmp_path / "big" / "aime_big"
    for sub in ("generations", "scores", "failures"):
        (run / sub).mkdir(parents=True)
    right = 0
    for part in range(4):
        with (run / "generations" / f"part-{part:05d}.jsonl").open("w") as gens, \
                (run / "scores" / f"part-{part:05d}.jsonl").open("w") as scores:
            for p in range(part * 250, (part + 1) * 250):
                for i in range(100):
                    ok = (p * 7 + i) % 3 == 0
                    right += ok
                    text = f"Long reasoning for problem {p}, sample {i}. " * 20
                    gens.write(json.dumps({"id": str(p), "sample_idx": i, "prompt": f"Problem {p} " * 30, "reasoning": text,
                                           "generation": f"so the answer is \\boxed{{{p if ok else -p}}}", "finish_reason": "stop",
                                           "usage": {"completion_tokens": 300}, "seed": i}) + "\n")
                    scores.write(json.dumps({"id": str(p), "sample_idx": i, "score": float(ok), "extracted": str(p if ok else -p),
                                             "parse_failed": False, "expected": str(p), "finish_reason": "stop"}) + "\n")
    (run / "summary.json").write_text(json.dumps({"env": "aime24", "model": "big", "counts": {"samples": 100_000}}))
    report = build_report([tmp_path / "big"]).parent
    assert len(list((report / "data" / "r0").glob("list-*.js"))) == 20
    page = start(tmp_path)
    try:
        page.get((report / "viewer.html").as_uri())
        assert count(page) == 100_000
        assert len(page.find_elements("css selector", "#list tbody tr")) == 200  # one page rendered, not 100k rows
        pill(page, "f-outcome", "correct")
        assert count(page) == right
        pill(page, "f-outcome", "wrong")
        assert count(page) == 100_000 - right
        page.find_element("id", "f-search").send_keys("-999")  # the wrong answers to problem 999
        assert count(page) == sum((999 * 7 + i) % 3 != 0 for i in range(100))
        screenshot(page, tmp_path, "viewer_100k")
    finally:
        page.quit()


@pytest.fixture
def maths_report(tmp_path) -> Path:
    """One math run whose records were written in completion order (problem 10 first),
    with LaTeX in the problem, the reasoning and the answer, golds as lists, and a formula
    KaTeX cannot parse."""
    run = tmp_path / "runs" / "math_run"
    for sub in ("generations", "scores", "failures"):
        (run / sub).mkdir(parents=True)
    order = ["10", "2", "1", "11", "3"]
    gens, scores = [], []
    for pid in order:
        root = int(pid) * 7 % 12  # golds in another order than the ids: 2 (problem 2), 5 (11), 7 (1), 9 (3), 10 (10)
        gens.append({"id": pid, "sample_idx": 0, "finish_reason": "stop", "seed": 7,
                     "prompt": [{"role": "user", "content": f"Problem {pid}: find $x$ with $x^2 = \\frac{{{pid}}}{{4}}$. "
                                                              "Put the answer in \\boxed{}."}],
                     "reasoning": f"We need $x^2 = \\frac{{{pid}}}{{4}}$, so \\(x = \\sqrt{{{pid}}}/2\\). "
                                  "A price of $5 and $10 is no formula. Broken: $\\frac{1}{$ stays as written.",
                     "generation": f"The answer is \\[x = \\frac{{\\sqrt{{{root}}}}}{{2}}\\] so \\boxed{{\\frac{{\\sqrt{{{root}}}}}{{2}}}}"})
        scores.append({"id": pid, "sample_idx": 0, "score": 1.0, "parse_failed": False, "finish_reason": "stop",
                       "extracted": f"\\frac{{\\sqrt{{{root}}}}}{{2}}",
                       "expected": [f"\\frac{{\\sqrt{{{root}}}}}{{2}}", f"\\dfrac{{\\sqrt{{{root}}}}}{{2}}"]})
    for kind, records in (("generations", gens), ("scores", scores), ("failures", [])):
        (run / kind / "part-00000.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (run / "summary.json").write_text(json.dumps({
        "env": "math500", "model": "m", "status": "complete", "stage": "evaluate",
        "counts": {"problems": 5, "samples": 5, "scored": 5, "failed": 0}, "metrics": {"accuracy": 1.0},
        "config": {"sampling_params": {"n": 1}, "env": {"_target_": "skyeval.envs.math.MathEnv"}}}))
    return build_report([tmp_path / "runs"]).parent


def test_maths_is_typeset_golds_are_text_and_rows_in_problem_order(maths_report, tmp_path):
    page = start(tmp_path)
    try:
        page.get((maths_report / "viewer.html").as_uri())
        assert count(page) == 5
        assert listed_ids(page) == ["1", "2", "3", "10", "11"]  # by problem, not in completion order
        gold_cells = page.find_elements("css selector", "#list tbody td.gold")
        assert all(cell.find_elements("css selector", ".katex") for cell in gold_cells)
        assert not any("[" in cell.text or '"' in cell.text or "\\\\" in cell.text for cell in gold_cells)
        page.find_element("css selector", "#list tbody tr").click()
        wait_idle(page)
        detail = page.find_element("id", "detail")
        cols = {col.find_element("css selector", "h3").text: col for col in detail.find_elements("css selector", ".col")}
        prompt, reasoning, answer = cols["PROMPT"], cols["REASONING"], cols["ANSWER"]
        assert len(prompt.find_elements("css selector", ".katex")) == 2 and "\\boxed{}" in prompt.text  # an empty box stays
        assert len(reasoning.find_elements("css selector", ".katex")) == 2  # $…$ and \(…\); "$5 and $10" is text
        assert "A price of $5 and $10 is no formula." in reasoning.text
        broken = reasoning.find_element("css selector", ".tex-error")  # a formula KaTeX cannot parse: its source
        assert broken.text == "$\\frac{1}{$" and broken.get_attribute("title")
        assert answer.find_elements("css selector", ".katex-display") and answer.find_elements("css selector", ".boxpad")
        gold = detail.find_element("css selector", "table.answers td.gold")
        assert len(gold.find_elements("css selector", ".katex")) == 2 and "\\frac" not in gold.text.replace("\n", "")[:1]
        screenshot(page, tmp_path, "viewer_maths")
        page.find_element("css selector", "#list th[data-sort='problem']").click()  # a second click reverses
        wait_idle(page)
        assert listed_ids(page) == ["11", "10", "3", "2", "1"]
        page.find_element("css selector", "#list th[data-sort='gold']").click()
        wait_idle(page)
        assert listed_ids(page) == ["2", "11", "1", "3", "10"]  # by the gold's text, numbers in it as numbers
    finally:
        page.quit()
