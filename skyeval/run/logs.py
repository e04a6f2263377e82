"""A run's log (console and logs.txt, secrets scrubbed) and the line announcing its result."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

from skyeval.backends.ray_logs import send_ray_logs_to
from skyeval.config.secrets import redact_text, secret_values
from skyeval.results import RunFolder

log = logging.getLogger("skyeval")

_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class SecretFilter(logging.Filter):
    """Replaces secret values (API keys from the environment) in every log line."""

    def __init__(self) -> None:
        super().__init__()
        self.secrets = secret_values()

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = redact_text(record.getMessage(), self.secrets)
        record.args = ()
        return True


def setup_logging(log_file: Path, level: str = "INFO") -> None:
    """Log `skyeval.*` to stderr and to `log_file` (appended across resumes); Ray's own
    lines (`skyeval.backends.ray_logs`) to `log_file` only."""
    root = logging.getLogger("skyeval")
    root.setLevel(level)
    for handler in list(root.handlers):
        root.removeHandler(handler)
        handler.close()
    log_file.parent.mkdir(parents=True, exist_ok=True)
    for handler in (logging.StreamHandler(), logging.FileHandler(log_file, encoding="utf-8")):
        handler.setFormatter(logging.Formatter(_FORMAT))
        handler.addFilter(SecretFilter())
        root.addHandler(handler)
    root.propagate = False
    send_ray_logs_to(root.handlers[-1])


def plural(count: int, noun: str) -> str:
    """"1 sample", "2 samples"."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def announce(summary: dict[str, Any], folder: RunFolder) -> None:
    """Print the run's `headline` and its folder (and log them)."""
    line = headline(summary)
    to_files(log.makeRecord(log.name, logging.INFO, __file__, 0, "%s | run folder %s", (line, folder.path), None))
    if summary["counts"]["failed"]:
        log.warning("%s failed: see %s (retry them with retry_failures=true)", plural(summary["counts"]["failed"], "sample"),
                    folder.dir("failures"))
    print(line + f"\nrun folder: {folder.path}", file=sys.stdout, flush=True)


def headline(summary: dict[str, Any]) -> str:
    """One line: counts, then the headline accuracy with its interval, saying when failed
    samples are counted as wrong and naming the truncated rate when there is one."""
    counts, metrics = summary["counts"], summary["metrics"]
    window = summary.get("date_window")
    env = summary["env"] + (f" (dates {window['shown']})" if window else "")
    line = f"{summary['status']}: {env} | {plural(counts['samples'], 'sample')}, {counts['scored']} scored, {counts['failed']} failed"
    if metrics.get("accuracy") is not None:
        line += f" | accuracy {metrics['accuracy']:.4f}"
        interval = (metrics.get("intervals") or {}).get("accuracy")
        if interval and interval.get("ci95") and None not in interval["ci95"]:
            low, high = interval["ci95"]
            line += f" (95% CI {low:.4f}-{high:.4f}, {plural(interval['problems'], 'problem')} x n={interval['n']})"
        if counts["failed"] and metrics.get("accuracy_scored_only") is not None:
            line += f"; failed samples count as wrong (scored only: {metrics['accuracy_scored_only']:.4f})"
    if metrics.get("truncated_rate"):
        line += f" | truncated {metrics['truncated_rate']:.1%}"
    return line


def to_files(record: logging.LogRecord) -> None:
    """`record` into logs.txt only (the console gets its own line)."""
    for handler in log.handlers:
        if isinstance(handler, logging.FileHandler):
            handler.handle(record)
