"""`model_config=openai_batch` against a real HTTP server on loopback speaking the Batch and
Files APIs through the openai SDK (tests/backends/batch_server.py): files, batches and their
status changes, output in another order, failed lines, expiry, cancel, resume after Ctrl-C."""

from __future__ import annotations

import _thread
import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from skyeval.backends.base import GenerationRequest, SamplingParams
from skyeval.backends.openai_batch import OpenAIBatchBackend, OpenAIBatchConfig, custom_id, parse_custom_id
from skyeval.errors import ConfigError
from tests.backends.batch_server import BatchServer
from tests.backends.fault_server import _digest, _fraction
from tests.conftest import load_summary, read_jsonl

HANG_S = 120.0  # bound on waits that take well under a second


@pytest.fixture
def server():
    with BatchServer() as s:
        yield s


@pytest.fixture(scope="module")
def gsm8k_table(data_dir) -> dict[str, str]:
    """The first 60 GSM8K test questions, each answered with its gold (a model that is always right)."""
    rows = [json.loads(line) for line in (data_dir / "gsm8k" / "test.jsonl").read_text().splitlines()[:60]]
    return {r["question"]: "The answer is \\boxed{%s}." % r["answer"].split("####")[-1].strip().replace(",", "")
            for r in rows}


def backend(server: BatchServer, tmp_path: Path, recorded: bool = True, **fields) -> OpenAIBatchBackend:
    config = OpenAIBatchConfig(model="gpt-4o-mini", api_url=server.url, api_key_env=None, poll_interval_s=0.02,
                               max_retries=1, **fields)
    made = config.build()
    if recorded:  # as the pipeline does: results are recorded as they are taken
        made.use_state_dir(tmp_path / "batches")
    return made


def chat(count: int, n: int = 1, start: int = 0) -> list[GenerationRequest]:
    return [GenerationRequest(id=f"p{i}", prompt=[{"role": "user", "content": f"What is {i}?"}],
                              sample_indices=list(range(n))) for i in range(start, start + count)]


def state(tmp_path: Path) -> dict:
    return json.loads((tmp_path / "batches" / "state.json").read_text())


@contextlib.contextmanager
def ctrl_c_when(condition):
    """Ctrl-C in this (the main) thread once `condition()` holds (or HANG_S passed: then the
    test fails on what it finds); the block must end in KeyboardInterrupt."""
    stop = threading.Event()

    def watch() -> None:
        deadline = time.monotonic() + HANG_S
        while not stop.wait(0.01):
            if condition() or time.monotonic() > deadline:
                _thread.interrupt_main()
                return

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            yield
    finally:
        stop.set()
        thread.join(HANG_S)


def has_batch(folder: Path) -> bool:
    """Whether the batch state in `folder` (a test's, or a run folder) has a batch id."""
    path = folder / "batches" / "state.json"
    path = path if path.exists() else folder / "batches" / "run" / "state.json"
    return path.exists() and any(p.get("batch_id") for p in json.loads(path.read_text())["parts"])


