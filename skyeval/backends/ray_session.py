"""One Ray session per process: a private one unless an address names a cluster.

`ensure_ray(address)`:
- `address` (or `$RAY_ADDRESS`) names a cluster: join it (`auto`: the cluster `ray start`
  made on this node, found the way `ray.init(address="auto")` finds it);
- no address (or `local`): start a private local Ray on 127.0.0.1, sized to this
  machine's cores. Never someone else's cluster that happens to run on the same machine.
Joining passes no local-only arguments (`num_cpus`...: Ray refuses them when attaching).
The log says which Ray is used (Ray's own lines go where `skyeval.backends.ray_logs` sends
them). Once attached, asking for another cluster is a `ConfigError` (one process can be
attached to one Ray cluster).

Token authentication (Ray 2.52+; on by default for clusters started where a token exists
since 2.59): a cluster started with `RAY_AUTH_MODE=token` accepts only drivers holding its
token. Ray looks for it in `RAY_AUTH_TOKEN`, then the file `RAY_AUTH_TOKEN_PATH`, then
`~/.ray/auth_token`; skyeval joins with it whenever one is there and `RAY_AUTH_MODE` is not
set (Ray itself does so only for `auto`). A cluster that refuses us, or that does not answer,
is a `ClusterError` naming the fix, raised before any run folder is claimed.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import sys
import threading
from typing import TYPE_CHECKING, Any, Iterator

from skyeval.backends.ray_logs import catch_native_lines, route_ray_logs
from skyeval.errors import ClusterError, ConfigError

if TYPE_CHECKING:
    import ray.data

log = logging.getLogger(__name__)

PRIVATE_HOST = "127.0.0.1"  # a private Ray listens on loopback only
_attached: dict[str, Any] = {}  # what this module connected to: {"requested", "gcs", "private"}


def ensure_ray(address: str | None = None) -> None:
    """`ray.init` once (see the module docstring); later calls check they agree."""
    import ray

    requested = address or os.environ.get("RAY_ADDRESS") or None
    if ray.is_initialized():
        _check_same_cluster(requested)
        return
    target = _cluster_to_join(requested)
    route_ray_logs()  # `import ray` gave the `ray` logger its console handler
    catch_native_lines()
    kwargs: dict[str, Any] = dict(log_to_driver=False, logging_level=logging.WARNING,
                                  # workers unpickle user envs by module name: let them import what this process can
                                  runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}})
    kept = signal.getsignal(signal.SIGTERM)  # the application's own handler (the CLI's), if any
    if target is None:
        _on_loopback()
        ray.init(address="local", _node_ip_address=PRIVATE_HOST, num_cpus=os.cpu_count() or 1,
                 include_dashboard=False, **kwargs)
    else:
        if _is_loopback(target):  # a cluster on 127.0.0.1 (tests): reach it there, not at the network address
            _on_loopback()
        _check_answers(target, _use_cluster_token())
        ray.init(address=target, **kwargs)
    if callable(kept) and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, kept)  # ray.init replaced it with sys.exit; Ray's atexit cleanup still runs
    gcs = ray.get_runtime_context().gcs_address
    _attached.update(requested=requested, gcs=gcs, private=target is None)
    _quiet_ray_data()
    route_ray_logs()  # and `ray.data` has its own
    resources = ray.cluster_resources()
    if target is None:
        log.info("ray: started a private local Ray at %s (%d CPUs; RAY_ADDRESS or ray_address=auto joins a cluster)",
                 gcs, int(resources.get("CPU", 0)))
    else:
        log.info("ray: joined the cluster at %s (%s=%s; %d nodes, %d CPUs, %d GPUs)", gcs,
                 "ray_address" if address else "RAY_ADDRESS", requested,
                 len([n for n in ray.nodes() if n.get("Alive")]), int(resources.get("CPU", 0)),
                 int(resources.get("GPU", 0)))


def _on_loopback() -> None:
    """Keep Ray on 127.0.0.1: `ray.init` turns a loopback `_node_ip_address` (or a loopback
    cluster address) into the machine's network address unless Ray's local-only mode (its
    default on macOS and Windows) is on; it is switched on here and, through the
    environment, for the processes Ray starts."""
    from ray._private import ray_constants

    os.environ[ray_constants.ENABLE_RAY_CLUSTERS_ENV_VAR] = "0"
    ray_constants.ENABLE_RAY_CLUSTER = False


def _use_cluster_token() -> bool:
    """Turn token authentication on for this driver when a token is there (`RAY_AUTH_TOKEN`,
    `RAY_AUTH_TOKEN_PATH`, `~/.ray/auth_token`) and `RAY_AUTH_MODE` is not set; a cluster
    without authentication ignores it. Returns whether this driver sends a token."""
    from ray._private.authentication.authentication_token_setup import AUTH_MODE_ENV_VAR, _enable_token_auth
    from ray._raylet import AuthenticationTokenLoader

    mode = os.environ.get(AUTH_MODE_ENV_VAR)
    if mode is not None:
        return mode.lower() == "token"
    if not AuthenticationTokenLoader.instance().has_token(ignore_auth_mode=True):
        return False
    _enable_token_auth()
    log.info("ray: joining with the token of %s", _token_source())
    return True


def _token_source() -> str:
    for var in ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
        if os.environ.get(var):
            return var
    return "~/.ray/auth_token"


TOKEN_FIX = ("the cluster's token: `ray get-auth-token` on its head prints it; export it as RAY_AUTH_TOKEN, or copy "
             "the head's ~/.ray/auth_token to this machine (docs/scaling.md, \"A Ray cluster\")")


def _check_answers(target: str, with_token: bool) -> None:
    """Ask the cluster's GCS once, before `ray.init` (which retries for 20 s, printing a line
    each time): a ClusterError naming the fix when it refuses this driver or does not answer."""
    from ray._private.services import canonicalize_bootstrap_address
    from ray._raylet import GcsClient
    from ray.exceptions import AuthenticationError, RpcError

    if "://" in target:  # Ray Client: ray.init reports its own errors
        return
    try:
        address = canonicalize_bootstrap_address(target)
    except (ConnectionError, ValueError) as err:
        raise ClusterError(f"ray_address={target}: {str(err).splitlines()[0]}") from None
    if address is None:
        return
    try:
        with _stderr_silenced():  # Ray's own line about the failure: ours says it once, with the fix
            GcsClient(address=address)
    except AuthenticationError:
        if with_token:
            raise ClusterError(f"the Ray cluster at {address} refused this driver's token ({_token_source()}): use "
                               f"{TOKEN_FIX}") from None
        raise ClusterError(f"the Ray cluster at {address} requires token authentication and this driver has no "
                           f"token{' (RAY_AUTH_MODE=disabled here)' if os.environ.get('RAY_AUTH_MODE') else ''}: use "
                           f"{TOKEN_FIX}") from None
    except RpcError as err:
        raise ClusterError(f"no Ray cluster answers at {address} ({str(err).splitlines()[0]}): start it "
                           "(`ray start --head`, docs/scaling.md) or fix model_config.ray_address / RAY_ADDRESS") from None


@contextlib.contextmanager
def _stderr_silenced() -> Iterator[None]:
    """File descriptor 2 to /dev/null for the block (Ray's C++ core writes there)."""
    sys.stderr.flush()
    saved, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def _is_loopback(address: str) -> bool:
    host = address.rpartition(":")[0] if ":" in address else address
    return host in ("localhost", "::1") or host.startswith("127.")


def _cluster_to_join(requested: str | None) -> str | None:
    """The address to join, or None for a private local Ray."""
    return None if requested in (None, "local") else requested


def _check_same_cluster(requested: str | None) -> None:
    """Refuse to silently ignore a requested cluster when already attached to another."""
    if requested is None:
        return
    if _attached and requested == _attached.get("requested"):
        return
    current = _attached.get("gcs") or _gcs_address()
    private = _attached.get("private")
    if requested == "local":
        if private:
            return
        raise ConfigError(f"ray_address=local asks for a private Ray, but this process is already attached to the "
                          f"cluster at {current}; run in a fresh process (Ray allows one cluster per process)")
    if current and _same_address(requested, current):
        return
    where = "a private local Ray" if private else "the cluster"
    raise ConfigError(f"ray_address={requested} asks to join a cluster, but this process is already attached to "
                      f"{where} at {current}; run in a fresh process, or call ray.shutdown() first "
                      f"(Ray allows one cluster per process)")


def _gcs_address() -> str | None:
    import ray

    try:
        return ray.get_runtime_context().gcs_address
    except Exception:  # noqa: BLE001 (Ray Client sessions have none)
        return None


def _same_address(a: str, b: str) -> bool:
    """`host:port` pairs naming the same endpoint (hostnames resolved); `ray://` and
    `auto` cannot be compared and count as different."""
    def resolve(addr: str) -> tuple[str, str] | None:
        host, _, port = addr.rpartition(":")
        if not host or not port.isdigit() or "://" in addr:
            return None
        try:
            return socket.gethostbyname(host), port
        except OSError:
            return None

    return (ra := resolve(a)) is not None and ra == resolve(b)


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
