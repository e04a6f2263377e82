"""The math grader's verdicts on the snapshot rows at two commits, and the rows that differ.

    python scripts/grading_diff.py A B             # two commits (or branches, tags)
    python scripts/grading_diff.py main            # main against the working tree
    python scripts/grading_diff.py main --json out.jsonl [--rows FILE] [--workers N]

Each side grades every row of the verdict snapshot (tests/scorers/grading_snapshot/,
PROVENANCE.md there) as a run grades it: `SkyEnvBuilder.build(row["env"], knobs)
.score_item(...)` with the row's question, in a pool of processes, each distinct set of
grader inputs once. A commit is exported with `git archive` into a temporary folder and graded
by this file run with that folder first on PYTHONPATH, so both sides grade the same rows with
their own code. Printed: each changed row (id, env, gold, score, verdict and extracted answer
on both sides, the end of the output), then the counts. `--json` writes the changed rows in
the changes file's shape (`tests/scorers/grading_snapshot/changes.jsonl`), reasons left empty.
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SNAPSHOT = REPO / "tests" / "scorers" / "grading_snapshot"
ROWS = SNAPSHOT / "verdicts.jsonl.xz"
KNOBS = {"timeout_s": 300.0}  # generous: a loaded machine must not turn a verdict into a time-out
GATED = ("score", "verdict")  # what a change is: the score or the rules' three-way verdict


def read_rows(path: Path) -> list[dict]:
    opener = lzma.open if str(path).endswith(".xz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def inputs_key(row: dict) -> str:
    """What the grader reads of a row: rows with the same key get the same verdict."""
    return json.dumps([row["env"], row.get("knobs"), row["generation"], row["expected"], row.get("question"),
                       row.get("reasoning"), row.get("finish_reason")], sort_keys=True)


_ENVS: dict = {}


def grade_one(row: dict) -> dict:
    """The verdict of one row through its env's `score_item` (envs built once per process)."""
    from skyeval import SkyEnvBuilder

    knobs = {**KNOBS, **(row.get("knobs") or {})}
    key = json.dumps([row["env"], knobs], sort_keys=True)
    if key not in _ENVS:
        _ENVS[key] = SkyEnvBuilder.build(row["env"], knobs)
    item = {"generation": row["generation"], "expected": row["expected"], "question": row.get("question") or ""}
    item.update({k: row[k] for k in ("reasoning", "finish_reason") if row.get(k) is not None})
    started = time.process_time()
    try:
        result = _ENVS[key].score_item(item)
    except Exception as err:  # a gold the env refuses: recorded, never a crash of the whole gate
        return {"score": None, "verdict": f"error: {type(err).__name__}", "extracted": None}
    return {"score": result["score"], "verdict": result.get("verdict"), "extracted": result.get("extracted"),
            "timed_out": result.get("timed_out"), "passed_by_tolerance": result.get("passed_by_tolerance"),
            "cpu_s": round(time.process_time() - started, 3)}


def _grade_chunk(rows: list[dict]) -> list[dict]:
    return [grade_one(row) for row in rows]


def grade_rows(rows: list[dict], workers: int | None = None, chunk: int = 24) -> list[dict]:
    """One verdict per row, in order; each distinct set of inputs graded once, in `workers`
    processes (default: every core this process may use)."""
    unique: dict[str, dict] = {}
    for row in rows:
        unique.setdefault(inputs_key(row), row)
    keys = sorted(unique, key=lambda k: -len(unique[k]["generation"]))  # long rows first: no straggler at the end
    chunks = [keys[i : i + chunk] for i in range(0, len(keys), chunk)]
    workers = workers or len(os.sched_getaffinity(0))
    if workers == 1:
        results = [_grade_chunk([unique[k] for k in c]) for c in chunks]
    else:
        import multiprocessing

        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            results = list(pool.map(_grade_chunk, [[unique[k] for k in c] for c in chunks]))
    verdicts = {k: v for c, r in zip(chunks, results) for k, v in zip(c, r)}
    return [{"id": row["id"], **verdicts[inputs_key(row)]} for row in rows]