# ---- the round trip ------------------------------------------------------------------------------
def test_every_sample_comes_back_through_files_and_batches_only(server, tmp_path):
    made = backend(server, tmp_path, max_requests_per_batch=7)
    requests = chat(20, n=2) + [GenerationRequest(id=f"t{i}", prompt=f"Text {i}", sample_indices=[0]) for i in range(3)]
    results = list(made.generate(iter(requests), SamplingParams(n=2, seed=5)))
    assert sorted((r.id, r.sample_idx) for r in results) == sorted(
        [(f"p{i}", j) for i in range(20) for j in range(2)] + [(f"t{i}", 0) for i in range(3)])
    by_key = {(r.id, r.sample_idx): r for r in results}
    assert all(r.ok and r.finish_reason == "stop" for r in results)
    assert by_key[("p7", 1)].generation == "The answer is \\boxed{7}." and by_key[("p7", 1)].seed == 5
    assert by_key[("p7", 0)].usage["prompt_tokens"] == 3 and by_key[("p7", 1)].usage["prompt_tokens"] == 0
    assert by_key[("t2", 0)].generation == "The answer is \\boxed{2}."
    # 20 chat lines in files of at most 7 (7, 7, 6), the 3 text lines in one of their own
    assert server.count("POST", "/v1/files") == server.count("POST", "/v1/batches") == 4
    assert server.count("POST", "/v1/chat/completions") == server.count("POST", "/v1/completions") == 0
    uploads = [f for f in server.files.values() if f["purpose"] == "batch"]
    assert len(uploads) == 4 and all(f["filename"].startswith("skyeval-") for f in uploads)
    parts = state(tmp_path)["parts"]
    assert [p["requests"] for p in parts] == [7, 7, 6, 3]
    assert all(p["file_id"] and p["batch_id"] and p["status"] == "completed" for p in parts)
    line = json.loads((tmp_path / "batches" / "00001.input.jsonl").read_text().splitlines()[0])
    assert line["method"] == "POST" and line["url"] == "/v1/chat/completions" and line["custom_id"] == "p0#0-1"
    assert line["body"]["model"] == "gpt-4o-mini" and line["body"]["n"] == 2 and line["body"]["seed"] == 5
    # the API promises no order: the output file came back shuffled, and every line found its sample
    inputs = [json.loads(x)["custom_id"] for x in (tmp_path / "batches" / "00001.input.jsonl").read_text().splitlines()]
    outputs = [json.loads(x)["custom_id"] for x in (tmp_path / "batches" / "00001.output.jsonl").read_text().splitlines()]
    assert sorted(outputs) == sorted(inputs) and outputs != inputs
    described = made.describe()
    assert described["backend"] == "openai_batch" and described["batch_counts"]["requests"] == 23
    assert [b["batch_id"] for b in described["batches"]] == [p["batch_id"] for p in parts]
    assert all(b["created_at"] and b["completed_at"] and b["request_counts"]["completed"] == b["requests"]
               for b in described["batches"])
    made.close()


def test_custom_ids_name_the_problem_and_its_samples():
    for indices in ([0], [0, 1, 2, 3], [1, 3], [0, 1, 5, 6, 7, 9]):
        assert parse_custom_id(custom_id("gsm8k#12", indices)) == ("gsm8k#12", indices)
    assert parse_custom_id("request-1") is None and parse_custom_id("x#a-b") is None


def test_failed_lines_are_failed_samples_with_their_reasons(server, tmp_path):
    server.configure(fail_fraction=0.3, fail_status=500)
    server.configure_batch(error_match="What is 13?")
    requests = chat(20)
    results = {r.id: r for r in backend(server, tmp_path).generate(iter(requests), SamplingParams())}
    failing = {r.id for r in requests if _fraction(_digest(r.prompt)) < 0.3} - {"p13"}
    assert failing and {k for k, r in results.items() if not r.ok} == failing | {"p13"}
    assert all(results[k].error_type == "InternalServerError" and "status 500" in results[k].error for k in failing)
    assert results["p13"].error_type == "request_timeout" and "timed out" in results["p13"].error
    assert all(r.generation == f"The answer is \\boxed{{{k[1:]}}}." for k, r in results.items() if r.ok)


def test_a_parameter_the_model_rejects_fails_its_lines_with_the_message(server, tmp_path):
    server.configure(reject_params=["top_k"])
    results = list(backend(server, tmp_path).generate(iter(chat(3)), SamplingParams(top_k=5)))
    assert all(r.error_type == "BadRequestError" and "Unsupported parameter: 'top_k'" in r.error for r in results)


