"""OpenAIBackend against a real fault-injecting HTTP server on 127.0.0.1 (no mocks)."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from skyeval.backends.base import (
    GenerationRequest,
    GenerationResult,
    SamplingParams,
    ScalingConfig,
)
from skyeval.backends.openai import HTTPConfig, OpenAIBackend, read_api_key
from skyeval.curation import compose_model_config
from skyeval.errors import ConfigError

from .fault_server import Fault, FaultServer

CONF = Path(__file__).resolve().parents[2] / "conf" / "model_config" / "openai.yaml"

@pytest.fixture
def server():
    with FaultServer() as s:
        yield s

@pytest.fixture
def make_backend(server):
    """Backends on the test server with fast backoff; closed after the test."""
    backends: list[OpenAIBackend] = []

    def make(model: str = "test-model", api_key: str | None = None, concurrency: int = 8, **kwargs) -> OpenAIBackend:
        kwargs = {"timeout_s": 5.0, "backoff_base_s": 0.01, **kwargs}
        config = HTTPConfig(model, server.url, **kwargs)
        backend = OpenAIBackend(config, ScalingConfig(concurrency=concurrency), api_key=api_key)
        backends.append(backend)
        return backend

    yield make
    for backend in backends:
        backend.close()

def chat(i: int, samples: int = 1) -> GenerationRequest:
    return GenerationRequest(f"c{i}", [{"role": "user", "content": f"What is {i}+1? {i + 1}"}],
                             list(range(samples)))

def text(i: int, samples: int = 1) -> GenerationRequest:
    return GenerationRequest(f"t{i}", f"Q: {i}*2 = {i * 2}", list(range(samples)))

def run(backend: OpenAIBackend, requests, **sampling) -> dict[tuple[str, int], GenerationResult]:
    """All results by (id, sample_idx), checking each sample comes back exactly once."""
    results = list(backend.generate(requests, SamplingParams(**sampling)))
    keyed = {(r.id, r.sample_idx): r for r in results}
    assert len(keyed) == len(results)
    assert set(keyed) == {(q.id, i) for q in requests for i in q.sample_indices}
    return keyed

def test_chat_and_text_prompts(server, make_backend):
    results = run(make_backend(), [chat(1), text(2)])
    assert results["c1", 0].generation == "The answer is \\boxed{2}."
    assert results["t2", 0].generation == "The answer is \\boxed{4}."
    assert results["c1", 0].usage == {"prompt_tokens": 4, "completion_tokens": 4, "reasoning_tokens": 0}
    assert results["c1", 0].finish_reason == "stop" and results["c1", 0].reasoning is None
    assert results["c1", 0].seed == 0
    assert sorted(e["path"] for e in server.log) == ["/v1/chat/completions", "/v1/completions"]

def test_all_sampling_params_reach_server(server, make_backend):
    sampling = dict(n=1, temperature=0.7, top_p=0.9, top_k=20, max_tokens=123, seed=7,
                    stop=["</s>"], extra={"min_p": 0.05, "repetition_penalty": 1.1})
    run(make_backend(), [chat(1), text(2)], **sampling)
    for entry in server.log:
        assert entry["n"] == 1 and entry["seed"] == 7
        assert entry["params"] == {"model": "test-model", "temperature": 0.7, "top_p": 0.9,
                                   "top_k": 20, "max_tokens": 123, "stop": ["</s>"],
                                   "min_p": 0.05, "repetition_penalty": 1.1}

def test_top_k_only_when_set_and_prefill(server, make_backend):
    prefill = GenerationRequest("p", [{"role": "user", "content": "2+2?"},
                                      {"role": "assistant", "content": "<think>"}], [0])
    run(make_backend(), [prefill])
    params = server.log[0]["params"]
    assert "top_k" not in params
    assert params["continue_final_message"] is True and params["add_generation_prompt"] is False

def test_n_honoured_in_one_request(server, make_backend):
    backend = make_backend()
    results = run(backend, [chat(1, samples=4), text(2, samples=4)], n=4, seed=10)
    assert [(e["n"], e["seed"]) for e in server.log] == [(4, 10), (4, 10)]
    shares = [results["c1", i].usage["completion_tokens"] for i in range(4)]
    assert shares == [4, 4, 4, 4]  # the request's 16 completion tokens, split evenly
    assert backend.describe()["stats"]["server_honours_n"] is True

def test_fan_out_when_server_ignores_n(server, make_backend):
    server.configure(ignore_n=True)
    backend = make_backend(concurrency=1)
    results = run(backend, [chat(i, samples=3) for i in range(3)], n=3, seed=100)
    assert all(r.ok for r in results.values())
    sent = {i: [(e["n"], e["seed"]) for e in server.log if f"What is {i}+" in e["messages"][0]["content"]]
            for i in range(3)}
    assert sent[0] == [(3, 100), (1, 101), (1, 102)]  # learns from the first problem
    assert sorted(sent[2]) == [(1, 100), (1, 101), (1, 102)]  # later problems fan out directly
    assert backend.describe()["stats"]["server_honours_n"] is False

def test_fan_out_forced_and_never(server, make_backend):
    run(make_backend(fan_out_n=True), [text(1, samples=3)], n=3, seed=0)
    assert sorted((e["n"], e["seed"]) for e in server.log) == [(1, 0), (1, 1), (1, 2)]
    server.configure(ignore_n=True)
    results = run(make_backend(fan_out_n=False), [text(2, samples=2)], n=2)
    assert results["t2", 0].ok and results["t2", 1].error_type == "MissingChoices"

def test_resumed_samples_get_their_own_seeds(server, make_backend):
    run(make_backend(fan_out_n=True), [GenerationRequest("r", "resume 1", [2, 5])], n=8, seed=0)
    assert sorted(e["seed"] for e in server.log) == [2, 5]

def test_429_retry_after_honoured(server, make_backend):
    server.configure(faults=[Fault("429", retry_after=1.0)])
    backend = make_backend()
    start = time.monotonic()
    results = run(backend, [chat(1)])
    elapsed = time.monotonic() - start
    assert results["c1", 0].ok
    assert 1.0 <= elapsed < 30.0  # Retry-After was waited for (backoff alone would be ~0.01 s); 30: a hang bound
    assert backend.describe()["stats"]["retries"] == 1
    first, retry = server.log  # as the server saw them: the retry came at least Retry-After later
    assert (first["fault"], retry["fault"], retry["attempt"]) == ("429", None, 1)
    assert retry["t"] - first["t"] >= 1.0

def test_500_then_success_logs_retries(server, make_backend, caplog):
    server.configure(faults=[Fault("500", times=2)])
    backend = make_backend()
    with caplog.at_level(logging.WARNING, logger="skyeval.backends.openai"):
        results = run(backend, [chat(1), text(2)])
    assert all(r.ok for r in results.values())
    assert sorted(server.attempts().values()) == [3, 3]
    assert backend.describe()["stats"]["retries"] == 4
    assert sum("retry" in r.message for r in caplog.records) == 4

def test_hanging_request_times_out_and_retries(server, make_backend):
    server.configure(faults=[Fault("hang")])
    start = time.monotonic()
    results = run(make_backend(timeout_s=0.5), [chat(1)])
    assert results["c1", 0].ok
    assert 0.5 <= time.monotonic() - start < 30.0  # timed out (not hung), then retried
    assert [e["fault"] for e in server.log] == ["hang", None]

@pytest.mark.parametrize("mode", ["malformed", "drop"])
def test_malformed_json_and_dropped_connection_retried(server, make_backend, mode):
    server.configure(faults=[Fault(mode)])
    results = run(make_backend(), [chat(1), text(2)])
    assert all(r.ok for r in results.values())
    assert sorted(server.attempts().values()) == [2, 2]

def test_permanent_failures_become_error_results_then_heal(server, make_backend):
    server.configure(fail_fraction=0.3)
    backend = make_backend(max_retries=1)
    requests = [chat(i, samples=2) for i in range(20)]
    results = run(backend, requests, n=2)
    failed = {key for key, r in results.items() if not r.ok}
    assert 0 < len(failed) < len(results)  # some fail, the run goes on
    bad = results[next(iter(failed))]
    assert bad.error_type == "InternalServerError" and "permanent failure" in bad.error
    assert bad.generation is None
    server.heal()
    retry = [q for q in requests if (q.id, 0) in failed]
    assert all(r.ok for r in run(backend, retry, n=2).values())

def test_concurrency_bound_respected(server, make_backend):
    server.configure(latency=0.1)
    run(make_backend(concurrency=5, fan_out_n=True), [text(i, samples=4) for i in range(10)], n=4)
    assert server.max_in_flight == 5

def test_early_break_leaves_backend_usable(server, make_backend):
    server.configure(latency=0.05)
    backend = make_backend(concurrency=2)
    stream = backend.generate([text(i) for i in range(50)], SamplingParams())
    next(stream)
    stream.close()
    assert len(server.log) < 50
    assert run(backend, [chat(1)])["c1", 0].ok

def test_unsupported_parameter_dropped_once(server, make_backend):
    server.configure(reject_params=["temperature"])
    backend = make_backend(concurrency=1)
    results = run(backend, [chat(i) for i in range(3)])
    assert all(r.ok for r in results.values())
    assert [e["fault"] for e in server.log] == ["reject:temperature", None, None, None]
    assert backend.describe()["stats"]["dropped_params"] == ["temperature"]

def test_reasoning_model_params(server, make_backend):
    run(make_backend(model="o3-mini"), [chat(1)], temperature=0.5, max_tokens=99)
    params = server.log[0]["params"]
    assert "temperature" not in params and "top_p" not in params and "max_tokens" not in params
    assert params["max_completion_tokens"] == 99

def test_requests_per_minute_limit(server, make_backend):
    start = time.monotonic()
    run(make_backend(requests_per_minute=240), [text(i) for i in range(12)])  # 4/s, bursts of 4: ~2 s
    assert time.monotonic() - start >= 1.9
    # The arrival times the server recorded: a token bucket lets at most 4 + 4/s * T requests
    # through in any window of T seconds. `slack` absorbs delivery jitter (a request let
    # through earlier can arrive later), and is far below what a missing limiter sends: all
    # 12 at once, 8 at a time (the concurrency).
    arrivals = sorted(entry["t"] for entry in server.log)
    assert len(arrivals) == 12
    slack = 2
    for i, first in enumerate(arrivals):
        for j in range(i, len(arrivals)):
            assert j - i + 1 <= 4 + 4 * (arrivals[j] - first) + slack, (i, j, [round(t - arrivals[0], 3) for t in arrivals])

def test_key_never_in_describe(server, make_backend):
    backend = make_backend(api_key="sk-secret-123")
    run(backend, [chat(1)])
    assert "sk-secret-123" not in repr(backend.describe()) + repr(backend)

def test_missing_key_error_names_variable(server, monkeypatch):
    monkeypatch.delenv("SKYEVAL_TEST_KEY", raising=False)
    remote = HTTPConfig("m", api_url="https://api.example.com/v1", api_key_env="SKYEVAL_TEST_KEY")
    with pytest.raises(ValueError, match="SKYEVAL_TEST_KEY"):
        remote.build()
    HTTPConfig("m", server.url, "SKYEVAL_TEST_KEY").build().close()  # loopback: no key needed
    with pytest.raises(ConnectionError, match="cannot reach"):  # no key wanted; host unreachable offline
        HTTPConfig("m", remote.api_url, None).build()
    monkeypatch.setenv("SKYEVAL_TEST_KEY", "sk-from-env")
    assert read_api_key("SKYEVAL_TEST_KEY", remote.api_url) == "sk-from-env"
    backend = HTTPConfig("m", server.url, "SKYEVAL_TEST_KEY").build()
    assert backend._api_key == "sk-from-env" and "sk-from-env" not in repr(backend.describe())
    backend.close()

def test_yaml_config_instantiates(server):
    config = compose_model_config(CONF.stem, ["model_source=m", f"api_url={server.url}"])  # conf/model_config/openai.yaml
    assert isinstance(config, HTTPConfig) and config.api_key_env == "OPENAI_API_KEY"
    backend = config.build()
    try:
        assert run(backend, [chat(1)])["c1", 0].ok
    finally:
        backend.close()

def test_fault_server_subprocess_mode(tmp_path):
    """The server as other tests use it: READY line, JSON-lines log, healing, SIGTERM."""
    log_file = tmp_path / "requests.jsonl"
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("fault_server.py")), "--port", "0",
         "--fail-fraction", "1.0", "--fail-status", "503", "--log", str(log_file)],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        url = proc.stdout.readline().split()[1]
        backend = OpenAIBackend(HTTPConfig("m", url, max_retries=0))
        assert run(backend, [text(1)])["t1", 0].error_type == "InternalServerError"
        urllib.request.urlopen(urllib.request.Request(url.replace("/v1", "/admin/heal"), method="POST")).close()
        assert run(backend, [text(1)])["t1", 0].ok
        backend.close()
        assert [json.loads(line)["fault"] for line in log_file.read_text().splitlines()] == ["permanent", None]
    finally:
        proc.terminate()
        assert proc.wait(timeout=120) == 0  # a hang bound: the server stops in well under a second

# -- reasoning models: think tags, reasoning_content, truncation, usage ------------------

THINK = "<think>I add one to {number} carefully.</think> The answer is \\boxed{{{number}}}."

def test_think_tags_split_reasoning_from_answer(server, make_backend):
    server.configure(answer_template=THINK)
    results = run(make_backend(), [chat(1), text(2)])
    c1 = results["c1", 0]
    assert c1.reasoning == "I add one to 2 carefully." and c1.generation == "The answer is \\boxed{2}."
    assert c1.finish_reason == "stop"
    # no details from the server: the reasoning's share of the text's characters (25 of 49)
    # of the 10 completion tokens
    assert c1.usage == {"prompt_tokens": 4, "completion_tokens": 10, "reasoning_tokens": 5}
    assert results["t2", 0].reasoning == "I add one to 4 carefully."

def test_unclosed_think_is_all_reasoning_and_keeps_length(server, make_backend):
    server.configure(answer_template=THINK)
    results = run(make_backend(), [chat(1, samples=2)], n=2, max_tokens=4)
    for i in (0, 1):
        r = results["c1", i]
        assert r.ok and r.generation == "" and r.reasoning == "I add one to"
        assert r.finish_reason == "length"
        assert r.usage["completion_tokens"] == 4 and r.usage["reasoning_tokens"] == 4

def test_prefill_opening_the_block_counts_as_reasoning(server, make_backend):
    server.configure(answer_template="Let me see {number}")  # cut before any tag
    prefill = GenerationRequest("p", [{"role": "user", "content": "2+2?"},
                                      {"role": "assistant", "content": "<think>"}], [0])
    result = run(make_backend(), [prefill])["p", 0]
    assert result.generation == "" and result.reasoning == "Let me see 2"

def test_think_tags_off_and_custom(server, make_backend):
    server.configure(answer_template="[R]why {number}[/R] so {number}")
    off = run(make_backend(think_tags=None), [chat(1)])["c1", 0]
    assert off.generation == "[R]why 2[/R] so 2" and off.reasoning is None
    custom = run(make_backend(think_tags=["[R]", "[/R]"]), [chat(1)])["c1", 0]
    assert (custom.reasoning, custom.generation) == ("why 2", "so 2")

def test_reasoning_content_field_and_usage_details(server, make_backend):
    server.configure(reasoning_template="first {number} then more", answer_template="\\boxed{{{number}}}")
    results = run(make_backend(), [chat(1, samples=2)], n=2)
    for i in (0, 1):
        r = results["c1", i]
        assert (r.reasoning, r.generation) == ("first 2 then more", "\\boxed{2}")
        assert r.usage == {"prompt_tokens": 4 if i == 0 else 0, "completion_tokens": 5, "reasoning_tokens": 4,
                           "estimated": True}

def test_hidden_reasoning_tokens_of_o_series(server, make_backend):
    server.configure(hidden_reasoning_tokens=100)
    backend = make_backend(model="o3-mini")
    r = run(backend, [chat(1)], temperature=0.5, max_tokens=200)["c1", 0]
    assert r.reasoning is None and r.generation == "The answer is \\boxed{2}."
    assert r.usage == {"prompt_tokens": 4, "completion_tokens": 104, "reasoning_tokens": 100}
    info = backend.describe()
    # what was actually sent: temperature dropped, max_completion_tokens instead of max_tokens
    assert info["sampling_sent"] == {"max_completion_tokens": 200}
    assert info["engine_version"] == "fp_fault_server" and info["reasoning_model"] is True

def test_usage_shares_follow_text_length(server, make_backend):
    server.configure(answer_template="{index}")  # choice i answers i: lengths 1, 1, 2 ... words 1 each
    results = run(make_backend(), [chat(1, samples=3)], n=3)
    assert [results["c1", i].usage["completion_tokens"] for i in range(3)] == [1, 1, 1]
    server.configure(answer_template="<think>" + "w " * 9 + "</think>{index}")
    results = run(make_backend(), [chat(1, samples=2)], n=2)
    assert sum(r.usage["completion_tokens"] for r in results.values()) == 2 * 10  # shares sum to the total

# -- streaming, lifecycle, config -----------------------------------------------------

def test_requests_pulled_lazily_within_the_window(server, make_backend):
    """The backend takes requests from a generator and never runs ahead of the window
    (2 x concurrency jobs not yet consumed)."""
    server.configure(latency=0.01)
    pulled = consumed = 0
    ahead: list[int] = []

    def requests():
        nonlocal pulled
        for i in range(60):
            pulled += 1
            ahead.append(pulled - consumed)
            yield text(i)

    backend = make_backend(concurrency=2)
    first_at = None
    for _ in backend.generate(requests(), SamplingParams()):
        if first_at is None:
            first_at = pulled
        consumed += 1
    assert consumed == pulled == 60
    assert first_at <= 2 * 2 + 1
    assert max(ahead) <= 2 * 2 + 1

def test_close_stops_the_loop_thread(server, make_backend):
    import threading

    before = set(threading.enumerate())  # another test's backend (a cached reward's judge) may hold its own
    backend = make_backend()
    run(backend, [chat(1)])
    assert any(t.name.startswith("skyeval-openai") for t in set(threading.enumerate()) - before)
    backend.close()
    assert not [t.name for t in set(threading.enumerate()) - before if t.name.startswith("skyeval-openai")]
    assert run(backend, [chat(2)])["c2", 0].ok  # generate starts it again
    backend.close()
    assert not [t.name for t in set(threading.enumerate()) - before if t.name.startswith("skyeval-openai")]

def test_model_alias_and_api_key_used_never_written(server):
    config = HTTPConfig(model="gpt-4o-mini", api_url=server.url, api_key="sk-secret-xyz-123")
    assert config.model_source == config.model == "gpt-4o-mini"
    assert "sk-secret" not in repr(config)
    backend = config.build(ScalingConfig(concurrency=2))
    try:
        assert run(backend, [chat(1)])["c1", 0].ok
        assert backend._api_key == "sk-secret-xyz-123"
        assert "sk-secret" not in repr(backend.describe()) + repr(backend)
        assert backend.describe()["concurrency"] == 2
    finally:
        backend.close()
    with pytest.raises(ConfigError, match="differ"):
        HTTPConfig(model="a", model_source="b")
    with pytest.raises(ConfigError, match="model_source"):
        HTTPConfig(api_url=server.url)


def test_n_choices_count_the_prompt_once_and_label_split_completions(server, make_backend):
    """Issue 25 item 8: one request with n=4 choices sends its prompt once; the cost says so,
    and per-sample completion tokens (shares of the request's total) are labelled estimates."""
    from skyeval.metrics import summarize
    from skyeval.run.cost import run_cost

    results = run(make_backend(), [chat(1, samples=4), chat(2, samples=4)], n=4)
    assert sum(r.usage["prompt_tokens"] for r in results.values()) == 2 * 4  # 4 prompt tokens per request
    assert all(r.usage["estimated"] for r in results.values())
    metrics = summarize([{"id": r.id, "sample_idx": r.sample_idx, "score": 1.0, "usage": r.usage,
                          "finish_reason": r.finish_reason} for r in results.values()], n=4)
    assert metrics["tokens"]["prompt"]["total"] == 8 and metrics["tokens"]["estimated_samples"] == 8
    cost = run_cost({"metrics": metrics}, {"input": 1e6, "output": 0.0})
    assert cost["prompt_tokens"] == 8 and cost["cost"] == 8.0
    single = run(make_backend(), [chat(1)])["c1", 0]
    assert "estimated" not in single.usage and single.usage["prompt_tokens"] == 4
    assert "estimated_samples" not in summarize([{"id": "c1", "sample_idx": 0, "score": 1.0, "usage": single.usage,
                                                  "finish_reason": "stop"}], n=1)["tokens"]
