"""What SLURM says about jobs and partitions, asked with its own commands (`squeue`,
`sinfo`, `scancel`): no accounting (`sacct`) needed.

- `job_states(ids)`: each job's state (`squeue -t all` lists a job for `MinJobAge` seconds
  after it ended, with how it ended); a job it no longer lists has ended.
- `partition_offer(partition)` and `check_resources(...)`: what a partition's nodes have,
  and a job it could never run refused before it is submitted.
- `cancel(ids)`.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass

from skyeval.errors import ClusterError, ConfigError

QUEUED = ("PENDING", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD", "RESV_DEL_HOLD", "SUSPENDED", "STOPPED")
RUNNING = ("CONFIGURING", "RUNNING", "COMPLETING", "RESIZING", "SIGNALING", "STAGE_OUT")
DONE = ("COMPLETED",)
CANCELLED = ("CANCELLED", "PREEMPTED")
# anything else a job ends in (FAILED, TIMEOUT, OUT_OF_MEMORY, NODE_FAIL, BOOT_FAIL, DEADLINE) is a failure
TIMEOUT_S = 60  # a SLURM command that does not answer within this is an error, not a hang


@dataclass(frozen=True)
class JobState:
    """One job as `squeue` lists it: `state` (PENDING, RUNNING, COMPLETED, ...), `reason`
    (why it waits, or how it ended) and the node it runs on."""

    job: str
    state: str
    reason: str = ""
    node: str = ""

    @property
    def kind(self) -> str:
        """queued | running | done | cancelled | failed"""
        if self.state in QUEUED:
            return "queued"
        if self.state in RUNNING:
            return "running"
        if self.state in DONE:
            return "done"
        return "cancelled" if self.state in CANCELLED else "failed"

    @property
    def live(self) -> bool:
        return self.kind in ("queued", "running")

    @property
    def shown(self) -> str:
        """`STATE` or `STATE, reason`, as a person reads it."""
        return f"{self.state}, {self.reason}" if self.reason else self.state


def _run(command: list[str]) -> str:
    if shutil.which(command[0]) is None:
        raise ClusterError(f"`{command[0]}` is not on PATH: SLURM's commands are needed here (is this a SLURM login node?)")
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise ClusterError(f"`{' '.join(command)}` did not answer within {TIMEOUT_S} s") from None
    if done.returncode:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise ClusterError(f"`{' '.join(command)}` failed: {said[-1] if said else f'exit {done.returncode}'}")
    return done.stdout


def job_states(jobs: list[str]) -> dict[str, JobState]:
    """The jobs (`1234`, or `1234_5` for an array task) SLURM still lists, by id. A job not
    in the result has ended and been forgotten by the controller (after `MinJobAge`)."""
    if not jobs:
        return {}
    arrays = sorted({job.split("_")[0] for job in jobs})
    try:
        out = _run(["squeue", "-h", "-r", "-t", "all", "-j", ",".join(arrays), "-o", "%i|%T|%r|%N"])
    except ClusterError as err:
        if "Invalid job id" not in str(err):
            raise
        out = ""  # none of them is known any more (squeue fails when it knows none of the ids)
    listed = {}
    for line in out.splitlines():
        parts = line.strip().split("|")
        if len(parts) == 4:
            listed[parts[0]] = JobState(parts[0], parts[1], "" if parts[2] == "None" else parts[2], parts[3])
    return {job: listed[job] for job in jobs if job in listed}


def cancel(jobs: list[str]) -> None:
    """`scancel` the jobs (SIGTERM, then SIGKILL after the cluster's grace period)."""
    if jobs:
        _run(["scancel", *jobs])


@dataclass(frozen=True)
class Offer:
    """The most a partition's nodes have: CPUs, memory (MB) and GPUs on its largest node,
    its node count and time limit (minutes; None: no limit)."""

    partition: str
    cpus: int
    mem_mb: int
    gpus: int
    nodes: int
    max_minutes: int | None

    def describe(self) -> str:
        limit = "no time limit" if self.max_minutes is None else f"at most {self.max_minutes} min"
        return (f"{self.cpus} CPUs, {self.mem_mb / 1024:.1f} GB and {self.gpus} GPUs on its largest node, "
                f"{self.nodes} node{'s' * (self.nodes != 1)}, {limit}")


def partition_offer(partition: str | None) -> Offer:
    """What `partition` (None: the cluster's default one) offers, from `sinfo`."""
    out = _run(["sinfo", "-h", "-N", "-o", "%P|%N|%c|%m|%G|%l", *(["-p", partition] if partition else [])])
    rows = [line.split("|") for line in out.splitlines() if line.count("|") == 5]
    if not partition:
        defaults = [row for row in rows if row[0].endswith("*")]
        if not defaults:
            raise ConfigError("this SLURM cluster has no default partition: set hydra.launcher.partition=NAME")
        rows, partition = defaults, defaults[0][0]
    name = partition.rstrip("*")
    rows = [row for row in rows if row[0].rstrip("*") == name]
    if not rows:
        names = sorted({line.split("|")[0].rstrip("*") for line in _run(["sinfo", "-h", "-o", "%P|"]).splitlines()})
        raise ConfigError(f"hydra.launcher.partition={name}: no such SLURM partition (sinfo lists: {', '.join(names)})")
    return Offer(name, max(_int(row[2]) for row in rows), max(_int(row[3]) for row in rows),
                 max(_gpus(row[4]) for row in rows), len({row[1] for row in rows}), _minutes(rows[0][5]))


def check_resources(offer: Offer, *, cpus: int, mem_gb: float | None, gpus: int, nodes: int,
                    minutes: int | None) -> None:
    """Refuse, in one line saying what was asked and what the partition offers, a job that
    can never start there (it would pend forever, e.g. with reason PartitionConfig)."""
    fixes = []
    if cpus > offer.cpus:
        fixes.append(f"hydra.launcher.cpus_per_task={offer.cpus}")
    if mem_gb is not None and mem_gb * 1024 > offer.mem_mb:
        fixes.append(f"hydra.launcher.mem_gb={int(offer.mem_mb // 1024)}")
    if gpus > offer.gpus:
        fixes.append(f"hydra.launcher.gpus_per_node={offer.gpus}")
    if nodes > offer.nodes:
        fixes.append(f"hydra.launcher.nodes={offer.nodes}")
    if minutes is not None and offer.max_minutes is not None and minutes > offer.max_minutes:
        fixes.append(f"hydra.launcher.timeout_min={offer.max_minutes}")
    if fixes:
        memory = "no memory limit" if mem_gb is None else f"{mem_gb:g} GB"
        raise ConfigError(
            f"SLURM partition {offer.partition} can never run these jobs: each asks for {cpus} CPUs, {memory} and "
            f"{gpus} GPUs per node on {nodes} node{'s' * (nodes != 1)} for {minutes} min; the partition offers "
            f"{offer.describe()}. Set {' '.join(fixes)} (or another hydra.launcher.partition)")


def _int(text: str) -> int:
    match = re.match(r"\d+", text.strip())
    return int(match[0]) if match else 0


def _gpus(gres: str) -> int:
    """GPUs in a `%G` field: `gpu:4`, `gpu:a100:4(S:0-1)`, `(null)`."""
    total = 0
    for item in gres.split(","):
        fields = item.split("(")[0].split(":")
        if fields[0] == "gpu" and len(fields) > 1 and fields[-1].isdigit():
            total += int(fields[-1])
    return total


def _minutes(limit: str) -> int | None:
    """`%l` (`infinite`, `30:00`, `1-00:00:00`, `2:00:00`) in minutes."""
    limit = limit.strip()
    if limit in ("infinite", "UNLIMITED", "n/a", ""):
        return None
    days, _, clock = limit.rpartition("-")
    parts = [int(p) for p in clock.split(":")]
    hours, minutes = (parts[0], parts[1]) if len(parts) == 3 else (0, parts[0])
    return int(days or 0) * 1440 + hours * 60 + minutes