def test_choices_a_server_does_not_return_fail_and_fan_out_sends_one_line_per_sample(server, tmp_path):
    server.configure(ignore_n=True)
    results = {(r.id, r.sample_idx): r for r in backend(server, tmp_path).generate(iter(chat(2, n=3)),
                                                                                    SamplingParams(n=3))}
    assert [k for k, r in sorted(results.items()) if r.ok] == [("p0", 0), ("p1", 0)]
    assert results[("p0", 2)].error_type == "MissingChoices" and "fan_out_n=true" in results[("p0", 2)].error
    fanned = list(backend(server, tmp_path / "fan", fan_out_n=True).generate(iter(chat(2, n=3)), SamplingParams(n=3)))
    assert len(fanned) == 6 and all(r.ok for r in fanned)
    assert sorted({r.seed for r in fanned}) == [0, 1, 2]  # each sample its own seed, as the openai backend


def test_expired_batches_are_reported_and_what_they_left_goes_in_a_new_batch(server, tmp_path, caplog):
    server.configure_batch(expire_after=4)
    made = backend(server, tmp_path)
    with caplog.at_level(logging.WARNING, "skyeval"):
        results = list(made.generate(iter(chat(10)), SamplingParams()))
    assert sorted(r.id for r in results) == sorted(f"p{i}" for i in range(10)) and all(r.ok for r in results)
    parts = state(tmp_path)["parts"]  # 10 -> 4 answered, 6 sent again -> 4 answered, 2 again -> done
    assert [(p["status"], p["requests"], p["resent"]) for p in parts] == [("expired", 10, 6), ("expired", 6, 2),
                                                                          ("completed", 2, 0)]
    assert "expired before answering 6 requests" in caplog.text
    answered = [a["custom_id"] for b in server.batches.values() for a in b.answers if a["response"]]
    assert sorted(answered) == sorted(f"p{i}#0" for i in range(10))  # each request answered (and billed) once


def test_ctrl_c_cancels_when_asked_and_the_same_call_resends_what_was_not_answered(server, tmp_path, caplog):
    server.configure_batch(request_s=0.05)
    made = backend(server, tmp_path, cancel_on_interrupt=True)

    def answered_some() -> bool:
        return any(b.obj["request_counts"]["completed"] >= 3 for b in list(server.batches.values()))

    with ctrl_c_when(answered_some), caplog.at_level(logging.WARNING, "skyeval"):
        list(made.generate(iter(chat(20)), SamplingParams()))
    assert server.count("POST", "/v1/batches/") == 1 and "cancelling 1 batches" in caplog.text
    assert state(tmp_path)["parts"][0]["cancel_requested"]
    again = backend(server, tmp_path)
    results = list(again.generate(iter(chat(20)), SamplingParams()))
    assert sorted(r.id for r in results) == sorted(f"p{i}" for i in range(20)) and all(r.ok for r in results)
    parts = state(tmp_path)["parts"]
    assert parts[0]["status"] == "cancelled" and parts[0]["resent"] == 20 - parts[0]["request_counts"]["completed"]
    assert len(parts) == 2 and server.count("POST", "/v1/files") == 2
    answered = [a["custom_id"] for b in server.batches.values() for a in b.answers if a["response"]]
    assert sorted(answered) == sorted(f"p{i}#0" for i in range(20))


def test_ctrl_c_after_submission_then_the_same_call_uploads_and_submits_nothing_new(server, tmp_path, caplog):
    server.configure_batch(hold=True)
    first = backend(server, tmp_path)
    with ctrl_c_when(lambda: has_batch(tmp_path)), caplog.at_level(logging.WARNING, "skyeval"):
        list(first.generate(iter(chat(8, n=2)), SamplingParams(n=2)))
    assert "1 batches keep running on the server" in caplog.text
    assert server.count("POST", "/v1/batches/") == 0  # not cancelled: leaving it is the default
    server.release()
    again = backend(server, tmp_path)
    results = list(again.generate(iter(chat(8, n=2)), SamplingParams(n=2)))
    assert len(results) == 16 and all(r.ok for r in results)
    assert server.count("POST", "/v1/files") == server.count("POST", "/v1/batches") == 1
    assert again.stats["picked_up"] == 16 and again.stats["uploads"] == 0


