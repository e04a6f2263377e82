"""Logging of a run: console plus the run folder's logs.txt, with secrets scrubbed."""

from __future__ import annotations

import logging
from pathlib import Path

from skyeval.config import redact_text, secret_values

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
    """Log `skyeval.*` to stderr and to `log_file` (appended across resumes)."""
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
