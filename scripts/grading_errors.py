"""Errors of skyeval's math grader (and of plain math-verify) against a labelled set of real
model outputs: tests/scorers/data/math_dev.jsonl (see PROVENANCE.md beside it).

Prints every false positive and false negative of each grader, then per source file the
true accuracy (the human verdicts) against each grader's, as a difference in samples.

    python scripts/grading_errors.py [--data FILE] [--only skyeval|math_verify] [--tail 300]
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "tests" / "scorers" / "data" / "math_dev.jsonl"


ENVS = {"minervamath": "minervamath", "math500": "math500", "olympiadbench": "olympiadbench_math_en"}


def skyeval_grade(row: dict) -> tuple[int, str | None]:
    from skyeval import SkyEnvBuilder
    from skyeval.scorers.math import score_math

    rule = SkyEnvBuilder.build(ENVS[row["benchmark"]]).numeric_rule  # the benchmark's own numeric rule
    result = score_math(row["generation"], row["gold"], question=row.get("question"), timeout_s=60,  # rules, not speed
                        numeric_rule=rule)
    return int(result["score"] == 1.0), result["extracted"]


def math_verify_grade(row: dict) -> tuple[int, str | None]:
    from math_verify import parse, verify

    try:
        predicted = parse(row["generation"])
        return int(bool(verify(parse(f"\\boxed{{{row['gold']}}}"), predicted))), str(predicted[-1]) if predicted else None
    except Exception:  # math-verify's own failures count as a wrong grade
        return 0, None


GRADERS = {"skyeval": skyeval_grade, "math_verify": math_verify_grade}


def errors(rows: list[dict], grader: str) -> dict:
    """Grades of ``rows`` by ``grader``: false positives, false negatives, and per source file
    (n, true right, graded right)."""
    grade = GRADERS[grader]
    fp, fn, files = [], [], defaultdict(lambda: [0, 0, 0])
    for row in rows:
        score, extracted = grade(row)
        files[row["source"]][0] += 1
        files[row["source"]][1] += row["verdict"]
        files[row["source"]][2] += score
        if score != row["verdict"]:
            (fp if score else fn).append((row, extracted))
    return {"fp": fp, "fn": fn, "files": dict(files)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--only", choices=sorted(GRADERS))
    parser.add_argument("--tail", type=int, default=300, help="characters of each wrong row's generation to show")
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.data.read_text(encoding="utf-8").splitlines() if line.strip()]
    for grader in [args.only] if args.only else list(GRADERS):
        found = errors(rows, grader)
        print(f"=== {grader}: {len(found['fp']) + len(found['fn'])} errors of {len(rows)} "
              f"({len(found['fp'])} false positives, {len(found['fn'])} false negatives)")
        for kind in ("fp", "fn"):
            for row, extracted in found[kind]:
                tail = row["generation"][-args.tail :].replace("\n", " / ")
                print(f"  {kind.upper()} {row['benchmark']} {row['id']} gold={row['gold']!r} extracted={extracted!r}"
                      f"\n      {row['source'].split(':')[-1]}\n      ...{tail}")
        print(f"  per source file (true right vs {grader}-graded right, in samples):")
        for source, (n, right, graded) in sorted(found["files"].items()):
            print(f"    {graded - right:+4d}  {graded:3d} graded vs {right:3d} true of {n:3d}  {source.split(':')[-1]}")


if __name__ == "__main__":
    main()