@pytest.mark.parametrize("lost", ["batch id", "file id and batch id"])
def test_ids_lost_in_a_crash_are_found_on_the_server_not_made_again(server, tmp_path, lost):
    server.configure_batch(hold=True)
    with ctrl_c_when(lambda: has_batch(tmp_path)):
        list(backend(server, tmp_path).generate(iter(chat(5)), SamplingParams()))
    saved = state(tmp_path)  # as if killed between the call and the write of its id
    part = saved["parts"][0]
    part.update(batch_id=None, status="uploaded")
    if lost == "file id and batch id":
        part.update(file_id=None, status="ready")
    (tmp_path / "batches" / "state.json").write_text(json.dumps(saved))
    server.release()
    results = list(backend(server, tmp_path).generate(iter(chat(5)), SamplingParams()))
    assert len(results) == 5 and all(r.ok for r in results)
    assert server.count("POST", "/v1/files") == server.count("POST", "/v1/batches") == 1
    assert state(tmp_path)["parts"][0]["batch_id"] == next(iter(server.batches))


def test_a_sample_whose_line_is_lost_from_the_local_file_fails_instead_of_waiting(server, tmp_path):
    server.configure_batch(hold=True)
    with ctrl_c_when(lambda: has_batch(tmp_path)):
        list(backend(server, tmp_path).generate(iter(chat(3)), SamplingParams()))
    path = tmp_path / "batches" / "00001.input.jsonl"
    lines = path.read_text().splitlines()
    server.release()

    def source():  # read once the earlier lines are indexed: then the file loses its last line
        yield from chat(3)
        path.write_text("\n".join(lines[:2]) + "\n")

    results = {r.id: r for r in backend(server, tmp_path).generate(source(), SamplingParams())}
    assert results["p2"].error_type == "MissingBatchLine" and results["p0"].ok and results["p1"].ok


def test_answers_on_disk_are_not_fetched_again_and_a_taken_sample_asked_again_is_sent_again(server, tmp_path):
    first = backend(server, tmp_path)
    stream = first.generate(iter(chat(10)), SamplingParams())
    taken = [next(stream) for _ in range(4)]
    stream.close()  # the caller stopped (Ctrl-C while recording): 4 results recorded, 6 not
    assert server.count("GET", "/v1/files/") == 1
    rest = [r for r in chat(10) if r.id not in {t.id for t in taken}]
    again = backend(server, tmp_path)
    results = list(again.generate(iter(rest), SamplingParams()))
    assert sorted(r.id for r in results) == sorted(r.id for r in rest) and all(r.ok for r in results)
    assert server.count("GET", "/v1/files/") == 1 and server.count("POST", "/v1/batches") == 1
    # a sample whose result was handed over is asked for again (retry_failures, a lost record): a new batch
    retried = list(backend(server, tmp_path).generate(iter([r for r in chat(10) if r.id == taken[0].id]),
                                                      SamplingParams()))
    assert [r.id for r in retried] == [taken[0].id] and server.count("POST", "/v1/batches") == 2


def test_a_changed_request_is_never_answered_from_an_earlier_batch(server, tmp_path):
    server.configure_batch(hold=True)
    with ctrl_c_when(lambda: has_batch(tmp_path)):
        list(backend(server, tmp_path).generate(iter(chat(4)), SamplingParams(temperature=0.0)))
    server.configure_batch(hold=False)  # later batches run; the first one stays held
    results = list(backend(server, tmp_path).generate(iter(chat(4)), SamplingParams(temperature=0.7)))
    assert len(results) == 4 and all(r.ok for r in results)
    assert server.count("POST", "/v1/batches") == 2  # the held batch of temperature 0 was not waited for
    second = json.loads((tmp_path / "batches" / "00002.input.jsonl").read_text().splitlines()[0])
    assert second["body"]["temperature"] == 0.7


