"""ensure_ray starts a private Ray unless an address names a cluster, against a real
`ray start --head` on 127.0.0.1.

The head runs with its own RAY_TMPDIR (so its `ray_current_cluster` record is seen only by
the processes of this test, not by other Ray users of the machine) and is stopped in
teardown. Drivers run in subprocesses: one process can attach to one cluster only.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RAY = Path(sys.executable).parent / "ray"

DRIVER = textwrap.dedent("""
    import json, logging, sys
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    import ray
    from skyeval.errors import ConfigError
    from skyeval.backends.ray_session import ensure_ray
    first, second = json.loads(sys.argv[1])
    ensure_ray(first)
    ray.get(ray.remote(lambda: 1).remote())  # scheduling works there
    out = {"gcs": ray.get_runtime_context().gcs_address}
    if second is not None:
        try:
            ensure_ray(second)
            out["second"] = "ok"
        except ConfigError as err:
            out["second"] = "ConfigError: " + str(err)
    print("RESULT " + json.dumps(out), flush=True)
""")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def head():
    """A real one-node cluster from `ray start --head --block` (1 CPU). Teardown stops
    exactly the processes that command started (never `ray stop`, which would stop every
    Ray on the machine)."""
    import psutil

    tmp = tempfile.mkdtemp(prefix="rs", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    env = {**os.environ, "RAY_TMPDIR": tmp}
    env.pop("RAY_ADDRESS", None)
    record = Path(tmp) / "ray" / "ray_current_cluster"
    proc = subprocess.Popen([str(RAY), "start", "--head", "--block", f"--port={free_port()}", "--num-cpus=1",
                             "--node-ip-address=127.0.0.1", "--include-dashboard=false", "--disable-usage-stats"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    started = psutil.Process(proc.pid)
    try:
        deadline = time.monotonic() + 180
        while not record.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
        assert record.exists(), "ray start --head did not come up"
        time.sleep(2)  # the record is written just before the raylet is ready
        yield env, record.read_text().strip()
    finally:
        family = [started, *started.children(recursive=True)]
        for process in family:
            with contextlib.suppress(psutil.Error):
                process.terminate()
        _, alive = psutil.wait_procs(family, timeout=30)
        for process in alive:
            with contextlib.suppress(psutil.Error):
                process.kill()
        shutil.rmtree(tmp, ignore_errors=True)


def drive(env: dict, first: str | None, second: str | None = None) -> tuple[dict, str]:
    proc = subprocess.run([sys.executable, "-c", DRIVER, json.dumps([first, second])], env={**env, "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, timeout=600)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    return json.loads(lines[0][len("RESULT "):]), proc.stderr


@pytest.mark.slow
def test_no_address_starts_a_private_ray_on_loopback_beside_the_nodes_cluster(head):
    """Issue 25 item 14: a stranger's `ray start` on this machine is not joined."""
    env, address = head
    out, logs = drive(env, None)
    assert out["gcs"] != address and out["gcs"].startswith("127.0.0.1:")
    assert "started a private local Ray at 127.0.0.1:" in logs and "Found multiple active Ray" not in logs


@pytest.mark.slow
def test_auto_or_ray_address_joins_the_cluster_named(head):
    env, address = head
    out, logs = drive(env, "auto")
    assert out["gcs"] == address  # joined, without local-only arguments (Ray would refuse num_cpus)
    assert f"joined the cluster at {address} (ray_address=auto" in logs
    out, logs = drive({**env, "RAY_ADDRESS": address}, None)
    assert out["gcs"] == address and f"(RAY_ADDRESS={address};" in logs


@pytest.mark.slow
def test_local_forces_a_private_instance(head):
    env, address = head
    out, logs = drive(env, "local")
    assert out["gcs"] != address and "started a private local Ray" in logs


@pytest.mark.slow
def test_another_cluster_while_attached_is_a_config_error(head):
    env, address = head
    out, _ = drive(env, "auto", f"127.0.0.1:{free_port()}")
    assert out["second"].startswith("ConfigError: ray_address=127.0.0.1:") and address in out["second"]
    out, _ = drive(env, "auto", "local")
    assert out["second"].startswith("ConfigError: ray_address=local")
    out, _ = drive(env, address, address)  # the same cluster again is fine
    assert out["second"] == "ok"


CLUSTER = textwrap.dedent("""
    import json, subprocess, sys
    from ray.cluster_utils import Cluster
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "node_ip_address": "127.0.0.1"})
    try:
        cluster.add_node(num_cpus=1, node_ip_address="127.0.0.1")
        cluster.wait_for_nodes()
        driver = subprocess.run([sys.executable, "-c", sys.argv[1], json.dumps([cluster.address, None])],
                                capture_output=True, text=True, timeout=600)
        print("ADDRESS " + cluster.address, flush=True)
        print(driver.stdout, driver.stderr[-3000:], flush=True)
    finally:
        cluster.shutdown()
""")


@pytest.mark.slow
def test_a_two_node_test_cluster_on_loopback_is_joined_there():
    """Issue 25 item 17: test clusters listen on 127.0.0.1 only; ensure_ray reaches them
    there (Ray alone would look for 127.0.0.1's GCS at the machine's network address)."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    proc = subprocess.run([sys.executable, "-c", CLUSTER, DRIVER], env={**env, "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, timeout=1200)
    address = next(line.split()[1] for line in proc.stdout.splitlines() if line.startswith("ADDRESS "))
    result = next(line for line in proc.stdout.splitlines() if line.startswith("RESULT "))
    assert address.startswith("127.0.0.1:") and json.loads(result[len("RESULT "):])["gcs"] == address, proc.stdout
    assert f"joined the cluster at {address} (ray_address={address}; 2 nodes" in proc.stdout


def test_ray_init_keeps_the_applications_sigterm_handler():
    """ray.init sets SIGTERM to sys.exit; the CLI's handler (SIGTERM takes Ctrl-C's path, so the
    run folder is saved as interrupted and the CLI says so) must survive it."""
    script = textwrap.dedent("""
        import os, signal, time
        from skyeval.backends.ray_session import ensure_ray

        def as_ctrl_c(signum, frame):
            raise KeyboardInterrupt

        signal.signal(signal.SIGTERM, as_ctrl_c)
        ensure_ray("local")
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(60)
        except KeyboardInterrupt:
            print("STOPPED AS CTRL-C", flush=True)
    """)
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    proc = subprocess.run([sys.executable, "-c", script], env={**env, "PYTHONPATH": str(REPO)}, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0 and proc.stdout.strip() == "STOPPED AS CTRL-C", proc.stderr[-3000:]
