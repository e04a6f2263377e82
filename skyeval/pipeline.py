"""read -> template -> generate -> score -> metrics -> run folder, resumable at any point.

Every sample (problem id x sample index) ends in exactly one of scores/ or failures/.
Generations are appended to disk as each completes, so a crash, `kill -9` or Ctrl-C loses
nothing finished; re-running the same command generates only what is missing.
"""

from __future__ import annotations

import logging
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

from skyeval.backends.base import GenerationRequest, GenerationResult
from skyeval.envs.base import Env
from skyeval.metrics import per_problem, summarize
from skyeval.results import Key, RunFolder, append_jsonl, key_of, read_jsonl, replace_jsonl

log = logging.getLogger("skyeval")

STAGES = ("evaluate", "generate", "score")
_SCORE_DROP = ("prompt", "solution", "score_error", "tests_json")  # not repeated in score records


@dataclass
class Outcome:
    """What a run produced, for summary.json."""

    problems: int
    samples: int
    generated: int
    scored: list[dict[str, Any]] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)
    resumed_samples: int = 0
    interrupted: bool = False


def failure(problem_id: str, sample_idx: int, stage: str, error_type: str, message: str, **retry: Any) -> dict[str, Any]:
    """A failure record: where it failed, why, and the input needed to retry it."""
    return {"id": problem_id, "sample_idx": sample_idx, "stage": stage, "error_type": error_type,
            "message": message[:2000], **retry}


def run(env: Env, folder: RunFolder, stage: str, *, retry_failures: bool = False) -> Outcome:
    """Run `evaluate` or `generate` (or `score`: re-score saved generations) into `folder`."""
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}: one of {', '.join(STAGES)}")
    n = env.sampling.n
    bad_rows: dict[Key, dict[str, Any]] = {}

    def bad_row(index: int, err: Exception) -> None:
        log.warning("row %d of %s is malformed: %s: %s", index, env.name, type(err).__name__, err)
        for i in range(n):
            bad_rows[(f"row-{index}", i)] = failure(f"row-{index}", i, "load", type(err).__name__, str(err), row_index=index)

    problems = env.load_problems(on_error=bad_row)
    generations = _current({key_of(r): r for r in read_jsonl(folder.generations)}, problems, n)
    earlier = {key_of(r): r for r in read_jsonl(folder.failures) if r.get("stage") not in ("load", "score")}
    if retry_failures and earlier:
        log.info("retrying %d failed samples", len(earlier))
        earlier = {}
    resumed = len(generations)
    if resumed:
        log.info("resuming: %d of %d samples already generated", resumed, len(problems) * n)

    total = len(problems) + len(bad_rows) // max(n, 1)
    outcome = Outcome(problems=total, samples=total * n, generated=0, resumed_samples=resumed)
    new_failures: dict[Key, dict[str, Any]] = dict(bad_rows)
    if stage != "score":
        requests, template_failures = _plan(env, problems, n, set(generations) | set(earlier))
        new_failures.update(template_failures)
        append_jsonl(folder.failures, template_failures.values())
        prompts = {r.id: r.prompt for r in requests}
        try:
            for result in _progress(env.backend.generate(requests, env.sampling), sum(len(r.sample_indices) for r in requests)):
                _record(result, prompts[result.id], folder, generations, new_failures)
        except KeyboardInterrupt:
            outcome.interrupted = True
            log.warning("interrupted: finished samples are saved; re-run the same command to resume")
        finally:
            env.backend.close()
    outcome.generated = len(generations)

    failed = {k: v for k, v in {**earlier, **new_failures}.items() if k not in generations}
    if stage in ("evaluate", "score") and not outcome.interrupted:
        outcome.scored, score_failures = score_generations(env, problems, generations.values())
        failed.update(score_failures)
        replace_jsonl(folder.scores, outcome.scored)
        replace_jsonl(folder.per_problem, per_problem(outcome.scored))
    outcome.failures = sorted(failed.values(), key=lambda r: (r["id"], r["sample_idx"]))
    if not outcome.interrupted:
        replace_jsonl(folder.failures, outcome.failures)
    return outcome


