"""extract_choice on 12,032 real MMLU-Pro generations (Llama-3.1-8B-Instruct, 5-shot CoT),
compared with the letters the MMLU-Pro authors extracted (``pred``).

Their extractor (TIGER-AI-Lab/MMLU-Pro ``compute_accuracy.py``) takes the FIRST
"answer is (X)", else a line's "Answer: X", else the last stand-alone capital A-J anywhere
(a truth-table "F", the pronoun "I"); when all fail, the stored ``pred`` is a placeholder "G".
So ``pred`` is a real answer only where the text states one; elsewhere we expect None.
"""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import pytest

from skyeval.scorers.choice import extract_choice

THEIR_FIRST_PATTERN = re.compile(r"answer is \(?([A-J])\)?")


@pytest.fixture(scope="module")
def rows(data_dir: Path) -> list[dict]:
    path = data_dir / "mmlu_pro" / "model_outputs_Meta-Llama-3_1-8B-Instruct_5shots.zip"
    if not path.exists():
        pytest.skip(f"{path} not found")
    with zipfile.ZipFile(path) as archive:
        (name,) = archive.namelist()
        data = json.loads(archive.read(name))
    for row in data:
        row["ours"] = extract_choice(row["generated_text"], num_options=len(row["options"]))
        row["stated"] = THEIR_FIRST_PATTERN.search(row["generated_text"]) is not None
    return data


def _show(row: dict) -> str:
    return f"{row['question_id']}: pred={row['pred']} ours={row['ours']} gold={row['answer']} tail={row['generated_text'][-160:]!r}"


def test_agreement_with_the_authors(rows: list[dict]):
    assert len(rows) == 12032
    agree = sum(row["ours"] == row["pred"] for row in rows) / len(rows)
    ours = sum(row["ours"] == row["answer"] for row in rows) / len(rows)
    theirs = sum(row["pred"] == row["answer"] for row in rows) / len(rows)
    stated = [row for row in rows if row["stated"]]
    stated_agree = sum(row["ours"] == row["pred"] for row in stated) / len(stated)
    print(f"\nagreement with pred: {agree:.2%} of {len(rows)}; where the text states "
          f"'answer is (X)': {stated_agree:.2%} of {len(stated)}")
    print(f"accuracy: ours {ours:.2%}, theirs {theirs:.2%}")
    for row in [row for row in stated if row["ours"] != row["pred"]][:20]:
        print("DISAGREE", _show(row))
    assert stated_agree >= 0.99


def test_no_letter_is_read_where_no_answer_is_stated(rows: list[dict]):
    """Where the text has no "answer is (X)", their ``pred`` is a stray letter or the "G"
    placeholder (their None). We should find nothing there, and we find no more than a few."""
    unstated = [row for row in rows if not row["stated"]]
    found = [row for row in unstated if row["ours"] is not None]
    print(f"\nno 'answer is (X)': {len(unstated)} rows; pred 'G' {sum(r['pred'] == 'G' for r in unstated)}; "
          f"we extract a letter in {len(found)}")
    for row in found:
        print("FOUND", _show(row))
    assert len(found) <= 0.01 * len(unstated)
