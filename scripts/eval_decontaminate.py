"""Precision and recall of `curate.py decontaminate --against gsm8k` on the development set
of tests/curation/data (PROVENANCE.md there), per kind of row and paraphrase threshold.

Kinds: `reworded` (the 1,315 non-empty of the 1,319 GSM8K test problems rewritten by GPT-4, published with
lm-sys/llm-decontaminator), `distractor` (GSM8K test problems with an irrelevant sentence
inserted before the question, built from the mirror's test.jsonl), `clean_math` (1,000
SVAMP word problems, then 1,200 math questions of MMLU's elementary, high-school and
college mathematics and statistics subjects and MMLU-Pro's non-MMLU math questions, from
the mirror), `clean_gsm8k_train` (1,000 GSM8K *train* problems: same authors and style,
the hardest negatives) and `clean_science` (800 ARC-Challenge test questions of the
mirror). A dirty row is found when any check flags it; `right` counts those whose match
names its own GSM8K problem; `paraphrase_only` those found by the meaning-level check
alone. `--folds` also prints the reworded rows' two folds (even and odd GSM8K lines).

    SKYEVAL_DATA_DIR=../shared/data python scripts/eval_decontaminate.py [--thresholds 0.5,0.6,0.7]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import tempfile
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "tests" / "curation" / "data"
THRESHOLDS = "0.12,0.15,0.18,0.2,0.25"


def insert_before_question(problem: str, sentence: str) -> str:
    """`sentence` put before the problem's last sentence (its question), as GSM-IC does."""
    parts = re.split(r"(?<=[.!?])\s+", problem.strip())
    return " ".join([*parts[:-1], sentence, parts[-1]]) if len(parts) > 1 else f"{sentence} {problem}"


def _read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.open(encoding="utf-8") if line.strip()]


MMLU_MATH = ("elementary_mathematics", "high_school_mathematics", "high_school_statistics", "college_mathematics")


def clean_math(data_dir: Path, count: int = 1200) -> list[dict]:
    """Math questions of other benchmarks than GSM8K: MMLU's math subjects, then MMLU-Pro's
    math questions that do not come from MMLU."""
    import csv
    import zipfile

    rows = []
    for subject in MMLU_MATH:
        with (data_dir / "mmlu" / "data" / "test" / f"{subject}_test.csv").open(encoding="utf-8") as fh:
            rows += [{"problem": r["question"], "source": f"mmlu/{subject}"} for r in csv.DictReader(fh)]
    with zipfile.ZipFile(data_dir / "mmlu_pro" / "model_outputs_Meta-Llama-3_1-8B-Instruct_5shots.zip") as z:
        pro = json.loads(z.read(z.namelist()[0]))
    rows += [{"problem": r["question"], "source": f"mmlu_pro/{r['src']}"} for r in pro
             if r["category"] == "math" and not r["src"].startswith("ori_mmlu")]
    return rows[:count]


def dev_rows(data_dir: Path, science: int = 800, folds: bool = False) -> dict[str, list[dict]]:
    """{kind: rows}; dirty rows carry `gsm8k_idx`, the line of the test problem they restate.
    With `folds`, the reworded rows are two kinds: `reworded_fold0` and `reworded_fold1`."""
    test = [row["question"] for row in _read(data_dir / "gsm8k" / "test.jsonl")]
    arc = _read(data_dir / "arc_challenge" / "ARC-Challenge-Test.jsonl")
    # 4 of the 1,319 published rewrites are empty (lines 309, 669, 727, 948): nothing to find,
    # and decontaminate refuses a row without text
    reworded = [r for r in _read(DATA / "reworded_gsm8k.jsonl") if r["problem"].strip()]
    by_fold = {f"reworded_fold{k}": [r for r in reworded if r["fold"] == k] for k in (0, 1)}
    return {
        **(by_fold if folds else {"reworded": reworded}),
        "distractor": [{"problem": insert_before_question(test[d["gsm8k_idx"]], d["sentence"]),
                        "gsm8k_idx": d["gsm8k_idx"]} for d in _read(DATA / "distractors_gsm8k.jsonl")],
        "clean_math": _read(DATA / "clean_svamp.jsonl") + clean_math(data_dir),
        "clean_gsm8k_train": _read(DATA / "clean_gsm8k_train.jsonl"),
        "clean_science": [{"problem": a["question"]["stem"], "source": "arc-challenge"} for a in arc[:science]],
    }


def evaluate(data_dir: Path, thresholds: list[float], workers: int = 1, folds: bool = False) -> dict[str, dict]:
    """{kind: {"rows", "by_threshold": {t: {"found", "right", "paraphrase_only"}}}} through
    `decontaminate` (an index of gsm8k with the defaults, but the lowest threshold)."""
    from skyeval.curation.decontaminate import BenchmarkIndex, decontaminate

    index = BenchmarkIndex.from_envs(["gsm8k"], data_dir=str(data_dir), paraphrase=min(thresholds))
    position = {pid: i for i, pid in enumerate(index.problem_ids)}
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for kind, rows in dev_rows(data_dir, folds=folds).items():
            source = Path(tmp) / f"{kind}.jsonl"
            source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
            decontaminate(source, Path(tmp) / kind, index, workers=workers)
            removed = _read(Path(tmp) / kind / "removed.jsonl")
            table = {}
            for t in thresholds:
                found = right = paraphrase_only = 0
                for row in removed:
                    matches = [m for m in row["contamination"] if m["match"] != "paraphrase" or m["score"] >= t]
                    if matches:
                        found += 1
                        paraphrase_only += all(m["match"] == "paraphrase" for m in matches)
                        right += any(position.get(m["problem_id"]) == row.get("gsm8k_idx") for m in matches)
                table[t] = {"found": found, "right": right, "paraphrase_only": paraphrase_only}
            results[kind] = {"rows": len(rows), "by_threshold": table}
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--thresholds", default=THRESHOLDS)
    parser.add_argument("--data-dir", default=os.environ.get("SKYEVAL_DATA_DIR"))
    parser.add_argument("--folds", action="store_true", help="the reworded rows' two folds apart")
    args = parser.parse_args()
    thresholds = [float(t) for t in args.thresholds.split(",")]
    results = evaluate(Path(args.data_dir), thresholds, folds=args.folds)
    print(f"{'threshold':>9} " + " ".join(f"{k:>20}" for k in results))
    for t in thresholds:
        cells = [f"{r['by_threshold'][t]['found']:>4}/{r['rows']:<4} {r['by_threshold'][t]['found'] / r['rows']:>7.2%}"
                 for r in results.values()]
        print(f"{t:>9} " + " ".join(f"{c:>20}" for c in cells))
    print("reworded/distractor: found by any check; clean_*: flagged")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
