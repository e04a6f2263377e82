"""Counts of samples that went through a turn loop (tools, budget forcing): what
summary.json `tools` reports, summed from the records' own fields (`tool_calls`,
`tool_errors`, `tool_timeouts`, `waits`, `turn_tokens`, `stopped_by`)."""

from __future__ import annotations

from collections import Counter
from typing import Any

KEYS = ("samples", "samples_with_calls", "tool_calls", "tool_errors", "tool_timeouts", "waits", "model_turns")


def counts(record: dict[str, Any]) -> Counter:
    """One sample's counts (empty for a sample that did not go through a loop)."""
    if record.get("stopped_by") is None:
        return Counter()
    calls = int(record.get("tool_calls") or 0)
    return Counter({"samples": 1, "samples_with_calls": int(calls > 0), "tool_calls": calls,
                    "tool_errors": int(record.get("tool_errors") or 0),
                    "tool_timeouts": int(record.get("tool_timeouts") or 0), "waits": int(record.get("waits") or 0),
                    "model_turns": len(record.get("turn_tokens") or ()),
                    f"stopped_by.{record['stopped_by']}": 1})


def summary(total: Counter) -> dict[str, Any]:
    """The counts as summary.json shows them; `stopped_by`: samples by why their loop ended."""
    stopped = {key.split(".", 1)[1]: value for key, value in sorted(total.items()) if key.startswith("stopped_by.")}
    return {**{key: total.get(key, 0) for key in KEYS}, "stopped_by": stopped}


def added(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """Summaries of disjoint sets of samples (shards) as one."""
    total: Counter = Counter()
    for one in summaries:
        total.update({key: one.get(key, 0) for key in KEYS})
        total.update({f"stopped_by.{why}": count for why, count in (one.get("stopped_by") or {}).items()})
    return summary(total)
