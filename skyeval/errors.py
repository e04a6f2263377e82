"""The project's own error types. The CLI reports these in one line with exit code 2
(bad input or an environment it cannot run in); any other exception is a bug, reported
with its traceback in logs.txt and exit code 1."""

from __future__ import annotations


class SkyevalError(Exception):
    """Base of every error the user can fix without changing skyeval's code."""


class ConfigError(SkyevalError, ValueError):
    """A config value is missing, malformed or out of range."""


class MissingDependencyError(SkyevalError, ImportError):
    """An optional package a chosen feature needs is not installed (the message says what to install)."""


class DataNotFoundError(SkyevalError, FileNotFoundError):
    """Benchmark data, a run folder or a user file is not where the config says."""


class EndpointError(SkyevalError, ConnectionError):
    """A model endpoint cannot be reached or refuses the credentials."""


class RunFolderError(SkyevalError):
    """A run folder belongs to another config, or another process is writing it."""


class ClusterError(SkyevalError):
    """A node or worker of the cluster was lost mid-run: what finished is saved, and
    re-running the same command resumes the rest."""
