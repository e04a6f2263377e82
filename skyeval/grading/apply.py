"""A grading mode applied to rule-scored samples, in batches (runs and rewards alike).

`GradingStep.decide(pairs)` takes (row, result) pairs, a row being the sample (its
`generation`, `reasoning`, `finish_reason`) with its problem (`question`, `expected`),
and returns each result with how it was graded:

- `graded_by`: `rules` or `judge`; `rule_verdict`: the rules' three-way verdict;
- when the judge was asked: `judge_verdict` (`equivalent` | `different` | None),
  `judge_reply`, `judge_saw` (`extracted` or `final_text`), and `judge_error` when the
  reply could not be parsed or the request failed. Then the rules' score stands
  (`graded_by: rules`): a judge that did not answer never decides.
- judged: `score` is the judge's (1.0 equivalent, 0.0 different), the rules' is kept in
  `rule_score`.

`audit` mode changes no result: `offer(row, result)` keeps a deterministic random
sample of `audit_n` rule-decided answers, and `audit()` judges it and tabulates."""

from __future__ import annotations

import hashlib
import heapq
import itertools
import threading
from collections import Counter
from typing import Any

from skyeval.grading.config import GradingConfig
from skyeval.grading.judge import Judge, JudgeItem
from skyeval.grading.prompts import gold_text
from skyeval.grading.verdicts import DIFFERENT, EQUAL, EQUIVALENT, UNDECIDED, judged_text, rule_verdict

DISAGREEMENTS_SHOWN = 200  # disagreements listed in the audit table