def test_at_most_max_in_flight_samples_wait(server, tmp_path):
    pulled = []

    def source():
        for request in chat(30):
            pulled.append(request.id)
            yield request

    stream = backend(server, tmp_path, max_in_flight=6).generate(source(), SamplingParams())
    first = next(stream)
    assert first.ok and len(pulled) <= 6
    assert 1 + sum(1 for _ in stream) == 30 and server.count("POST", "/v1/batches") == 5


def test_a_full_queue_refusal_waits_for_a_running_batch_else_fails_clearly(server, tmp_path):
    server.configure_batch(max_enqueued_requests=5, request_s=0.02)
    results = list(backend(server, tmp_path, max_requests_per_batch=5).generate(iter(chat(10)), SamplingParams()))
    assert sorted(r.id for r in results) == sorted(f"p{i}" for i in range(10)) and all(r.ok for r in results)
    statuses = [p["status"] for p in state(tmp_path)["parts"]]
    assert "failed" in statuses and statuses.count("completed") == 2
    server.configure_batch(max_enqueued_requests=3)
    alone = list(backend(server, tmp_path / "alone", max_requests_per_batch=5).generate(iter(chat(4)), SamplingParams()))
    assert all(r.error_type == "BatchFailed" and "token_limit_exceeded" in r.error
               and "max_requests_per_batch" in r.error for r in alone)


def test_a_request_larger_than_a_batch_file_fails_alone(server, tmp_path):
    big = GenerationRequest(id="big", prompt=[{"role": "user", "content": "x" * 400}], sample_indices=[0])
    results = {r.id: r for r in backend(server, tmp_path, max_bytes_per_batch=300).generate(
        iter([big, *chat(2)]), SamplingParams())}
    assert results["big"].error_type == "RequestTooLarge" and results["p1"].ok


# ---- config and cost -----------------------------------------------------------------------------
def test_config_composes_and_refuses_what_does_not_apply():
    from skyeval.config import compose

    config = compose("+env=gsm8k", "model_config=openai_batch", "model_config.model_source=gpt-4o-mini",
                     "+model_config.price={input: 0.15, output: 0.6}")
    model = config.model_config
    assert isinstance(model, OpenAIBatchConfig) and model.completion_window == "24h"
    assert (model.max_requests_per_batch, model.max_bytes_per_batch, model.cancel_on_interrupt) == (50_000, 200_000_000,
                                                                                                    False)
    assert model.billed_price == {"input": 0.075, "output": 0.3}  # half the listed price
    assert OpenAIBatchConfig(model="m", price={"input": 1, "output": 2},
                             batch_price={"input": 0.4, "output": 0.9}).billed_price == {"input": 0.4, "output": 0.9}
    for bad in ({"requests_per_minute": 10}, {"poll_interval_s": 0}, {"max_in_flight": 0},
                {"batch_price": {"input": 1}}):
        with pytest.raises(ConfigError):
            OpenAIBatchConfig(model="m", **bad)


def test_dry_run_and_run_cost_use_the_batch_price(data_dir):
    from skyeval.config import compose
    from skyeval.run.app import build_env
    from skyeval.run.cost import estimate

    config = compose("+env=gsm8k", "env.limit=3", "model_config=openai_batch", "model_config.model_source=gpt-4o-mini",
                     "+model_config.price={input: 2.0, output: 8.0}")
    env = build_env(config)
    report = estimate(env, env.iter_problems(), config.sampling_params, config.model_config)
    assert report["price"] == {"input": 1.0, "output": 4.0}
    listed = (report["prompt_tokens_sent"] * 2.0 + report["max_completion_tokens"] * 8.0) / 1e6
    assert report["worst_case_cost"] == pytest.approx(listed / 2)


# ---- everywhere a backend goes -------------------------------------------------------------------
def run_config(server: BatchServer, *extra: str):
    from skyeval.config import compose

    return compose("+env=gsm8k", "model_config=openai_batch", "model_config.model_source=gpt-4o-mini",
                   f"model_config.api_url={server.url}", "model_config.api_key_env=null",
                   "model_config.poll_interval_s=0.02", *extra)


