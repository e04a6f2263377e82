"""Views refuse to pair what differs (issue 49 item 4): report's matrix marks a run whose
problems differ in gold or text from the other runs of its benchmark (`--strict`: an error),
and the viewer's diff pairs only problems with the same gold and text. (`compare`:
tests/report/test_compare.py.)"""

from __future__ import annotations

import json

import pytest

from skyeval.errors import ConfigError
from skyeval.report.build import build_report, main
from tests.report.browser import count, start
from tests.report.runfolders import describe_problems, write_run


def three_runs(tmp_path):
    outcomes = {(str(p), 0): 1.0 for p in range(6)}
    root = tmp_path / "runs"
    describe_problems(write_run(root / "a", outcomes, model="m1"))
    describe_problems(write_run(root / "b", outcomes, model="m2"), {"1": "gold_hash", "4": "question"})
    describe_problems(write_run(root / "c", outcomes, model="m3"))
    return root


def test_the_matrix_marks_a_run_of_other_problems(tmp_path, capsys):
    root = three_runs(tmp_path)
    index = build_report([root], tmp_path / "out", viewer=False)
    err = capsys.readouterr().err
    assert err.count("skyeval: warning:") == 1
    assert f"{root / 'b'}: 2 problems differ in gold or problem text from the other runs of gsm8k" in err
    md = (index.parent / "summary.md").read_text()
    row = next(line for line in md.splitlines() if line.startswith("| m2 |"))
    assert "⚠ 2 problems differ from the other runs' (gold or text)" in row
    assert "differ" not in next(line for line in md.splitlines() if line.startswith("| m1 |"))
    with pytest.raises(ConfigError, match="2 problems differ in gold or problem text.*--strict"):
        build_report([root], tmp_path / "out", viewer=False, strict=True)
    assert main([str(root), "--out", str(tmp_path / "out2"), "--strict"]) == 2


def test_the_viewers_diff_pairs_only_the_same_problems(tmp_path):
    """A right on problems 0-5; B wrong on 0-2, and its problems 1 (gold) and 4 (text) are
    other problems. Before: the diff listed 0, 1 and 2. Now 1 is not paired: 0 and 2."""
    root = tmp_path / "runs"
    describe_problems(write_run(root / "a", {(str(p), 0): 1.0 for p in range(6)}, model="old"))
    describe_problems(write_run(root / "b", {(str(p), 0): 0.0 if p <= 2 else 1.0 for p in range(6)}, model="new"),
                      {"1": "gold_hash", "4": "question"})
    report = build_report([root], tmp_path / "out").parent
    index = json.loads((report / "data" / "index.js").read_text().split("=", 1)[1].rstrip().rstrip(";"))
    key = {run["model"]: run["key"] for run in index["runs"]}
    page = start(tmp_path)
    try:
        from selenium.webdriver.support.ui import Select

        page.get((report / "viewer.html").as_uri() + "?mode=diff")
        Select(page.find_element("id", "d-a")).select_by_value(key["old"])
        Select(page.find_element("id", "d-b")).select_by_value(key["new"])
        assert count(page) == 2
        assert sorted(td.text for td in page.find_elements("css selector", "#list tbody tr td:first-child")) == ["0", "2"]
        assert "(of 4 problems in both runs; 2 left out: their gold or problem text differ between the runs)" in \
            page.find_element("id", "count").text
    finally:
        page.quit()
