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


# ---- the expected cost beside the worst case, and what `generate` spent ----------------------
def test_expected_length_comes_from_the_gold_solutions_else_an_earlier_run(monkeypatch):
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    problems = [{"id": "a", "prompt": "abcdefgh", "solution": "x" * 400}, {"id": "b", "prompt": "abcd", "solution": "y" * 800}]
    config = HTTPConfig("gpt-4o-mini", price={"input": 1.0, "output": 2.0})
    report = estimate(None, problems, SamplingParams(n=4, max_tokens=1000), config)
    # the gold solutions: 100 and 200 tokens (chars/4), mean 150 x 8 samples
    assert report["expected_completion_tokens"] == 1200 and "2 gold solutions" in report["expected_from"]
    assert report["expected_cost"] == pytest.approx((report["prompt_tokens_sent"] * 1.0 + 1200 * 2.0) / 1e6)
    assert report["expected_cost"] < report["worst_case_cost"]
    earlier = (5000.0, "an earlier run")
    capped = estimate(None, problems, SamplingParams(n=4, max_tokens=1000), config, earlier=earlier)
    assert capped["expected_completion_tokens"] == 8000 and capped["expected_from"] == "an earlier run"  # max_tokens
    assert estimate(None, PROBLEMS, SamplingParams(), config)["expected_cost"] is None  # no solutions, no run


def test_earlier_length_prefers_the_same_benchmark(tmp_path):
    import json
    import os

    from skyeval.run.cost import earlier_length

    def run(name: str, env: str, model: str, mean: float, age: int) -> None:
        (tmp_path / name).mkdir()
        summary = {"env": env, "model": model, "metrics": {"tokens": {"completion": {"mean": mean}}}}
        (tmp_path / name / "summary.json").write_text(json.dumps(summary))
        os.utime(tmp_path / name / "summary.json", (1e9 - age, 1e9 - age))

    run("a", "gsm8k", "m", 300.0, age=100)
    run("b", "math500", "m", 900.0, age=1)
    run("c", "gsm8k", "other", 50.0, age=0)
    (tmp_path / "torn").mkdir()
    (tmp_path / "torn" / "summary.json").write_text("{")
    assert earlier_length(tmp_path, "m", "gsm8k")[0] == 300.0
    assert earlier_length(tmp_path, "m", "aime24")[0] == 900.0  # the newest run of the model
    assert "on math500" in earlier_length(tmp_path, "m", "aime24")[1]
    assert earlier_length(tmp_path, "nobody", "gsm8k") is None


def test_generate_alone_reports_its_tokens_and_cost_and_the_dry_run_uses_them(tmp_path, data_dir):
    """`generate` against a real HTTP server on loopback (usage: words): summary.json holds
    the token totals (resumed samples included) and their cost; a dry run of the same model
    then expects that run's mean length."""
    import json

    from tests.backends.fault_server import FaultServer
    from tests.conftest import load_summary, run_cli, run_folder

    def generate(url: str, limit: int, *extra: str):
        return run_cli("generate", "+env=gsm8k", f"env.limit={limit}", "sampling_params.n=2", "model_config=openai",
                       "model_config.model_source=tiny", f"model_config.api_url={url}", "model_config.api_key_env=null",
                       "model_config.price={input:1.0,output:2.0}", f"logging.results_dir={tmp_path / 'out'}", *extra,
                       cwd=tmp_path)

    with FaultServer() as server:
        generate(server.url, 3)
        generate(server.url, 5)  # 3 problems resumed, 2 generated
    folder = run_folder(tmp_path / "out", "gsm8k_tiny_t0.0")
    summary = load_summary(folder)
    records = [json.loads(line) for part in sorted(folder.glob("generations/*.jsonl"))
               for line in part.read_text().splitlines()]
    assert summary["stage"] == "generate" and summary["counts"]["generated"] == 10 and len(records) == 10
    tokens = summary["metrics"]["tokens"]
    completion = sum(r["usage"]["completion_tokens"] for r in records)
    prompt = sum(r["usage"]["prompt_tokens"] for r in records)
    assert tokens["completion"]["samples"] == 10 and tokens["completion"]["total"] == completion > 0
    assert tokens["prompt"]["total"] == prompt > 0
    assert summary["cost"] == {"prompt_tokens": prompt, "completion_tokens": completion,
                               "price": {"input": 1.0, "output": 2.0}, "cost": pytest.approx((prompt + 2 * completion) / 1e6)}
    dry = generate("http://127.0.0.1:9/v1", 7, "dry_run=true", "sampling_params.n=4", "overwrite=true")
    assert f"completion tokens expected ~{round(completion / 10 * 28):,}" in dry.stdout
    assert "an earlier run of this model on gsm8k" in dry.stdout and str(folder) in dry.stdout
