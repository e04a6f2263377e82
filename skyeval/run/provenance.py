"""What a run needs to describe itself: command, git commit, package versions."""

from __future__ import annotations

import os
import platform
import shlex
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

PACKAGES = ("skyeval", "ray", "hydra-core", "math-verify", "openai", "datasets", "vllm", "torch")


def versions() -> dict[str, str | None]:
    """Installed versions (read from metadata: nothing is imported)."""
    found: dict[str, str | None] = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


COMMAND_ENV = "SKYEVAL_COMMAND"  # set by the CLI: the command as the user typed it (Hydra sees a rewritten argv)


def command_line() -> str:
    """The command that re-runs this run as written: the CLI's own, else this process's."""
    return os.environ.get(COMMAND_ENV) or shlex.join([Path(sys.executable).name, *sys.argv])


def set_command(argv: list[str]) -> None:
    """Record `python -m skyeval.cli ARGV` as this run's command (inherited by sweep jobs)."""
    os.environ[COMMAND_ENV] = shlex.join(["python", "-m", "skyeval.cli", *argv])


def describe_run() -> dict[str, Any]:
    return {"command": command_line(), "git_commit": git_commit(), "versions": versions()}
