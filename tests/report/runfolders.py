"""Write small run folders with chosen outcomes (the layout `evaluate` writes: summary.json,
scores/, generations/, failures/ as part files)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FAILED = "failed"


def write_run(path: Path, outcomes: dict[tuple[str, int], Any], *, env: str = "gsm8k", model: str = "model-a",
              temperature: float = 0.0, max_tokens: int = 1024, n: int = 1, truncated: set = frozenset(),
              parse_failed: set = frozenset(), metrics: dict | None = None, part_size: int = 0,
              selected: set[str] | None = None, status: str = "complete", config: dict | None = None) -> Path:
    """`outcomes` maps (problem id, sample index) to a score (0..1) or FAILED.

    The summary (and its per-problem rows) describe the problems in `selected` (default:
    all) and sample indices below `n`, as after a smaller re-run; the folder keeps every
    outcome. Generation texts name the problem, the sample and the outcome so tests can find them."""
    path.mkdir(parents=True, exist_ok=True)
    for sub in ("generations", "scores", "failures"):
        (path / sub).mkdir(exist_ok=True)
    gens, scores, failures = [], [], []
    for (pid, idx), outcome in sorted(outcomes.items()):
        prompt = f"Problem {pid}: what is {pid} plus {pid}?"
        if outcome == FAILED:
            failures.append({"id": pid, "sample_idx": idx, "stage": "generate", "error_type": "EndpointError",
                             "message": f"server closed the connection on {pid}/{idx}"})
            continue
        finish = "length" if (pid, idx) in truncated else "stop"
        gold = 2 * int(pid.rsplit("/", 1)[-1])
        answer = str(gold) if outcome >= 1 else str(gold + 1)
        usage = {"prompt_tokens": 12, "completion_tokens": 40 + idx, "reasoning_tokens": 30}
        gen = {"id": pid, "sample_idx": idx, "prompt": prompt, "reasoning": f"thinking about {pid} sample {idx}",
               "generation": f"{model} answer to {pid} sample {idx}: \\boxed{{{answer}}}",
               "finish_reason": finish, "usage": usage, "seed": 1000 + idx}
        gens.append(gen)
        pf = (pid, idx) in parse_failed
        scores.append({"id": pid, "sample_idx": idx, "score": float(outcome), "extracted": None if pf else answer,
                       "parse_failed": pf, "expected": str(gold), "finish_reason": finish, "usage": usage,
                       "generation": gen["generation"]})
    for kind, records in (("generations", gens), ("scores", scores), ("failures", failures)):
        size = part_size or max(len(records), 1)
        for part, start in enumerate(range(0, max(len(records), 1), size)):
            with (path / kind / f"part-{part:05d}.jsonl").open("w", encoding="utf-8") as fh:
                for record in records[start:start + size]:
                    fh.write(json.dumps(record) + "\n")
    counted = {k: o for k, o in outcomes.items() if k[1] < n and (selected is None or k[0] in selected)}
    problems = {pid for pid, _ in counted}
    per_problem = {}
    for (pid, idx), outcome in counted.items():
        row = per_problem.setdefault(pid, {"id": pid, "samples": 0, "correct": 0, "mean_score": 0.0})
        row["samples"] += 1
        row["correct"] += int(outcome != FAILED and outcome >= 1)
        row["mean_score"] += 0.0 if outcome == FAILED else float(outcome)
    with (path / "scores" / "per_problem.jsonl").open("w") as fh:
        for row in per_problem.values():
            row["mean_score"] /= row["samples"]
            fh.write(json.dumps(row) + "\n")
    total = sum(0.0 if o == FAILED else float(o) for o in counted.values())
    failed = sum(o == FAILED for o in counted.values())
    summary = {
        "env": env, "model": model, "status": status, "stage": "evaluate",
        "counts": {"problems": len(problems), "samples": len(counted), "scored": len(counted) - failed,
                   "failed": failed},
        "metrics": metrics if metrics is not None else {
            "accuracy": total / len(counted), "pass@k": {"1": total / len(counted)},
            "truncated_rate": len(truncated & set(counted)) / len(counted)},
        "config": {"sampling_params": {"temperature": temperature, "max_tokens": max_tokens, "n": n},
                   "model_config": {"model_source": model}, **(config or {})},
    }
    (path / "summary.json").write_text(json.dumps(summary, indent=2))
    return path


def describe_problems(run: Path, changed: dict[str, str] | None = None) -> Path:
    """Give the run's score records what their problem was (`gold_hash` and `question`, as
    evaluate writes them); problems in `changed` get another `gold_hash` or `question`
    (the value names which), as another copy of the data would."""
    for part in sorted((run / "scores").glob("part-*.jsonl")):
        rows = [json.loads(line) for line in part.read_text().splitlines() if line.strip()]
        for row in rows:
            row["gold_hash"], row["question"] = f"g{row['id']}", f"What is {row['id']} plus {row['id']}?"
            if row["id"] in (changed or {}):
                row[changed[row["id"]]] += " (another copy)"
        part.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return run