def test_retry_failures_sends_the_failed_lines_again_in_a_new_batch(data_dir, gsm8k_table, tmp_path):
    from skyeval.run.app import execute

    with BatchServer(answer_table=gsm8k_table, fail_fraction=0.3) as server:
        run_dir = tmp_path / "run"
        summary = execute(run_config(server, "env.limit=12"), run_dir)
        failed = {(f["id"], f["sample_idx"]) for f in read_jsonl(run_dir / "failures")}
        assert failed and summary["counts"]["failed"] == len(failed) and summary["status"] == "complete_with_failures"
        assert all(f["error_type"] == "InternalServerError" for f in read_jsonl(run_dir / "failures"))
        server.heal()
        summary = execute(run_config(server, "env.limit=12", "retry_failures=true"), run_dir)
        assert summary["status"] == "complete" and summary["metrics"]["accuracy"] == 1.0
        assert server.count("POST", "/v1/batches") == 2
        resent = [json.loads(x)["custom_id"] for x in (run_dir / "batches/run/00002.input.jsonl").read_text().splitlines()]
        assert sorted(parse_custom_id(c) for c in resent) == sorted((pid, [i]) for pid, i in failed)
        assert [b["batch_id"] for b in summary["backend"]["batches"]] == list(server.batches)


def test_scores_stream_in_as_each_batch_ends(data_dir, gsm8k_table, tmp_path):
    from skyeval.run.app import execute

    with BatchServer(answer_table=gsm8k_table, batch={"hold": True}) as server:
        run_dir = tmp_path / "run"
        done: dict = {}
        thread = threading.Thread(target=lambda: done.update(summary=execute(
            run_config(server, "env.limit=10", "model_config.max_requests_per_batch=5"), run_dir)))
        thread.start()
        deadline = time.monotonic() + HANG_S
        while len(server.batches) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        first, second = list(server.batches)
        server.release(first)
        while len(read_jsonl(run_dir / "scores")) < 5 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(read_jsonl(run_dir / "scores")) == 5  # scored while the second batch is still held
        assert server.batches[second].obj["status"] == "validating"
        server.release()
        thread.join(HANG_S)
        assert done["summary"]["counts"]["scored"] == 10 and done["summary"]["metrics"]["accuracy"] == 1.0


def test_rejection_sampling_with_n_samples_per_request(data_dir, gsm8k_table, tmp_path):
    from skyeval.run.app import execute

    with BatchServer(answer_table=gsm8k_table) as server:
        summary = execute(run_config(server, "+experiment=numina_rejection_sampling", "env=gsm8k",
                                     "env._target_=skyeval.curation.rejection.GSM8KRejectionEnv", "env.limit=4"),
                          tmp_path / "run")
        assert summary["counts"]["scored"] == 32 and summary["metrics"]["accuracy"] == 1.0  # n=8 from the experiment
        assert server.count("POST", "/v1/batches") == 1
        lines = (tmp_path / "run/batches/run/00001.input.jsonl").read_text().splitlines()
        assert len(lines) == 4 and all(json.loads(x)["body"]["n"] == 8 for x in lines)
        assert all("keep" in r and r["correctness"] == 1.0 for r in read_jsonl(tmp_path / "run" / "scores"))


def test_each_shard_submits_its_own_batches(data_dir, gsm8k_table, tmp_path):
    from skyeval.run.app import execute

    with BatchServer(answer_table=gsm8k_table) as server:
        run_dir = tmp_path / "run"
        for index in (0, 1):
            summary = execute(run_config(server, "env.limit=10", f"shard.index={index}", "shard.count=2",
                                         "+model_config.price={input: 2.0, output: 4.0}"), run_dir)
        assert summary["counts"]["scored"] == 10 and summary["metrics"]["accuracy"] == 1.0
        assert server.count("POST", "/v1/batches") == 2
        merged = load_summary(run_dir)  # written by the last shard: both shards' batches, at the batch price
        assert sorted(b["batch_id"] for b in merged["backend"]["batches"]) == sorted(server.batches)
        assert merged["backend"]["batch_counts"]["requests"] == 10 and merged["cost"]["price"] == {"input": 1.0,
                                                                                                   "output": 2.0}
        ids = [{parse_custom_id(json.loads(x)["custom_id"])[0]
                for x in (run_dir / f"batches/shard-0000{i}-of-00002/00001.input.jsonl").read_text().splitlines()}
               for i in (0, 1)]
        assert ids[0].isdisjoint(ids[1]) and len(ids[0] | ids[1]) == 10


