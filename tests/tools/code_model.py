"""A loopback model that answers only through code, for the turn loop's tests and bench.

`CodeModel(answers, failing)` is a `FaultServer` responder (tests/backends/fault_server.py):
it finds which question a conversation is about (a key of `answers`), and

- before any output block: writes a program that computes the answer (for a question in
  `failing`, a first program that raises NameError), then, as a model would, an output
  block of its own (a made-up 0) that a tool loop's stop string cuts;
- after an output block holding an error: writes the fixed program;
- after an output block: answers `\\boxed{<what the program printed>}`.

Without a tool loop its reply is only the program: no answer. `program` may be replaced
(e.g. a program that sleeps) per question through `programs`.
"""

from __future__ import annotations

import re
from typing import Any

OUTPUT = re.compile(r"```output\n(.*?)\n```", re.S)


class CodeModel:
    def __init__(self, answers: dict[str, str], failing: frozenset[str] | set[str] = frozenset(),
                 programs: dict[str, str] | None = None) -> None:
        self.answers, self.failing, self.programs = answers, set(failing), dict(programs or {})

    def __call__(self, body: dict[str, Any]) -> str:
        text = conversation(body)
        question = next((q for q in self.answers if q in text), None)
        if question is None:
            return "I cannot tell which question this is."
        outputs = OUTPUT.findall(text)
        program = self.programs.get(question, f"answer = {self.answers[question]}\nprint(answer)")
        if not outputs:
            if question in self.failing:
                program = "print(answr)"
            return f"Let me compute it.\n```python\n{program}\n```\n```output\n0\n```\n"
        if "Error" in outputs[-1]:
            return f"There is a typo; again:\n```python\n{program}\n```"
        return f"The program printed {outputs[-1].strip()}, so the answer is \\boxed{{{outputs[-1].strip()}}}."


def conversation(body: dict[str, Any]) -> str:
    """Everything the model was sent: the prompt, or every message's content."""
    if "messages" in body:
        return "\n".join(str(m.get("content", "")) for m in body["messages"])
    return str(body.get("prompt", ""))
