"""`hydra/launcher=slurm`: Hydra's submitit launcher, as a user of a shared cluster needs it.

Before submitting, it asks the partition what its nodes have (`sinfo`) and refuses, in one
line, jobs it could never run; and it refuses to submit into a run folder that jobs of an
earlier submission still write, naming them. It records the jobs in the sweep record in
the results folder (`skyeval.run.sweeps`), then

- `hydra.launcher.wait=false`: returns at once, saying how to watch (`skyeval status`)
  and stop (`scancel`) them;
- `wait=true` (the default): waits for them, following each job with `squeue` (no
  accounting needed: a job that dies is noticed). The CLI then prints one line per run
  (its merged headline and folder). Ctrl-C cancels the jobs it submitted and says so, or
  with `cancel_on_interrupt=false` leaves them running and names them.

In the job, SIGTERM (`scancel`, SLURM stopping a job) reaches skyeval's handler rather
than submitit's (which only logs `Bypassing signal SIGTERM`): the run stops as on Ctrl-C,
its shard saved `interrupted`, and the same command resumes it.
"""

from __future__ import annotations

import copy
import logging
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from hydra.core.config_store import ConfigStore
from hydra_plugins.hydra_submitit_launcher.config import SlurmQueueConf
from hydra_plugins.hydra_submitit_launcher.submitit_launcher import SlurmLauncher as SubmititSlurmLauncher

from skyeval.errors import ClusterError, RunFolderError
from skyeval.run import slurm, sweeps
from skyeval.run.signals import SigtermAsCtrlC, received

log = logging.getLogger("skyeval")

POLL_S = 5.0  # how often a waiting launcher asks squeue
STOP_WAIT_S = 120.0  # after Ctrl-C, how long to wait for the cancelled jobs to stop
# reasons a job pends for that no wait cures: the partition can never run it as asked
OURS = ("wait", "cancel_on_interrupt")  # our settings (the rest are submitit's)
NEVER_RUNS = ("PartitionConfig", "PartitionNodeLimit", "PartitionTimeLimit", "BadConstraints", "InvalidAccount",
              "InvalidQOS", "AccountNotAllowed")


@dataclass
class SlurmConfig(SlurmQueueConf):
    """`conf/hydra/launcher/slurm.yaml`'s schema: submitit's SLURM settings, and ours."""

    _target_: str = "hydra_plugins.skyeval_launcher.skyeval_launcher.SlurmLauncher"
    wait: bool = True  # false: submit and return at once (watch with `skyeval status`)
    cancel_on_interrupt: bool = True  # Ctrl-C on a waiting launcher cancels the jobs it submitted


ConfigStore.instance().store(group="hydra/launcher", name="skyeval_slurm", node=SlurmConfig, provider="skyeval")


