"""`model_config=ray` joining a real two-node Ray cluster on this machine
(`ray.cluster_utils.Cluster`: two raylets of one CPU each) through `model_config.ray_address`:
the run completes with every sample in the folder once. (Where the replicas land and a
node lost mid-run are not checked here yet: see docs/scaling.md.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from skyeval.results import iter_records

from .backends.conftest import CPU_ENGINE_KWARGS, _make_tiny_model

pytestmark = [pytest.mark.slow, pytest.mark.vllm]

REPO = Path(__file__).resolve().parents[1]


def test_a_run_joins_a_two_node_cluster_by_ray_address_and_the_folder_is_complete(tmp_path):
    pytest.importorskip("vllm")
    import ray
    from ray.cluster_utils import Cluster

    model = _make_tiny_model(tmp_path / "model")
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    try:
        cluster.add_node(num_cpus=1)  # one CPU bundle each: a replica per node
        cluster.wait_for_nodes()
        kwargs = ", ".join(f"{k}: {json.dumps(v)}" for k, v in CPU_ENGINE_KWARGS.items())
        cmd = [sys.executable, "-m", "skyeval.cli", "generate", "+env=gsm8k", "env.limit=16", "model_config=ray",
               f"model_config.model_source={model}", f"model_config.ray_address={cluster.address}",
               "model_config.use_cpu=true", f"+model_config.engine_kwargs={{{kwargs}}}", "sampling_params.max_tokens=8",
               "scaling.num_replicas=2", "scaling.batch_size=4", f"logging.results_dir={tmp_path / 'out'}"]
        done = subprocess.run(cmd, env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=REPO, capture_output=True,
                              text=True, timeout=900)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        folder = next((tmp_path / "out").iterdir())
        summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
        assert summary["status"] == "complete" and summary["counts"]["generated"] == 16
        keys = [(r["id"], r["sample_idx"]) for r in iter_records(folder, "generations")]
        assert len(keys) == len(set(keys)) == 16
        assert summary["backend"]["num_replicas"] == 2
    finally:
        ray.shutdown()
        cluster.shutdown()
