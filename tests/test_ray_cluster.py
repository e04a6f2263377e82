"""`model_config=ray` on a real two-node Ray cluster on this machine
(`ray.cluster_utils.Cluster`: two raylets of 3 CPUs, room for a replica, a writer and
the render or finish task each), joined through `model_config.ray_address`.

One run shows it all: the replicas and the writers land on both nodes, scores and part
files are written by the writers on the cluster, and a node killed mid-run loses no
finished sample.
Which way the run goes depends on what the lost node was doing: its engine's blocks are
retried on the other replica (Ray restarts engines), so the run completes; but a writer
lost mid-block stops it (a retry would write samples twice), saying so, and the same
command on what is left completes it. Both end with every sample once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from skyeval.results import iter_records, key_of

from .backends.conftest import CPU_ENGINE_KWARGS
from .conftest import make_tiny_model

pytestmark = [pytest.mark.slow, pytest.mark.vllm]

REPO = Path(__file__).resolve().parents[1]
LIMIT = 400  # problems: enough that the kill comes mid-run
KILL_AFTER = 24  # scores written on the workers
HANG_S = 1800  # a hang bound: ~2 min quiet, 10 min seen at load 7-14 on 2 cores (never a speed check)


def _command(model: Path, address: str, out: Path, replicas: int) -> list[str]:
    kwargs = ", ".join(f"{k}: {json.dumps(v)}" for k, v in CPU_ENGINE_KWARGS.items())
    return [sys.executable, "-m", "skyeval.cli", "evaluate", "+env=gsm8k", f"env.limit={LIMIT}", "model_config=ray",
            f"model_config.model_source={model}", f"model_config.ray_address={address}", "model_config.use_cpu=true",
            f"+model_config.engine_kwargs={{{kwargs}}}", "sampling_params.max_tokens=16", "scaling.batch_size=4",
            f"scaling.num_replicas={replicas}", f"logging.results_dir={out}"]


def _worker_parts(out: Path, kind: str) -> list[Path]:
    """Part files the cluster's writers made (`w<node>-<pid>-part-N.jsonl`)."""
    return sorted(out.glob(f"*/{kind}/w*-part-*.jsonl"))


def _lines(paths: list[Path]) -> int:
    return sum(path.read_bytes().count(b"\n") for path in paths)


def _actor_nodes(address: str) -> dict[str, set[str]]:
    """Nodes the actors of each class ran on, from the GCS actor table (the public
    `ray.util.state.list_actors` needs the dashboard, which `Cluster` does not start). Asked
    from a subprocess: this one may be attached to another Ray already."""
    code = ("import json, sys, ray; from ray._private.state import actors; ray.init(address=sys.argv[1]); "
            "print(json.dumps([[a['ActorClassName'], a['Address']['NodeID']] for a in actors().values()]))")
    done = subprocess.run([sys.executable, "-c", code, address], capture_output=True, text=True, timeout=HANG_S)
    assert done.returncode == 0, done.stderr[-2000:]
    nodes: dict[str, set[str]] = {}
    for name, node in json.loads(done.stdout.strip().splitlines()[-1]):
        nodes.setdefault(name, set()).add(node)
    return nodes


def test_a_two_node_run_spreads_writes_on_workers_and_survives_a_lost_node(tmp_path):
    pytest.importorskip("vllm")
    from ray.cluster_utils import Cluster

    model = make_tiny_model(tmp_path / "model")
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 3, "node_ip_address": "127.0.0.1"})
    try:
        worker = cluster.add_node(num_cpus=3, node_ip_address="127.0.0.1")
        cluster.wait_for_nodes()
        head_id, worker_id = cluster.head_node.node_id, worker.node_id

        run = subprocess.Popen(_command(model, cluster.address, out, replicas=2), env=env, cwd=REPO,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + HANG_S
        while _lines(_worker_parts(out, "scores")) < KILL_AFTER:
            assert run.poll() is None, "the run ended before the node was killed:\n" + run.stderr.read()[-3000:]
            assert time.monotonic() < deadline, f"no scores after {HANG_S:.0f} s"
            time.sleep(0.2)
        placed = _actor_nodes(cluster.address)
        assert placed["MapWorker(MapBatches(vLLMEngineStageUDF))"] == {head_id, worker_id}  # a replica on each node
        writers = placed["MapWorker(MapBatches(_Record))"]
        assert writers == {head_id, worker_id}  # a writer (one CPU each here) on each node
        # the scores so far come from those writers (one may not have had a block yet)
        assert {path.name[1:9] for path in _worker_parts(out, "scores")} <= {node[:8] for node in writers}

        before = {(path.name, line) for path in _worker_parts(out, "scores")
                  for line in path.read_text(encoding="utf-8").splitlines(keepends=True) if line.endswith("\n")}
        cluster.remove_node(worker)  # the worker node dies mid-run
        stdout, stderr = run.communicate(timeout=HANG_S)
        (folder,) = out.iterdir()
        # every score line written before the kill is still there
        after = {(path.name, line) for path in _worker_parts(out, "scores")
                 for line in path.read_text(encoding="utf-8").splitlines(keepends=True)}
        assert before <= after
        print(f"writers on {len(writers)} node(s); after the node was lost the run "
              f"{'stopped' if run.returncode == 2 else 'completed'}")
        if run.returncode == 2:  # a writer was lost mid-block: the run stopped, resumable
            assert "lost mid-run" in stderr and "re-run the same command" in stderr, stderr[-2000:]
            stopped = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
            assert stopped["status"] == "interrupted" and "lost mid-run" in stopped["stopped_by"]
            finished = {key_of(r) for r in iter_records(folder, "scores")}
            assert stopped["counts"]["scored"] <= len(finished) < LIMIT
            # the same command on the node that is left (one replica fits) completes the run
            done = subprocess.run(_command(model, cluster.address, out, replicas=1), env=env, cwd=REPO,
                                  capture_output=True, text=True, timeout=HANG_S)
            assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
            assert json.loads((folder / "summary.json").read_text())["counts"]["resumed"] >= len(finished)
        else:  # the lost engine's blocks were retried on the other replica
            assert run.returncode == 0, stdout[-2000:] + stderr[-3000:]
        summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
        counts = summary["counts"]
        assert summary["status"] in ("complete", "complete_with_failures")
        assert counts["samples"] == LIMIT and counts["missing"] == 0 and counts["scored"] + counts["failed"] == LIMIT
        # every sample is in exactly one of scores/ or failures/, and was generated once
        ended = Counter(key_of(r) for kind in ("scores", "failures") for r in iter_records(folder, kind))
        assert len(ended) == LIMIT and set(ended.values()) == {1}
        generated = Counter(key_of(r) for r in iter_records(folder, "generations"))
        assert set(generated.values()) == {1}
        assert not list(folder.glob("scores/per_problem-w*"))  # per-problem tallies are the driver's
    finally:
        cluster.shutdown()