def _current(records: dict[Key, dict], problems: list[dict], n: int) -> dict[Key, dict]:
    """Saved generations of this run's problems and sample indices (limit/n may have changed)."""
    ids = {p["id"] for p in problems}
    return {k: r for k, r in records.items() if k[0] in ids and k[1] < n}


def _plan(env: Env, problems: list[dict], n: int, done: set[Key]) -> tuple[list[GenerationRequest], dict[Key, dict]]:
    """Requests for the samples not yet done; template errors become failures."""
    requests, failures = [], {}
    for problem in problems:
        wanted = [i for i in range(n) if (problem["id"], i) not in done]
        if not wanted:
            continue
        try:
            requests.append(env.request_for(env.apply_prompt_template_on_item(problem), wanted))
        except Exception as err:  # noqa: BLE001 - one bad record never aborts the run
            for i in wanted:
                failures[(problem["id"], i)] = failure(problem["id"], i, "template", type(err).__name__, str(err))
    return requests, failures


def _record(result: GenerationResult, prompt: Any, folder: RunFolder,
            generations: dict[Key, dict], failures: dict[Key, dict]) -> None:
    key = (result.id, result.sample_idx)
    if result.ok:
        record = {**result.to_dict(), "prompt": prompt}
        del record["error"], record["error_type"]
        generations[key] = record
        append_jsonl(folder.generations, [record])
        failures.pop(key, None)
    else:
        record = failure(result.id, result.sample_idx, "generate", result.error_type or "Error", result.error or "",
                         prompt=prompt)
        failures[key] = record
        append_jsonl(folder.failures, [record])
        log.warning("sample %s#%d failed: %s: %s", result.id, result.sample_idx, result.error_type, result.error)


def _progress(results: Iterator[GenerationResult], total: int) -> Iterable[GenerationResult]:
    """Log progress every ~10% (and show a bar on interactive terminals)."""
    if total == 0:
        return
    log.info("generating %d samples", total)
    bar = None
    if sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(total=total, desc="generate", unit="sample")
    step, done, failed, start = max(1, total // 10), 0, 0, time.monotonic()
    try:
        for result in results:
            done += 1
            failed += not result.ok
            if bar is not None:
                bar.update(1)
            if done % step == 0 or done == total:
                log.info("generated %d/%d (%d failed) in %.1fs", done, total, failed, time.monotonic() - start)
            yield result
    finally:
        if bar is not None:
            bar.close()


def score_generations(env: Env, problems: list[dict], generations: Iterable[dict]) -> tuple[list[dict], dict[Key, dict]]:
    """Score every generation in parallel (a Ray Data stage); scorer errors become failures."""
    by_id = {p["id"]: p for p in problems}
    rows = [{**by_id[g["id"]], **g} for g in generations]
    if not rows:
        return [], {}
    from skyeval.ray_session import dataset_of

    log.info("scoring %d samples", len(rows))
    start = time.monotonic()
    scored_rows = env.score(dataset_of(rows)).take_all()
    scored, failures = [], {}
    for row in scored_rows:
        if row.get("score_error"):
            failures[key_of(row)] = failure(row["id"], row["sample_idx"], "score", "ScorerError", row["score_error"])
        else:
            scored.append({k: v for k, v in row.items() if k not in _SCORE_DROP})
    scored.sort(key=lambda r: (r["id"], r["sample_idx"]))
    log.info("scored %d samples in %.1fs (%d scorer errors)", len(scored), time.monotonic() - start, len(failures))
    return scored, failures


def build_summary(outcome: Outcome, stage: str, n: int) -> dict[str, Any]:
    """Counts, status and metrics (accounting: samples == scored + failed for evaluate)."""
    by_stage: dict[str, int] = {}
    for record in outcome.failures:
        by_stage[record["stage"]] = by_stage.get(record["stage"], 0) + 1
    status = "interrupted" if outcome.interrupted else ("complete_with_failures" if outcome.failures else "complete")
    return {
        "status": status,
        "counts": {
            "problems": outcome.problems,
            "samples": outcome.samples,
            "generated": outcome.generated,
            "scored": len(outcome.scored),
            "failed": len(outcome.failures),
            "resumed": outcome.resumed_samples,
        },
        "failures_by_stage": by_stage,
        "metrics": summarize(outcome.scored, n) if stage != "generate" else {},
    }
