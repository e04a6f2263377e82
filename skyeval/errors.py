"""The project's own error types: one line and exit code 2 at the CLI.

They mean bad input or an environment skyeval cannot run in; any other exception is a
bug, reported with its traceback in logs.txt and exit code 1."""

from __future__ import annotations


class SkyevalError(Exception):
    """Base of every error the user can fix without changing skyeval's code."""


class ConfigError(SkyevalError, ValueError):
    """A config value is missing, malformed or out of range."""


class MissingDependencyError(SkyevalError, ImportError):
    """An optional package a chosen feature needs is not installed (the message says what to install)."""


class DataNotFoundError(SkyevalError, FileNotFoundError):
    """Benchmark data, a run folder or a user file is not where the config says."""


class GoldError(SkyevalError, ValueError):
    """A gold (the expected answer, a code problem's tests) is malformed: it is refused,
    never scored as a silent 0. The message names the env, the field and what it must be."""

    def __init__(self, env: str, field: str, expected: str, value: object, where: str = "") -> None:
        shown = repr(value)
        super().__init__(f"env {env!r}: gold {field!r}{where} must be {expected}, got "
                         f"{shown if len(shown) <= 80 else shown[:77] + '...'}")


class DataFileError(SkyevalError, ValueError):
    """A dataset file cannot be read: a line that is not JSON (the message names it), a
    broken file."""


class EndpointError(SkyevalError, ConnectionError):
    """A model endpoint cannot be reached or refuses the credentials."""


class RunFolderError(SkyevalError):
    """A run folder belongs to another config, or another process is writing it."""


class ClusterError(SkyevalError):
    """A cluster (Ray, SLURM) cannot be reached or refuses us, or it lost a node or worker
    mid-run: what finished is saved, and re-running the same command resumes the rest."""


class InfrastructureError(SkyevalError, RuntimeError):
    """Scoring could not run: worker processes could not start, or the pool broke. Never a
    score: the caller gets this error, a run records the samples as failures with
    `error_type: infrastructure` and the next run of the same command re-scores them."""


def require(module: str, install: str, needed_by: str = "this backend") -> None:
    """Fail early, naming what to install, when an optional dependency is missing (the
    module is looked up, not imported)."""
    import importlib.util

    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing, or a module stubbed out
        found = False
    if not found:
        raise MissingDependencyError(f"{needed_by} needs the `{module}` package: {install}")
