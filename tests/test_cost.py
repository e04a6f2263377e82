"""skyeval.run.cost: what a dry run reports, checked against hand-computed counts."""

from __future__ import annotations

import sys

import pytest

from skyeval.backends.base import SamplingParams
from skyeval.backends.openai import HTTPConfig
from skyeval.backends.ray import RayConfig
from skyeval.backends.vllm import VLLMConfig, load_tokenizer, render_prompt
from skyeval.errors import ConfigError
from skyeval.run.cost import actual_cost, estimate

CHAT = [{"role": "system", "content": "x" * 8}, {"role": "user", "content": "y" * 12}]
PROBLEMS = [{"id": "a", "prompt": "abcdefgh"}, {"id": "b", "prompt": CHAT}]


def test_http_without_tokenizer_estimates_chars_over_4_and_worst_case_cost(monkeypatch):
    monkeypatch.setitem(sys.modules, "tiktoken", None)  # as if tiktoken were not installed
    config = HTTPConfig("gpt-4o-mini", price={"input": 1.0, "output": 2.0})
    report = estimate(None, iter(PROBLEMS), SamplingParams(n=4, max_tokens=100), config)
    # "abcdefgh": 2 tokens; chat: (2 + 3) + (3 + 3) + 3 for the reply = 14
    assert report["problems"] == 2 and report["samples"] == 8
    assert report["prompt_tokens"] == 16 and report["prompt_tokens_sent"] == 64
    assert report["prompt_tokens_counted_with"] == "chars/4" and report["prompt_tokens_estimated"]
    assert report["max_completion_tokens"] == 800
    assert report["worst_case_cost"] == pytest.approx((64 * 1.0 + 800 * 2.0) / 1e6)


def test_http_with_tiktoken_when_its_encoding_is_available():
    tiktoken = pytest.importorskip("tiktoken")
    try:
        encoding = tiktoken.get_encoding("o200k_base")
    except Exception as exc:  # noqa: BLE001 (offline, not cached)
        pytest.skip(f"tiktoken's o200k_base is not available offline ({type(exc).__name__})")
    report = estimate(None, PROBLEMS[:1], SamplingParams(), HTTPConfig("gpt-4o-mini"))
    assert report["prompt_tokens"] == len(encoding.encode("abcdefgh"))
    assert report["prompt_tokens_counted_with"].startswith("tiktoken") and report["prompt_tokens_estimated"]
    assert report["worst_case_cost"] is None  # no price


@pytest.mark.parametrize("config_class", [VLLMConfig, RayConfig])
def test_local_tokenizer_counts_exactly_what_the_backend_sends(tiny_model, config_class):
    config = config_class(tiny_model, price={"input": 0.5, "output": 1.5})
    report = estimate(None, PROBLEMS, SamplingParams(n=2, max_tokens=10), config)
    tokenizer = load_tokenizer(tiny_model, {})
    expected = sum(len(render_prompt(tokenizer, p["prompt"], None)) for p in PROBLEMS)
    assert report["prompt_tokens"] == expected and not report["prompt_tokens_estimated"]
    assert report["prompt_tokens_counted_with"] == f"tokenizer of {tiny_model}"
    assert report["worst_case_cost"] == pytest.approx((2 * expected * 0.5 + 40 * 1.5) / 1e6)


def test_unloadable_tokenizer_falls_back_to_an_estimate(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    report = estimate(None, PROBLEMS[:1], SamplingParams(), VLLMConfig(str(tmp_path / "missing-model")))
    assert report["prompt_tokens"] == 2 and report["prompt_tokens_estimated"]


def test_raw_problems_are_templated_by_the_env(data_dir, monkeypatch):
    from skyeval.envs.registry import SkyEnvBuilder

    monkeypatch.setitem(sys.modules, "tiktoken", None)
    env = SkyEnvBuilder.build("gsm8k", {"limit": 3})
    problems = list(env.iter_problems())
    report = estimate(env, iter(problems), SamplingParams(n=2), HTTPConfig("m"))
    prompts = [env.apply_prompt_template_on_item(p)["prompt"] for p in problems]
    chars = [sum((len(m["content"]) + 3) // 4 + 3 for m in p) + 3 if isinstance(p, list) else (len(p) + 3) // 4
             for p in prompts]
    assert report["problems"] == 3 and report["prompt_tokens"] == sum(chars) > 0


def test_actual_cost_and_price_validation():
    assert actual_cost(1_000_000, 2_000_000, {"input": 0.15, "output": 0.6}) == pytest.approx(1.35)
    assert actual_cost(10, 10, None) is None
    for bad in ({"input": 1.0}, {"input": -1, "output": 1}, {"input": "1", "output": 1}):
        with pytest.raises(ConfigError, match="price"):
            HTTPConfig("m", price=bad)


def test_a_model_that_never_fans_out_sends_each_prompt_once(monkeypatch):
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    config = HTTPConfig("gpt-4o-mini", fan_out_n=False, price={"input": 1.0, "output": 2.0})
    report = estimate(None, iter(PROBLEMS), SamplingParams(n=4, max_tokens=100), config)
    assert report["prompt_tokens"] == 16 and report["prompt_tokens_sent"] == 16
