"""The verdict regression gate (docs/grading.md, "The regression gate").

Every row of the snapshot (tests/scorers/grading_snapshot/verdicts.jsonl.xz, PROVENANCE.md
beside it) is graded as a run grades it, and its verdict must be the one the grader gave at the
release the gate starts from, unless the row is listed in changes.jsonl with the verdict it has
now and the reason, reviewed. A grader change that moves a verdict fails here until its author
has read the row: `python scripts/grading_diff.py main` prints every changed row, and
`--json FILE` writes them in the changes file's shape, reasons to be filled in.
"""

from __future__ import annotations

import json
import lzma
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SNAPSHOT = REPO / "tests" / "scorers" / "grading_snapshot"
ROWS, CHANGES = SNAPSHOT / "verdicts.jsonl.xz", SNAPSHOT / "changes.jsonl"
GATED = ("score", "verdict")
MATH_ENVS = {"aime24", "aime25", "amc23", "math500", "gsm8k", "minervamath", "olympiadbench_math_en", "liveaops",
             "omni_math", "numina"}


def _rows() -> list[dict]:
    with lzma.open(ROWS, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _changes() -> list[dict]:
    return [json.loads(line) for line in CHANGES.read_text(encoding="utf-8").splitlines() if line.strip()]


def _gated(verdict: dict) -> tuple:
    return tuple(verdict.get(key) for key in GATED)


def test_the_snapshot_is_broad_and_small():
    rows = _rows()
    assert len(rows) >= 10_000 and ROWS.stat().st_size <= 10 * 2**20
    assert len({r["id"] for r in rows}) == len(rows)
    kinds = Counter(r["kind"] for r in rows)
    for kind in ("bare_short_answer", "bare_gold", "boxed_cot", "short_cot", "long_thinking", "base_few_shot",
                 "multiple_choice", "gold_selfcheck", "cross_wired", "hack_approximation", "hack_hedge_boxes",
                 "hack_hedge_box", "hack_hedge_statement", "hack_range", "hack_box_then_line"):
        assert kinds[kind] >= 100, (kind, kinds[kind])
    public = {r["source"] for r in rows} - {"selfcheck", "bare", "hacks", "dev_set", "corpus", "rl_sft"}
    assert len(public) >= 3, public  # independent public sources beyond the dev set's repository
    for kind in ("gold_selfcheck", "cross_wired"):
        assert {r["env"] for r in rows if r["kind"] == kind} == MATH_ENVS


def test_the_changes_file_is_reviewed():
    rows = {r["id"]: r for r in _rows()}
    changes = _changes()
    ids = [c["id"] for c in changes]
    assert len(ids) == len(set(ids)), "a row is listed twice in changes.jsonl"
    assert not [i for i in ids if i not in rows], "changes.jsonl lists rows the snapshot does not have"
    assert not [c["id"] for c in changes if not c.get("reason", "").strip()], "every change needs its reason"
    assert not [c["id"] for c in changes if _gated(c["after"]) == _gated(rows[c["id"]]["baseline"])], \
        "a listed change that changes nothing"


@pytest.mark.timeout(3600)
def test_every_verdict_is_the_snapshots_or_a_reviewed_change(tmp_path):
    """Graded in a pool of processes (scripts/grading_diff.py --grade), each distinct set of
    grader inputs once; a changed verdict fails unless changes.jsonl lists it."""
    out = tmp_path / "verdicts.jsonl"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    subprocess.run([sys.executable, str(REPO / "scripts" / "grading_diff.py"), "--grade", str(ROWS), str(out)],
                   cwd=REPO, env=env, check=True, timeout=3600)
    graded = {v["id"]: v for v in map(json.loads, out.read_text(encoding="utf-8").splitlines())}
    changes = {c["id"]: c for c in _changes()}
    unlisted, unlike = [], []
    for row in _rows():
        now = graded[row["id"]]
        if row["id"] in changes:
            if _gated(now) != _gated(changes[row["id"]]["after"]):
                unlike.append((row["id"], changes[row["id"]]["after"], now))
        elif _gated(now) != _gated(row["baseline"]):
            unlisted.append((row["id"], row["env"], row["expected"], row["baseline"], now))
    hint = ("verdicts changed: read each row (python scripts/grading_diff.py main), then list it with its "
            "reason in tests/scorers/grading_snapshot/changes.jsonl")
    assert not unlisted, f"{len(unlisted)} {hint}: {unlisted[:10]}"
    assert not unlike, f"{len(unlike)} rows of changes.jsonl now have another verdict than the one listed: {unlike[:10]}"
