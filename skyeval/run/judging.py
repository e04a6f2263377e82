"""The judge step of a run: after the rules score a sample, before it is recorded.

`RunJudging.submit(row, result)` sits between the scoring pool and the recorder: a
sample this grading mode does not send to the judge is recorded at once; the others
wait in a batch of `grading.batch_size`, judged together (de-duplicated, through the
judge's backend), then recorded. Judge replies are cached under the run folder's
`judge/` (a resume or a `score` re-grade never asks twice); `audit` mode writes
`judge/audit.json` there. With `grading.mode: off` no `RunJudging` exists: nothing is
added per sample."""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable

from skyeval.grading import GradingConfig, Judge, JudgeCache, rule_verdict
from skyeval.grading.apply import GradingStep
from skyeval.results import RunFolder, write_json
from skyeval.run.logs import plural

log = logging.getLogger("skyeval")

JUDGE_DIR = "judge"  # in the run folder: cache*.jsonl, audit*.json


class RunJudging:
    """`grading`'s mode over a run's scored samples; `record(row, result)` writes one."""

    def __init__(self, grading: GradingConfig, folder: RunFolder, record: Callable[[dict, dict], None], *,
                 grade_truncated: bool = False, prefix: str = "") -> None:
        self.grading, self.folder, self.record, self.prefix = grading, folder, record, prefix
        self.judge = Judge(grading, JudgeCache(folder.path / JUDGE_DIR, f"cache-{prefix}part.jsonl"))
        self.judge.backend()  # an unreachable judge endpoint fails here, before any sample is scored
        self.step = GradingStep(grading, self.judge, grade_truncated=grade_truncated)
        self.audit: dict[str, Any] | None = None
        self._batch: list[tuple[dict, dict]] = []
        self._lock, self._flushing = threading.Lock(), threading.Lock()

    def submit(self, row: dict[str, Any], result: dict[str, Any]) -> None:
        if result.get("score_error"):  # not scored: a failure record, nothing to grade
            self.record(row, result)
            return
        if self.grading.mode == "audit":
            self.step.offer(row, result)
        if not self.step.wants(result):
            self.record(row, {**result, "graded_by": "rules", "rule_verdict": rule_verdict(result)})
            return
        with self._lock:
            self._batch.append((row, result))
            full = len(self._batch) >= self.grading.batch_size
        if full:
            self.flush()

    def flush(self) -> None:
        """Judge the waiting samples and record them."""
        with self._flushing:
            with self._lock:
                batch, self._batch = self._batch, []
            if not batch:
                return
            try:
                decided = self.step.decide(batch)
            except Exception as err:  # noqa: BLE001 - the judge broke: these samples keep the rules' grade
                log.error("judge step failed on %s (the rules' scores stand): %s: %s", plural(len(batch), "sample"),
                          type(err).__name__, err)
                self.step.counts["judge_errors"] += len(batch)
                decided = [{**result, "graded_by": "rules", "rule_verdict": rule_verdict(result),
                            "judge_error": f"{type(err).__name__}: {err}"[:1000]} for _, result in batch]
            for (row, _), graded in zip(batch, decided):
                self.record(row, graded)

    def close(self, cancel: bool = False) -> None:
        """Judge what waits (unless cancelled: those samples stay unscored, and a resume
        scores them) and, in `audit` mode, the drawn sample; release the judge."""
        try:
            if not cancel:
                self.flush()
                if self.grading.mode == "audit":
                    self.audit = self.step.audit()
                    path = self.folder.path / JUDGE_DIR / f"audit{'-' + self.prefix.rstrip('-') if self.prefix else ''}.json"
                    path.parent.mkdir(parents=True, exist_ok=True)
                    write_json(path, self.audit)
                    self.audit["path"] = str(path.relative_to(self.folder.path))
                    log.info("judge audit: %d rule-graded answers judged, agreement %s, table in %s",
                             self.audit["judged"], _percent(self.audit["agreement"]), path)
        finally:
            self.judge.close()

    def summary(self, graded_by: dict[str, int]) -> dict[str, Any]:
        """summary.json `grading`: the mode, samples each way (all the run's scores,
        earlier runs' included), and the judge: model, prompt, requests, tokens, cost."""
        out = {"mode": self.grading.mode, "graded_by": dict(graded_by), "judge": self.judge.summary(),
               "judged": self.step.counts["judged"], "judge_parse_failed": self.step.counts["judge_parse_failed"],
               "judge_errors": self.step.counts["judge_errors"], "no_answer_to_show": self.step.counts["not_shown"]}
        if self.audit is not None:
            out["audit"] = {k: v for k, v in self.audit.items() if k != "disagreements"}
        return out


def merged_grading(parts: list[dict[str, Any]], graded_by: dict[str, int]) -> dict[str, Any]:
    """One summary `grading` from the shards' own (`parts`): counts and the judge's
    requests, tokens and cost added up; `graded_by` from the merged metrics; each shard's
    audit (of its own samples) kept under `audits`."""
    merged = {**parts[0], "graded_by": dict(graded_by)}
    for key in ("judged", "judge_parse_failed", "judge_errors", "no_answer_to_show"):
        merged[key] = sum(p.get(key) or 0 for p in parts)
    judge = dict(parts[0].get("judge") or {})
    for key in ("items", "cached", "deduplicated", "requests", "parse_failed", "errors"):
        judge[key] = sum((p.get("judge") or {}).get(key) or 0 for p in parts)
    judge["tokens"] = {kind: sum(((p.get("judge") or {}).get("tokens") or {}).get(kind) or 0 for p in parts)
                       for kind in ("prompt", "completion")}
    costs = [(p.get("judge") or {}).get("cost") for p in parts]
    judge["cost"] = None if any(c is None for c in costs) else round(sum(costs), 6)
    merged["judge"] = judge
    audits = [p["audit"] for p in parts if p.get("audit")]
    merged.pop("audit", None)
    if audits:
        merged["audits"] = audits
    return merged


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"
