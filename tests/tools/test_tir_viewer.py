"""The viewer shows a TIR sample's code and output blocks apart from its text (headless Chromium)."""

from __future__ import annotations

import json

from skyeval.report.build import build_report
from tests.report.browser import screenshot, start, wait_idle
from tests.report.runfolders import write_run

TRANSCRIPT = ("Let me compute.\n```python\nprint(1 < 2, 6 * 7)\n```\n```output\nTrue 42\n```\n"
              "So the answer is \\boxed{42}.")


def test_code_and_output_blocks_are_shown_apart(tmp_path):
    run = write_run(tmp_path / "runs" / "gsm8k_tir", {("21", 0): 1.0})
    part = run / "generations" / "part-00000.jsonl"
    record = json.loads(part.read_text())
    record.update(generation=TRANSCRIPT, reasoning=None)
    part.write_text(json.dumps(record) + "\n")
    report = build_report([tmp_path / "runs"]).parent
    page = start(tmp_path)
    try:
        page.get((report / "viewer.html").as_uri())
        wait_idle(page)
        page.find_element("css selector", "#list tbody tr").click()
        wait_idle(page)
        code = page.find_elements("css selector", "#detail code.tool-code")
        output = page.find_elements("css selector", "#detail code.tool-output")
        assert [(e.text, e.get_attribute("data-label")) for e in code] == [("print(1 < 2, 6 * 7)", "code")]
        assert [(e.text, e.get_attribute("data-label")) for e in output] == [("True 42", "output")]
        assert code[0].value_of_css_property("background-color") != output[0].value_of_css_property("background-color")
        answer = page.find_element("xpath", "//div[@class='col'][h3='Answer']").text
        assert answer.startswith("ANSWER\nLet me compute.") and "So the answer is" in answer  # the box typeset
        assert "```" not in answer  # the fences became the blocks
        screenshot(page, tmp_path, "viewer_tir")
    finally:
        page.quit()
