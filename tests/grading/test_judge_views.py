"""The report and the viewer show which samples a judge decided."""

from __future__ import annotations

import json
from pathlib import Path

from skyeval.report.build import build_report

from .conftest import EQUIVALENT
from .test_judge_run import base, judged_by, run


def judged_report(tmp_path, omni_data, model, judge) -> Path:
    run(*base(model, omni_data, tmp_path / "runs"), "grading.mode=fallback", *judged_by(judge))
    return build_report([tmp_path / "runs"]).parent


def list_rows(report: Path) -> list[list]:
    text = next((report / "data" / "r0").glob("list-*.js")).read_text(encoding="utf-8")
    return json.loads(text[text.index(", [") + 2: text.rindex(");")])


def test_report_counts_and_viewer_rows_name_the_judge(tmp_path, omni_data, model, judge):
    report = judged_report(tmp_path, omni_data, model, judge)
    markdown = (report / "summary.md").read_text(encoding="utf-8")
    assert "graded by a judge" in markdown and "2 of 6 (fallback)" in markdown
    judged = [row[13] for row in list_rows(report) if row[13] is not None]
    assert judged == [[1, "equivalent", None, EQUIVALENT]] * 2


def test_viewer_filters_judged_samples_and_shows_the_reply(tmp_path, omni_data, model, judge):
    from tests.report.browser import count, screenshot, start, wait_idle

    report = judged_report(tmp_path, omni_data, model, judge)
    page = start(tmp_path)
    try:
        page.get((report / "viewer.html").as_uri())
        assert count(page) == 6
        page.find_element("css selector", "#f-outcome button[data-outcome='judged']").click()
        assert count(page) == 2
        page.find_element("css selector", "#list tbody tr").click()
        wait_idle(page)
        detail = page.find_element("id", "detail").text
        assert "judge: equivalent" in detail and "Verdict: equivalent" in detail
        assert "judge (decided this score)" in detail.lower()  # a heading, shown in capitals
        screenshot(page, tmp_path, "viewer-judged")
    finally:
        page.quit()
