"""RayBackend: vLLM replicas through Ray Data, on CPU bundles with the tiny model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate

from skyeval.backends.base import GenerationRequest, SamplingParams, ScalingConfig, continued_prompt
from skyeval.backends.ray import SEGMENT_BATCHES, RayBackend, RayConfig, check_visible
from skyeval.backends.vllm import load_tokenizer, render_prompt
from skyeval.errors import ConfigError, RunFolderError
from skyeval.results import RunFolder, iter_records, key_of

from ..conftest import run_cli
from .conftest import CPU_ENGINE_KWARGS

REPO = Path(__file__).resolve().parents[2]
CONF = REPO / "conf"
SYSTEM = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 2+3?"}]


@pytest.mark.vllm  # ray.data.llm imports what the vllm package brings (aiohttp...)
def test_replicas_batch_size_and_accelerator_come_from_scaling():
    """One source of truth: the root `scaling` section, which ray.yaml does not repeat."""
    with initialize_config_dir(str(CONF), version_base="1.3"):
        cfg = compose("config", ["model_config=ray", "model_config.model_source=/m", "scaling.num_replicas=3",
                                 "scaling.accelerator_type=L40S"])
    assert not {"num_replicas", "batch_size", "accelerator_type"} & set(cfg.model_config)
    config = instantiate(cfg.model_config, _convert_="all")
    assert isinstance(config, RayConfig)
    backend = config.build(ScalingConfig(**cfg.scaling))
    processor = backend.processor_config()
    # a fixed pool of 3 (an int would let Ray start 1 and scale up to 3)
    assert processor.get_concurrency() == {"min_size": 3, "max_size": 3}
    assert (processor.batch_size, processor.accelerator_type) == (cfg.scaling.batch_size, "L40S")
    assert backend.window() == SEGMENT_BATCHES * cfg.scaling.batch_size * 3
    assert backend.describe()["num_replicas"] == 3


@pytest.mark.vllm  # ray.data.llm imports what the vllm package brings (aiohttp...)
def test_processor_config_cpu_and_gpu():
    cpu = RayBackend(RayConfig("/m", use_cpu=True, engine_kwargs={"max_model_len": 64}),
                     ScalingConfig(num_replicas=2, batch_size=8)).processor_config()
    (bundle,) = cpu.placement_group_config["bundles"]
    assert bundle["CPU"] == 1 and not bundle.get("GPU") and cpu.accelerator_type is None
    assert cpu.concurrency == (2, 2) and cpu.batch_size == 8 and cpu.should_continue_on_error
    assert cpu.engine_kwargs["max_model_len"] == 64 and cpu.engine_kwargs["dtype"] == "float32"
    assert cpu.engine_kwargs["disable_log_stats"]  # needed for error rows, see RayBackend
    gpu = RayBackend(RayConfig(model="/m", tensor_parallel_size=2),
                     ScalingConfig(concurrency=2, accelerator_type="H100")).processor_config()
    assert gpu.placement_group_config is None and gpu.accelerator_type == "H100"
    assert gpu.engine_kwargs["tensor_parallel_size"] == 2


def test_bad_values_are_config_errors():
    with pytest.raises(ConfigError, match="tensor_parallel_size"):
        RayConfig("/m", engine_kwargs={"tensor_parallel_size": 2})
    with pytest.raises(ConfigError, match="scaling.num_replicas"):
        ScalingConfig(num_replicas=0)


def test_a_run_folder_some_node_cannot_see_is_refused_before_engines_start(ray_session, tmp_path):
    """The check runs on every live node (one here): a folder it sees passes, one it does
    not is a RunFolderError naming the node."""
    import ray

    RunFolder(tmp_path / "run").claim({})
    check_visible(str(tmp_path / "run"))
    (node,) = [n["NodeManagerAddress"] for n in ray.nodes() if n["Alive"]]
    with pytest.raises(RunFolderError, match=rf"not visible on Ray node\(s\) {node}: .*shared filesystem"):
        check_visible(str(tmp_path / "elsewhere"))


@pytest.mark.slow
@pytest.mark.vllm
def test_one_cpu_replica_streams_a_generator_of_requests(tiny_model, ray_session):
    """One result per sample (errors as results), prompts rendered in workers exactly as
    the vLLM backend does, and the request generator read one segment at a time (two
    segments here: the second starts its replica anew)."""
    scaling = ScalingConfig(num_replicas=1, batch_size=4)
    config = RayConfig(tiny_model, use_cpu=True, engine_kwargs=CPU_ENGINE_KWARGS, segment_samples=12)
    backend = RayBackend(config, scaling)
    window = backend.window()
    fixed = [GenerationRequest("chat", SYSTEM, [0, 1, 2]), GenerationRequest("text", "2+3=", [0, 3]),
             GenerationRequest("long", "x " * 600, [0]),
             GenerationRequest("think", [{"role": "user", "content": "2+3?"}, {"role": "assistant", "content": "<think>"}], [0]),
             # a sample a tool loop continues (skyeval.tools): its message goes on, within its own budget
             GenerationRequest("go on", SYSTEM, [1], continuation="```output\n5\n```\n", max_tokens=2)]
    extra = 5  # 8 samples above + 5: a segment of 12, then one of 1
    pulled = consumed = 0
    ahead: list[int] = []

    def requests():
        nonlocal pulled
        for request in fixed + [GenerationRequest(f"r{i}", f"{i}+1=", [0]) for i in range(extra)]:
            pulled += len(request.sample_indices)
            ahead.append(pulled - consumed)
            yield request

    sampling = SamplingParams(n=3, temperature=1.0, max_tokens=8, seed=3)
    results = []
    for result in backend.generate(requests(), sampling):
        results.append(result)
        consumed += 1
    assert consumed == pulled == 8 + extra
    assert max(ahead) <= window + 3  # never more than a segment (plus one request's samples) ahead
    by_key = {(r.id, r.sample_idx): r for r in results}
    assert len(by_key) == len(results)
    long = by_key.pop(("long", 0))
    assert not long.ok and "maximum context length" in long.error  # an error result, not a crash
    think = by_key.pop(("think", 0))
    assert think.generation == "" and think.reasoning and think.finish_reason == "length"
    assert think.usage["reasoning_tokens"] == think.usage["completion_tokens"] == 8
    continued = by_key.pop(("go on", 1))
    tokenizer = load_tokenizer(tiny_model, {})
    assert continued.usage["prompt_tokens"] == len(render_prompt(
        tokenizer, continued_prompt(SYSTEM, "```output\n5\n```\n"), None))  # the assistant message left open
    assert continued.usage["completion_tokens"] <= 2 and continued.text is not None and continued.seed == 4
    assert all(r.ok and r.finish_reason in ("stop", "length") for r in by_key.values())
    chat_tokens = len(render_prompt(tokenizer, SYSTEM, None))
    for (request_id, idx), r in by_key.items():
        if request_id in ("chat", "text"):
            assert r.usage["prompt_tokens"] == (chat_tokens if request_id == "chat" else 4)
        assert 1 <= r.usage["completion_tokens"] <= 8 and r.seed == 3 + idx
    assert len({by_key["chat", i].generation for i in range(3)}) == 3
    info = backend.describe()
    assert info["backend"] == "ray" and info["accelerator_type"] == "CPU" and info["num_replicas"] == 1
    assert info["engine_version"] and info["sampling_sent"]["max_tokens"] == 8
    backend.close()


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.vllm
def test_gpu_replicas(tiny_model, ray_session):
    import torch

    replicas = torch.cuda.device_count()
    backend = RayBackend(RayConfig(tiny_model, engine_kwargs={"max_model_len": 512}), ScalingConfig(num_replicas=replicas))
    requests = (GenerationRequest(str(i), SYSTEM, [0, 1]) for i in range(4 * replicas))
    results = list(backend.generate(requests, SamplingParams(n=2, temperature=1.0, max_tokens=8)))
    assert len(results) == 8 * replicas and all(r.ok for r in results)


@pytest.mark.slow
@pytest.mark.vllm
def test_a_cli_run_on_one_small_node_writes_and_scores_on_its_writer(tiny_model, tmp_path):
    """The CLI's Ray path on a private local Ray of this machine's cores (2 on CI): with no
    CPU to spare the writer asks for none, so the CPU replica and the render/finish tasks
    still fit beside it (asking for one, the run waited forever)."""
    kwargs = ", ".join(f"{k}: {json.dumps(v)}" for k, v in CPU_ENGINE_KWARGS.items())
    proc = run_cli("evaluate", "+env=gsm8k", "env.limit=12", "model_config=ray", f"model_config.model_source={tiny_model}",
                   "model_config.ray_address=local", "model_config.use_cpu=true",
                   f"+model_config.engine_kwargs={{{kwargs}}}", "sampling_params.max_tokens=8", "scaling.batch_size=4",
                   f"logging.results_dir={tmp_path}", cwd=REPO, env={"PYTHONPATH": str(REPO)}, timeout=600)
    (folder,) = tmp_path.iterdir()
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    assert summary["status"] == "complete" and summary["counts"]["scored"] == 12
    # Ray's own lines (tests/backends/test_ray_logs.py) are in logs.txt, not on the console
    logs = (folder / "logs.txt").read_text(encoding="utf-8")
    for line in ("core_worker.cc", "Progress bars disabled"):
        assert line in logs and line not in proc.stderr + proc.stdout, line
    assert not (folder / ".lock-run").exists()
    for kind in ("generations", "scores"):
        parts = [p.name for p in RunFolder(folder).parts(kind) if not p.name.startswith("per_problem")]
        assert parts and all(name.startswith("w") for name in parts)  # the writer's, not the driver's
    assert len({key_of(r) for r in iter_records(folder, "scores")}) == 12