def test_difficulty_labels_and_rewrites_go_through_batches_and_a_rerun_reuses_the_answers(server, tmp_path):
    from skyeval.curation import label_difficulty, rewrite

    server.configure(answer_template="Two steps of arithmetic.\nDifficulty: {number}")
    config = OpenAIBatchConfig(model="gpt-4o-mini", api_url=server.url, api_key_env=None, poll_interval_s=0.02,
                               state_dir=str(tmp_path / "difficulty.batches"))
    problems = [{"id": f"q{i}", "question": f"Add 1 and {i}."} for i in (2, 3, 4)]
    result = label_difficulty(problems, config)
    assert sorted((r["id"], r["difficulty"]) for r in result.labeled) == [("q2", 2), ("q3", 3), ("q4", 4)]
    again = label_difficulty(problems, config)  # the same command again: answers read from disk, nothing sent
    assert [r["difficulty"] for r in again.labeled] == [r["difficulty"] for r in result.labeled]
    assert server.count("POST", "/v1/batches") == 1
    server.configure(answer_template="Cleaner: the answer is \\boxed{{{number}}}.")
    rows = [{"id": "q1", "sample_idx": 0, "question": "What is 6?", "generation": "hmm... \\boxed{6}", "expected": "6"}]
    from skyeval.envs.registry import SkyEnvBuilder

    out = rewrite(rows, config, SkyEnvBuilder.build("gsm8k").score_item)
    assert [r["generation"] for r in out.kept] == ["Cleaner: the answer is \\boxed{6}."]


def test_curate_keeps_batches_beside_its_output(tmp_path):
    from tests.curation.test_model_configs import _curate

    curate = _curate()
    args = curate._parser().parse_args(["difficulty", "run", "--model", "openai_batch", "--set=model_source=m"])
    config = curate._model_config(args, tmp_path / "curated" / "difficulty.jsonl")
    assert config.state_dir == str(tmp_path / "curated" / "difficulty.batches")


def test_status_says_where_each_shards_batches_stand_and_refuses_bad_input(server, tmp_path, capsys):
    from skyeval.run.status import main

    made = backend(server, tmp_path / "run")  # a folder laid out as a sharded run's
    made.use_state_dir(tmp_path / "run" / "batches" / "shard-00001-of-00002")
    list(made.generate(iter(chat(3)), SamplingParams()))
    (tmp_path / "run" / "config.yaml").write_text("stage: evaluate\n")
    assert main([f"run_dir={tmp_path / 'run'}"]) == 0
    out = capsys.readouterr().out
    assert "no summary.json yet" in out and "batch shard-00001-of-00002: batch_" in out and "completed, 3/3 done" in out
    with pytest.raises(ConfigError, match="not a run folder"):
        main([f"run_dir={tmp_path}"])
    with pytest.raises(ConfigError, match="run_dir=PATH"):
        main(["refresh=true"])


# ---- the CLI, as users run it --------------------------------------------------------------------
def cli_args(url: str, results: Path, *extra: str) -> list[str]:
    return ["evaluate", "+env=gsm8k", "env.limit=40", "model_config=openai_batch",
            "model_config.model_source=gpt-4o-mini", f"model_config.api_url={url}", "model_config.api_key_env=null",
            "model_config.poll_interval_s=0.05", "+model_config.price={input: 0.15, output: 0.6}",
            f"logging.results_dir={results}", "logging.experiment_name=run", *extra]


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "skyeval.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600)


