"""Write small run folders with chosen outcomes (the layout `evaluate` writes: summary.json,
scores/, generations/, failures/ as part files)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FAILED = "failed"


def write_run(path: Path, outcomes: dict[tuple[str, int], Any], *, env: str = "gsm8k", model: str = "model-a",
              temperature: float = 0.0, max_tokens: int = 1024, n: int = 1, truncated: set = frozenset(),
              parse_failed: set = frozenset(), metrics: dict | None = None, part_size: int = 0) -> Path:
    """`outcomes` maps (problem id, sample index) to a score (0..1) or FAILED.

    Generation texts name the problem, the sample and the outcome so tests can find them."""
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
        answer = str(2 * int(pid)) if outcome >= 1 else str(2 * int(pid) + 1)
        usage = {"prompt_tokens": 12, "completion_tokens": 40 + idx, "reasoning_tokens": 30}
        gen = {"id": pid, "sample_idx": idx, "prompt": prompt, "reasoning": f"thinking about {pid} sample {idx}",
               "generation": f"{model} answer to {pid} sample {idx}: \\boxed{{{answer}}}",
               "finish_reason": finish, "usage": usage, "seed": 1000 + idx}
        gens.append(gen)
        pf = (pid, idx) in parse_failed
        scores.append({"id": pid, "sample_idx": idx, "score": float(outcome), "extracted": None if pf else answer,
                       "parse_failed": pf, "expected": str(2 * int(pid)), "finish_reason": finish, "usage": usage,
                       "generation": gen["generation"]})
    for kind, records in (("generations", gens), ("scores", scores), ("failures", failures)):
        size = part_size or max(len(records), 1)
        for part, start in enumerate(range(0, max(len(records), 1), size)):
            with (path / kind / f"part-{part:05d}.jsonl").open("w", encoding="utf-8") as fh:
                for record in records[start:start + size]:
                    fh.write(json.dumps(record) + "\n")
    problems = {pid for pid, _ in outcomes}
    per_problem = {}
    for (pid, idx), outcome in outcomes.items():
        row = per_problem.setdefault(pid, {"id": pid, "samples": 0, "correct": 0, "mean_score": 0.0})
        row["samples"] += 1
        row["correct"] += int(outcome != FAILED and outcome >= 1)
        row["mean_score"] += 0.0 if outcome == FAILED else float(outcome)
    with (path / "scores" / "per_problem.jsonl").open("w") as fh:
        for row in per_problem.values():
            row["mean_score"] /= row["samples"]
            fh.write(json.dumps(row) + "\n")
    total = sum(0.0 if o == FAILED else float(o) for o in outcomes.values())
    summary = {
        "env": env, "model": model, "status": "complete",
        "counts": {"problems": len(problems), "samples": len(outcomes), "scored": len(scores), "failed": len(failures)},
        "metrics": metrics if metrics is not None else {
            "accuracy": total / len(outcomes), "pass@k": {"1": total / len(outcomes)},
            "truncated_rate": len(truncated) / len(outcomes)},
        "config": {"sampling_params": {"temperature": temperature, "max_tokens": max_tokens, "n": n},
                   "model_config": {"model_source": model}},
    }
    (path / "summary.json").write_text(json.dumps(summary, indent=2))
    return path
