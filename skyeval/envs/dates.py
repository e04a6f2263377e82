"""Problem dates and date windows (`env.start_date` / `env.end_date`) of dated benchmarks.

A date is ISO text, `YYYY-MM` or `YYYY-MM-DD` (a longer timestamp is cut to its day). A
window is inclusive at both ends, and a date is compared at the coarser precision of the
two: `end_date=2024-09` keeps every day of September, and a problem dated only to its
month (LiveAoPS) is in `start_date=2024-07-15 ..` when its month is July or later."""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from typing import Any

from skyeval.errors import ConfigError

_DATE = re.compile(r"(\d{4})-(\d{2})(?:-(\d{2}))?")


def parse_date(value: Any, what: str = "date") -> tuple[int, ...]:
    """`"2024-07"` -> (2024, 7), `"2024-07-15"` -> (2024, 7, 15); else a one-line ConfigError."""
    text = value.isoformat() if isinstance(value, (datetime.date, datetime.datetime)) else str(value).strip()
    match = _DATE.fullmatch(text)
    if match is None:
        raise ConfigError(f"{what} must be YYYY-MM or YYYY-MM-DD, got {value!r}")
    year, month, day = int(match[1]), int(match[2]), match[3]
    if not 1 <= month <= 12:
        raise ConfigError(f"{what} must be YYYY-MM or YYYY-MM-DD, got {value!r}: there is no month {month}")
    if day is not None:
        try:
            datetime.date(year, month, int(day))
        except ValueError:
            raise ConfigError(f"{what} must be YYYY-MM or YYYY-MM-DD, got {value!r}: "
                              f"{year}-{month:02d} has no day {int(day)}") from None
        return year, month, int(day)
    return year, month


def problem_date(value: Any) -> str | None:
    """A date as the data holds it -> `YYYY-MM` or `YYYY-MM-DD` (None when it has none):
    ISO text or a timestamp (`2024-08-03T00:00:00` -> `2024-08-03`), a date, or a
    `{"year", "month"[, "day"]}` mapping (LiveAoPS's `post_time`)."""
    if value is None or value == "":
        return None
    if isinstance(value, dict):
        parts = [int(value["year"]), int(value["month"])] + ([int(value["day"])] if value.get("day") else [])
        return shown(tuple(parts))
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()[:10]
    match = _DATE.match(str(value).strip())
    if match is None:
        raise ValueError(f"not a date: {value!r}")
    return match[0]


def shown(parts: tuple[int, ...]) -> str:
    """(2024, 7) -> `2024-07`."""
    return "-".join(f"{p:02d}" if i else str(p) for i, p in enumerate(parts))


@dataclass(frozen=True)
class DateWindow:
    """An inclusive window of dates; either end may be open (None)."""

    start: tuple[int, ...] | None = None
    end: tuple[int, ...] | None = None

    @classmethod
    def of(cls, start: Any = None, end: Any = None) -> "DateWindow":
        """From the knobs (`YYYY-MM` or `YYYY-MM-DD` text, or None); a bad date or a start
        after the end is a one-line ConfigError."""
        window = cls(None if start is None else parse_date(start, "env.start_date"),
                     None if end is None else parse_date(end, "env.end_date"))
        if window.start and window.end and not _at_most(window.start, window.end):
            raise ConfigError(f"env.start_date {shown(window.start)} is after env.end_date {shown(window.end)}")
        return window

    @property
    def active(self) -> bool:
        return self.start is not None or self.end is not None

    def holds(self, date: str | None) -> bool:
        """Whether a problem's date is in the window (a problem without a date is not, when
        the window is set)."""
        if not self.active:
            return True
        if date is None:
            return False
        parts = parse_date(date, "a problem's date")
        return (self.start is None or _at_most(self.start, parts)) and (self.end is None or _at_most(parts, self.end))

    def describe(self) -> str:
        """`2024-07 .. 2024-09`, `2024-07 ..`, `.. 2024-09`."""
        return f"{shown(self.start) if self.start else ''} .. {shown(self.end) if self.end else ''}".strip()


def _at_most(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """a <= b, compared at the coarser precision of the two."""
    k = min(len(a), len(b))
    return a[:k] <= b[:k]