def test_forty_gsm8k_problems_score_one_without_a_chat_completions_call(data_dir, gsm8k_table, tmp_path):
    with BatchServer(answer_table=gsm8k_table, batch={"request_s": 0.002}) as server:
        done = cli(*cli_args(server.url, tmp_path / "out"), cwd=tmp_path)
        assert done.returncode == 0, done.stderr[-3000:]
        run_dir = tmp_path / "out" / "run"
        summary = load_summary(run_dir)
        assert summary["metrics"]["accuracy"] == 1.0 and summary["counts"]["scored"] == 40
        assert server.count("POST", "/v1/chat/completions") == 0 and server.count("POST", "/v1/completions") == 0
        (batch,) = summary["backend"]["batches"]
        assert batch["batch_id"] in server.batches and batch["request_counts"] == {"total": 40, "completed": 40,
                                                                                    "failed": 0}
        assert batch["created_at"] and batch["completed_at"] and batch["input_file_id"] and batch["output_file_id"]
        assert batch["usage"]["input_tokens"] == summary["cost"]["prompt_tokens"]  # the API's count, and ours
        assert summary["cost"]["price"] == {"input": 0.075, "output": 0.3}  # the batch price: half the listed one
        status = cli("status", f"run_dir={run_dir}", cwd=tmp_path)
        assert status.returncode == 0 and f"batch {batch['batch_id']} (part 00001, 40 requests): completed" \
            in status.stdout and "complete: gsm8k" in status.stdout


def test_ctrl_c_after_submission_then_the_same_command_finishes_without_a_second_upload_or_batch(
        data_dir, gsm8k_table, tmp_path):
    with BatchServer(answer_table=gsm8k_table, batch={"hold": True}) as server:
        args = cli_args(server.url, tmp_path / "out")
        proc = subprocess.Popen([sys.executable, "-m", "skyeval.cli", *args], cwd=tmp_path, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        results = tmp_path / "out"
        deadline = time.monotonic() + HANG_S
        while not has_batch(results / "run"):
            assert time.monotonic() < deadline and proc.poll() is None, "no batch was submitted"
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)
        _, stderr = proc.communicate(timeout=600)
        assert proc.returncode == 130 and "keep running on the server" in stderr and "Traceback" not in stderr
        assert json.loads((results / "run/batches/run/state.json").read_text())["parts"][0]["status"] == "validating"
        server.release()
        live = cli("status", f"run_dir={tmp_path / 'out' / 'run'}", "refresh=true", cwd=tmp_path)
        assert "(part 00001, 40 requests): completed, 40/40 done" in live.stdout, live.stderr
        done = cli(*args, cwd=tmp_path)
        assert done.returncode == 0, done.stderr[-3000:]
        summary = load_summary(tmp_path / "out" / "run")
        assert summary["metrics"]["accuracy"] == 1.0 and summary["counts"]["scored"] == 40
        assert server.count("POST", "/v1/files") == server.count("POST", "/v1/batches") == 1
        assert server.count("GET", "/v1/files/") == 1 and summary["backend"]["stats"]["picked_up"] == 40
        assert server.count("POST", "/v1/chat/completions") == 0


def test_a_sweep_submits_batches_per_run(data_dir, gsm8k_table, tmp_path):
    with BatchServer(answer_table=gsm8k_table) as server:
        args = [a for a in cli_args(server.url, tmp_path / "out") if not a.startswith("logging.experiment_name")]
        done = cli(*args, "-m", "sampling_params.seed=1,2", "env.limit=3",
                   "logging.experiment_name=run_${sampling_params.seed}", cwd=tmp_path)
        assert done.returncode == 0, done.stderr[-3000:]
        runs = sorted((tmp_path / "out").glob("run_*"))
        assert len(runs) == 2 and server.count("POST", "/v1/batches") == 2
        assert [load_summary(r)["metrics"]["accuracy"] for r in runs] == [1.0, 1.0]
        assert {load_summary(r)["backend"]["batches"][0]["batch_id"] for r in runs} == set(server.batches)