class GradingStep:
    """`config.mode` over batches of rule-scored samples, with `judge` (its cache and
    counts). `counts` says how many samples went each way in this process."""

    def __init__(self, config: GradingConfig, judge: Judge, *, grade_truncated: bool = False,
                 question_key: str = "question", gold_key: str = "expected") -> None:
        self.config, self.judge, self.grade_truncated = config, judge, grade_truncated
        self.question_key, self.gold_key = question_key, gold_key
        self.counts: Counter = Counter()  # judged, judge_parse_failed, judge_errors, not_shown
        self._sample: list[tuple[int, int, dict[str, Any]]] = []  # audit: a max-heap of (-rank, tie, candidate)
        self._tie = itertools.count()
        self._lock = threading.Lock()

    def wants(self, result: dict[str, Any]) -> bool:
        """Whether this mode asks the judge about a (successfully) scored sample."""
        if self.config.mode == "always":
            return True
        return self.config.mode == "fallback" and rule_verdict(result) == UNDECIDED

    def decide(self, pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> list[dict[str, Any]]:
        """Each pair's result, graded by this mode (see the module docstring)."""
        out, asked = [], []
        for row, result in pairs:
            verdict = rule_verdict(result)
            graded = {**result, "graded_by": "rules", "rule_verdict": verdict}
            out.append(graded)
            if not self.wants(result):
                continue
            text, source = judged_text(row, result, self.config.final_chars, self.grade_truncated)
            if text is None:
                self.counts["not_shown"] += 1  # no answer to show (unclosed thought, cut-off output)
                continue
            asked.append((graded, source, self._item(row, text)))
        if asked:
            for (graded, source, _), judgement in zip(asked, self.judge.judge([item for _, _, item in asked])):
                graded.update(judge_verdict=judgement.verdict, judge_reply=judgement.reply, judge_saw=source)
                if judgement.verdict is None:
                    graded["judge_error"] = judgement.error
                    self.counts["judge_parse_failed" if judgement.parse_failed else "judge_errors"] += 1
                    continue
                self.counts["judged"] += 1
                graded.update(graded_by="judge", rule_score=graded["score"],
                              score=1.0 if judgement.verdict == EQUIVALENT else 0.0)
        return out

    def _item(self, row: dict[str, Any], answer: str) -> JudgeItem:
        return JudgeItem(str(row.get(self.question_key) or ""), row.get(self.gold_key), answer)

    # ---- audit --------------------------------------------------------------------------------
    def offer(self, row: dict[str, Any], result: dict[str, Any]) -> None:
        """A rule-graded sample the audit may draw: kept when its rank (a hash of the seed
        and its key: the same draw whatever order samples arrive in) is among the
        `audit_n` smallest. Only answers the rules decided (equal or different) count."""
        verdict = rule_verdict(result)
        extracted = result.get("extracted")
        if verdict == UNDECIDED or not isinstance(extracted, str) or not extracted.strip():
            return
        key = f"{self.config.seed}/{row.get('id')}/{row.get('sample_idx')}"
        rank = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big")
        candidate = {"id": row.get("id"), "sample_idx": row.get("sample_idx"), "rule_verdict": verdict,
                     "question": str(row.get(self.question_key) or ""), "gold": row.get(self.gold_key),
                     "extracted": extracted}
        with self._lock:
            self.counts["audit_candidates"] += 1
            entry = (-rank, next(self._tie), candidate)
            if len(self._sample) < self.config.audit_n:
                heapq.heappush(self._sample, entry)
            elif entry[0] > self._sample[0][0]:
                heapq.heapreplace(self._sample, entry)

    def audit(self) -> dict[str, Any]:
        """Judge the drawn sample: the agreement table (rules' verdict x judge's), the
        agreement rate and Cohen's kappa over the samples the judge gave a verdict on,
        and the disagreements."""
        drawn = sorted((c for _, _, c in self._sample), key=lambda c: (str(c["id"]), c["sample_idx"]))
        judgements = self.judge.judge([JudgeItem(c["question"], c["gold"], c["extracted"]) for c in drawn])
        table = {rule: {"equivalent": 0, "different": 0, "no_verdict": 0} for rule in (EQUAL, DIFFERENT)}
        disagreements = []
        for candidate, judgement in zip(drawn, judgements):
            column = judgement.verdict or "no_verdict"
            table[candidate["rule_verdict"]][column] += 1
            if judgement.verdict is not None and (judgement.verdict == EQUIVALENT) != (candidate["rule_verdict"] == EQUAL):
                disagreements.append({"id": candidate["id"], "sample_idx": candidate["sample_idx"],
                                      "extracted": candidate["extracted"], "gold": gold_text(candidate["gold"]),
                                      "rule_verdict": candidate["rule_verdict"], "judge_verdict": judgement.verdict,
                                      "judge_reply": judgement.reply})
        both = {(r, j): table[r][j] for r in (EQUAL, DIFFERENT) for j in ("equivalent", "different")}
        decided = sum(both.values())
        agree = both[(EQUAL, "equivalent")] + both[(DIFFERENT, "different")]
        return {"candidates": self.counts["audit_candidates"], "drawn": len(drawn), "audit_n": self.config.audit_n,
                "seed": self.config.seed, "table": table, "judged": decided,
                "no_verdict": len(drawn) - decided,
                "agreement": agree / decided if decided else None, "kappa": _kappa(both, decided),
                "disagreements": disagreements[:DISAGREEMENTS_SHOWN], "disagreement_count": len(disagreements)}


def _kappa(both: dict[tuple[str, str], int], total: int) -> float | None:
    """Cohen's kappa of the rules and the judge (None when undefined: no samples, or
    both always say the same thing)."""
    if not total:
        return None
    observed = (both[(EQUAL, "equivalent")] + both[(DIFFERENT, "different")]) / total
    rule_equal = (both[(EQUAL, "equivalent")] + both[(EQUAL, "different")]) / total
    judge_equal = (both[(EQUAL, "equivalent")] + both[(DIFFERENT, "equivalent")]) / total
    expected = rule_equal * judge_equal + (1 - rule_equal) * (1 - judge_equal)
    return None if expected == 1 else round((observed - expected) / (1 - expected), 4)