def grade_at(ref: str | None, rows_path: Path, workers: int | None) -> dict[str, dict]:
    """{row id: verdict} graded by the code of `ref` (None: this working tree)."""
    with tempfile.TemporaryDirectory(prefix="skyeval_grading_") as tmp:
        tree = REPO
        if ref is not None:
            tree = Path(tmp) / "tree"
            tree.mkdir()
            archive = subprocess.run(["git", "archive", ref], cwd=REPO, capture_output=True, check=True).stdout
            subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
        out = Path(tmp) / "verdicts.jsonl"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
        command = [sys.executable, str(Path(__file__).resolve()), "--grade", str(rows_path), str(out)]
        if workers:
            command += ["--workers", str(workers)]
        subprocess.run(command, cwd=tree, env=env, check=True)
        return {v["id"]: v for v in map(json.loads, out.read_text(encoding="utf-8").splitlines())}


def changed(rows: list[dict], a: dict[str, dict], b: dict[str, dict]) -> list[dict]:
    """Rows whose gated fields differ between verdicts `a` and `b`, in the changes file's shape."""
    out = []
    for row in rows:
        before, after = a[row["id"]], b[row["id"]]
        if any(before.get(k) != after.get(k) for k in GATED):
            out.append({"id": row["id"], "env": row["env"], "expected": row["expected"],
                        "before": {k: before.get(k) for k in (*GATED, "extracted")},
                        "after": {k: after.get(k) for k in (*GATED, "extracted")}, "reason": ""})
    return out


def describe(change: dict, row: dict, tail: int) -> str:
    b, a = change["before"], change["after"]
    end = row["generation"][-tail:].replace("\n", " / ")
    return (f"{change['id']}  [{row['env']}]  gold={row['expected']!r}\n"
            f"    before: {b['score']} {b['verdict']}  extracted={b['extracted']!r}\n"
            f"    after:  {a['score']} {a['verdict']}  extracted={a['extracted']!r}\n"
            f"    ...{end}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a", nargs="?", help="the commit graded first (the 'before')")
    parser.add_argument("b", nargs="?", help="the commit graded second (default: the working tree)")
    parser.add_argument("--rows", type=Path, default=ROWS, help="the rows to grade (jsonl or jsonl.xz)")
    parser.add_argument("--workers", type=int, help="grading processes per side (default: every core)")
    parser.add_argument("--json", type=Path, help="write the changed rows here (the changes file's shape)")
    parser.add_argument("--tail", type=int, default=240, help="characters of each changed output to print")
    parser.add_argument("--grade", nargs=2, metavar=("ROWS", "OUT"), help=argparse.SUPPRESS)  # one side
    args = parser.parse_args()
    if args.grade:
        rows = read_rows(Path(args.grade[0]))
        with open(args.grade[1], "w", encoding="utf-8") as f:
            for verdict in grade_rows(rows, args.workers):
                f.write(json.dumps(verdict) + "\n")
        return
    if not args.a:
        parser.error("give the commit to compare (A), and optionally B")
    rows = read_rows(args.rows)
    started = time.monotonic()
    before = grade_at(args.a, args.rows.resolve(), args.workers)
    after = grade_at(args.b, args.rows.resolve(), args.workers)
    changes = changed(rows, before, after)
    by_id = {row["id"]: row for row in rows}
    for change in changes:
        print(describe(change, by_id[change["id"]], args.tail))
    gained = sum(1 for c in changes if (c["after"]["score"] or 0) > (c["before"]["score"] or 0))
    lost = sum(1 for c in changes if (c["after"]["score"] or 0) < (c["before"]["score"] or 0))
    print(f"{len(changes)} of {len(rows)} rows changed between {args.a} and {args.b or 'the working tree'}: "
          f"{gained} now right, {lost} now wrong, {len(changes) - gained - lost} another verdict with the same score "
          f"({time.monotonic() - started:.0f} s)")
    if args.json:
        args.json.write_text("".join(json.dumps(c) + "\n" for c in changes), encoding="utf-8")


if __name__ == "__main__":
    main()
