"""One Ray session per process: join a cluster when asked, else start a quiet local one."""

from __future__ import annotations

import logging
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import ray.data

log = logging.getLogger(__name__)


def ensure_ray(address: str | None = None) -> None:
    """`ray.init` once: `address` or `$RAY_ADDRESS` joins a cluster, otherwise local Ray."""
    import ray

    if ray.is_initialized():
        return
    address = address or os.environ.get("RAY_ADDRESS") or None
    kwargs = dict(address=address, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
    if address is None:
        kwargs["num_cpus"] = os.cpu_count() or 1
        # Workers unpickle user envs by module name: let them import what this process can.
        kwargs["runtime_env"] = {"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}}
    ray.init(**kwargs)
    _quiet_ray_data()
    log.info("ray: %s", f"joined {address}" if address else f"local, {os.cpu_count()} CPUs")


def _quiet_ray_data() -> None:
    import ray.data

    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.print_on_execution_start = False
    logging.getLogger("ray.data").setLevel(logging.WARNING)


def dataset_of(rows: list[dict[str, Any]]) -> "ray.data.Dataset":
    """Rows as a Ray Dataset (Ray started if needed), in enough blocks to use every core
    and few enough to keep Ray's per-block cost small."""
    ensure_ray()
    import ray.data

    blocks = max(1, min(len(rows), 4 * (os.cpu_count() or 1)))
    return ray.data.from_items(rows, override_num_blocks=blocks)