class SlurmLauncher(SubmititSlurmLauncher):
    """Submits a sweep's jobs as one SLURM job array (see the module docstring)."""

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[Any]:
        from hydra.core.utils import JobReturn, JobStatus

        wait, cancel_on_interrupt = bool(self.params.get("wait", True)), bool(self.params.get("cancel_on_interrupt", True))
        self._check_resources()
        folders = [self._folder(overrides) for overrides in job_overrides]
        self._refuse_held(sorted(set(folders)))
        jobs = self._submit(job_overrides, initial_job_idx)
        record = Path(os.environ.get(sweeps.RECORD_ENV) or sweeps.new_record(self.config.hydra.sweep.dir))
        os.environ[sweeps.RECORD_ENV] = str(record)
        entries = [{"index": initial_job_idx + i, "dir": str(folder), "overrides": list(overrides), "job": job.job_id,
                    "log": str(job.paths.stderr)}
                   for i, (overrides, folder, job) in enumerate(zip(job_overrides, folders, jobs))]
        sweeps.append(record, entries)
        self._say_submitted(entries, record, wait)
        if wait:
            self._wait([entry["job"] for entry in entries], cancel_on_interrupt, record)
        return [JobReturn(overrides=list(o), working_dir=str(f), task_name="skyeval", status=JobStatus.COMPLETED,
                          _return_value=str(f)) for o, f in zip(job_overrides, folders)]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """One job, on its node: the run, with SIGTERM as Ctrl-C (submitit's handler only logs it)."""
        os.environ.pop(sweeps.RECORD_ENV, None)  # the launcher recorded this job when it submitted it
        stop = SigtermAsCtrlC()
        try:
            with stop.installed():
                return super().__call__(*args, **kwargs)
        except KeyboardInterrupt:
            by = stop.signal or signal.SIGINT
            print(f"stopped ({by.name}): finished samples are saved; the same command resumes the run.",
                  file=sys.stderr, flush=True)
            raise SystemExit(128 + by) from None

    # ---- before submitting ------------------------------------------------------------------
    def _check_resources(self) -> None:
        params = self.params
        offer = slurm.partition_offer(params.get("partition"))
        slurm.check_resources(offer, cpus=(params.get("cpus_per_task") or 1) * (params.get("tasks_per_node") or 1),
                              mem_gb=params.get("mem_gb"), gpus=params.get("gpus_per_node") or 0,
                              nodes=params.get("nodes") or 1, minutes=params.get("timeout_min"))

    def _folder(self, overrides: Sequence[str]) -> Path:
        """The run folder the job of `overrides` will write (as `skyeval.run.app.execute` picks it)."""
        from hydra.core.hydra_config import HydraConfig
        from omegaconf import open_dict

        from skyeval.config.schema import RunConfig
        from skyeval.run.app import run_folder

        assert self.hydra_context is not None and self.config is not None
        cfg = self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))
        hydra_config = HydraConfig.instance()
        before = hydra_config.cfg
        hydra_config.set_config(cfg)  # `${hydra:...}` in the folder's name resolves as in the job
        try:
            run_dir = Path(str(cfg.hydra.sweep.dir)) / str(cfg.hydra.sweep.subdir)
            task = copy.deepcopy(cfg)
            with open_dict(task):
                del task["hydra"]
            return run_folder(RunConfig.of(task), run_dir).path
        finally:
            hydra_config.cfg = before

    def _refuse_held(self, folders: list[Path]) -> None:
        """Refuse to submit into a folder that live jobs of an earlier submission write."""
        from skyeval.results import RunFolder
        from skyeval.run.merge import shard_states

        claims: dict[str, str] = {}  # job id -> what it writes
        for record in sweeps.records(Path(str(self.config.hydra.sweep.dir))):
            for entry in sweeps.read(record):
                if entry.get("job") and Path(entry["dir"]) in folders:
                    claims[entry["job"]] = f"{entry['dir']}"
        for folder in folders:
            for (index, count), state in shard_states(RunFolder(folder)).items():
                if state and state.get("slurm_job") and state.get("status") == "running":
                    claims[state["slurm_job"]] = f"{folder}"
        live = slurm.job_states(sorted(claims))
        held = [f"{job} ({live[job].kind})" for job in sorted(live) if live[job].live]
        if held:
            raise RunFolderError(
                f"{', '.join(sorted({claims[j.split()[0]] for j in held}))} is still written by SLURM "
                f"job{'s' * (len(held) > 1)} {', '.join(held)}: wait for them to end (skyeval status "
                f"run_dir=...), or cancel them (scancel {' '.join(j.split()[0] for j in held)}), then submit again")

    def _submit(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> list[Any]:
        """submitit's array submission (Hydra's launcher, without its wait for results)."""
        import submitit
        from hydra.core.singleton import Singleton
        from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf
        from omegaconf import OmegaConf

        assert self.config is not None
        init = {"folder": self.params["submitit_folder"], "slurm_max_num_timeout": self.params.get("max_num_timeout", 0)}
        executor = submitit.AutoExecutor(cluster=self._EXECUTOR, **init)
        base = set(OmegaConf.structured(BaseQueueConf).keys())
        executor.update_parameters(**{k if k in base else f"{self._EXECUTOR}_{k}": v for k, v in self.params.items()
                                      if k not in ("submitit_folder", "max_num_timeout", *OURS)})
        Path(str(self.config.hydra.sweep.dir)).mkdir(parents=True, exist_ok=True)
        params = [(list(overrides), "hydra.sweep.dir", initial_job_idx + i, f"job_id_for_{initial_job_idx + i}",
                   Singleton.get_state()) for i, overrides in enumerate(job_overrides)]
        return executor.map_array(self, *zip(*params))

    # ---- after submitting -------------------------------------------------------------------
    def _say_submitted(self, entries: list[dict[str, Any]], record: Path, wait: bool) -> None:
        arrays = sorted({entry["job"].split("_")[0] for entry in entries})
        folders = list(dict.fromkeys(entry["dir"] for entry in entries))
        watch = f"status run_dir={folders[0]}" if len(folders) == 1 else f"status sweep={record}"
        lines = [f"submitted {len(entries)} SLURM job{'s' * (len(entries) > 1)} (array {', '.join(arrays)}) for "
                 f"{len(folders)} run{'s' * (len(folders) > 1)}{f': {folders[0]}' if len(folders) == 1 else ''}",
                 f"  watch: python -m skyeval.cli {watch}",
                 f"  stop:  scancel {' '.join(arrays)}"]
        if wait:
            lines.append("waiting for them (Ctrl-C cancels them; hydra.launcher.wait=false returns at once)")
        print("\n".join(lines), flush=True)

    def _wait(self, jobs: list[str], cancel_on_interrupt: bool, record: Path) -> None:
        """Until every job has ended, as `squeue` says (a job it no longer lists has ended)."""
        left, said = list(jobs), set()
        try:
            while left:
                time.sleep(POLL_S)
                try:
                    states = slurm.job_states(left)
                except ClusterError as err:  # the controller is busy or restarting: ask again
                    log.warning("%s; asking again in %.0f s", err, POLL_S)
                    continue
                for job in [job for job in left if job not in states or not states[job].live]:
                    left.remove(job)
                    how = states[job].shown if job in states else "squeue lists it no more"
                    print(f"SLURM job {job} ended ({how}); {len(left)} to go", flush=True)
                stuck = sorted(job for job in left if states[job].kind == "queued" and states[job].reason in NEVER_RUNS)
                if stuck and not said.issuperset(stuck):
                    said.update(stuck)
                    reasons = ", ".join(f"{job} ({states[job].reason})" for job in stuck)
                    print(f"SLURM will never start job{'s' * (len(stuck) > 1)} {reasons} as asked: cancelling "
                          "them; fix the hydra.launcher settings and submit again", file=sys.stderr, flush=True)
                    slurm.cancel(stuck)
        except KeyboardInterrupt:
            stop_jobs(left, cancel_on_interrupt, record)


def stop_jobs(jobs: list[str], cancel: bool, record: Path) -> None:
    """Ctrl-C (or SIGTERM) on a waiting launcher: cancel its live jobs and say so, or (not
    `cancel`) name them; then exit 128 + the signal."""
    code = 128 + (received() or signal.SIGINT)
    live = sorted(job for job, state in slurm.job_states(jobs).items() if state.live)
    if not live:
        print("interrupted: every job had ended", file=sys.stderr, flush=True)
        raise SystemExit(code)
    if not cancel:
        print(f"interrupted: SLURM jobs {' '.join(live)} still run (hydra.launcher.cancel_on_interrupt=false): "
              f"watch them with `python -m skyeval.cli status sweep={record}`, stop them with "
              f"`scancel {' '.join(live)}`", file=sys.stderr, flush=True)
        raise SystemExit(code)
    slurm.cancel(live)
    deadline = time.monotonic() + STOP_WAIT_S
    running = live
    while running and time.monotonic() < deadline:
        time.sleep(1.0)
        running = sorted(job for job, state in slurm.job_states(running).items() if state.live)
    print(f"interrupted: cancelled SLURM jobs {' '.join(live)} (scancel): each saves what it finished as "
          "interrupted; the same command resumes them" +
          (f"; still stopping: {' '.join(running)}" if running else ""), file=sys.stderr, flush=True)
    raise SystemExit(code)
