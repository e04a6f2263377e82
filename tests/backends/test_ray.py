"""RayBackend: vLLM replicas through Ray Data, on CPU bundles with the tiny model."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate

from skyeval.backends.base import GenerationRequest, SamplingParams
from skyeval.backends.ray import RayBackend, RayConfig
from skyeval.backends.vllm import render_prompt

from .conftest import CPU_ENGINE_KWARGS

CONF = Path(__file__).resolve().parents[2] / "conf"
SYSTEM = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 2+3?"}]


def test_config_takes_replicas_and_batch_size_from_scaling():
    with initialize_config_dir(str(CONF), version_base="1.3"):
        cfg = compose("config", ["model_config=ray", "model_config.model_source=/m", "scaling.num_replicas=3",
                                 "model_config.use_cpu=true"])
    config = instantiate(cfg.model_config, _convert_="all")
    assert isinstance(config, RayConfig)
    assert (config.num_replicas, config.batch_size) == (3, cfg.scaling.batch_size)
    backend = config.build()
    assert isinstance(backend, RayBackend) and backend.num_replicas == 3


def test_processor_config_cpu_and_gpu():
    cpu = RayBackend("/m", {"max_model_len": 64}, num_replicas=2, use_cpu=True, batch_size=8).processor_config()
    (bundle,) = cpu.placement_group_config["bundles"]
    assert bundle["CPU"] == 1 and not bundle.get("GPU") and cpu.accelerator_type is None
    assert cpu.concurrency == 2 and cpu.batch_size == 8 and cpu.should_continue_on_error
    assert cpu.engine_kwargs["max_model_len"] == 64 and cpu.engine_kwargs["dtype"] == "float32"
    assert cpu.engine_kwargs["disable_log_stats"]  # needed for error rows, see RayBackend
    gpu = RayBackend("/m", tensor_parallel_size=2, accelerator_type="H100").processor_config()
    assert gpu.placement_group_config is None and gpu.accelerator_type == "H100"
    assert gpu.engine_kwargs["tensor_parallel_size"] == 2


def test_tensor_parallel_size_is_not_an_engine_kwarg():
    with pytest.raises(ValueError, match="tensor_parallel_size"):
        RayBackend("/m", {"tensor_parallel_size": 2})


@pytest.mark.slow
@pytest.mark.vllm
def test_one_cpu_replica_returns_one_result_per_sample(tiny_model, ray_session):
    backend = RayBackend(tiny_model, CPU_ENGINE_KWARGS, num_replicas=1, use_cpu=True, batch_size=4)
    requests = [GenerationRequest("chat", SYSTEM, [0, 1, 2]), GenerationRequest("text", "2+3=", [0, 3]),
                GenerationRequest("long", "x " * 600, [0])]
    sampling = SamplingParams(n=3, temperature=1.0, max_tokens=8, seed=3)
    results = list(backend.generate(requests, sampling))
    (long,) = [r for r in results if r.id == "long"]
    assert not long.ok and "maximum context length" in long.error  # an error result, not a crash
    results.remove(long)
    assert sorted((r.id, r.sample_idx) for r in results) == [("chat", 0), ("chat", 1), ("chat", 2),
                                                             ("text", 0), ("text", 3)]
    assert all(r.ok and r.finish_reason in ("stop", "length") for r in results), results
    chat_tokens = len(render_prompt(backend.tokenizer, SYSTEM, None))
    for r in results:
        assert r.usage["prompt_tokens"] == (chat_tokens if r.id == "chat" else 4)
        assert 1 <= r.usage["completion_tokens"] <= 8
    assert len({r.generation for r in results if r.id == "chat"}) == 3
    info = backend.describe()
    assert info["backend"] == "ray" and info["accelerator_type"] == "CPU" and info["num_replicas"] == 1
    backend.close()


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.vllm
def test_gpu_replicas(tiny_model, ray_session):
    import torch

    replicas = torch.cuda.device_count()
    backend = RayBackend(tiny_model, {"max_model_len": 512}, num_replicas=replicas)
    requests = [GenerationRequest(str(i), SYSTEM, [0, 1]) for i in range(4 * replicas)]
    results = list(backend.generate(requests, SamplingParams(n=2, temperature=1.0, max_tokens=8)))
    assert len(results) == 8 * replicas and all(r.ok for r in results)
