"""A scripted model and a scripted judge: real OpenAI-compatible servers on 127.0.0.1
(`tests/backends/fault_server.py`) answering from tables; Omni-MATH's hub-shaped fixture
(tests/fixtures/omni_math.jsonl) as a local data folder."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.backends.fault_server import FaultServer

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "omni_math.jsonl"

# Per problem of the fixture (by a phrase of its question): boxed right, boxed wrong, prose only.
ANSWERS = {
    "remainder when": "Since 2^3 = 8 = 1 mod 7, the remainder is \\boxed{2}.",             # gold 2: right
    "distinct books": "There are 120 - 24 arrangements, so \\boxed{48}.",                   # gold 72: wrong
    "Find all real": "Both roots of the quadratic work: two and three.",                    # gold 2, 3: prose
    "hypotenuse": "By Pythagoras it is \\boxed{\\sqrt{5}}.",                               # right
    "Two fair dice": "It is one chance in six.",                                            # gold 1/6: prose
    "minimum value": "By AM-GM the minimum is \\boxed{1}.",                                 # gold 2: wrong
}
PROSE = ("Both roots of the quadratic work: two and three.", "It is one chance in six.")
EQUIVALENT = "The candidate states the same answer.\nVerdict: equivalent"


@pytest.fixture
def omni_data(tmp_path: Path) -> Path:
    """A data folder holding the 6-problem Omni-MATH fixture where the env looks for it."""
    folder = tmp_path / "data"
    (folder / "omni_math").mkdir(parents=True)
    shutil.copy(FIXTURE, folder / "omni_math" / "test.jsonl")
    return folder


@pytest.fixture
def model():
    """The model under evaluation: answers each problem from `ANSWERS`."""
    with FaultServer(answer_table=dict(ANSWERS)) as server:
        yield server


@pytest.fixture
def judge():
    """The judge: `Verdict: equivalent` to everything (reconfigure for other replies)."""
    with FaultServer(answer_template=EQUIVALENT) as server:
        yield server


def judge_prompts(server: FaultServer) -> list[str]:
    """The user message of every request the judge received."""
    return [entry["messages"][-1]["content"] for entry in server.log]


def candidate(prompt: str) -> str:
    """What a judge prompt quotes as the candidate answer."""
    return prompt.split("<candidate>\n", 1)[1].split("\n</candidate>", 1)[0]
