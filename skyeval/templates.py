"""Prompt templates: chat or plain-string, with named and per-model system prompts.

A template is either a plain string (`"{question}\\nAnswer:"`, sent as a completion
prompt) or a list of chat messages whose contents are format strings over the fields of
a problem row (`[{"role": "user", "content": "{question}"}]`). A final message with role
"assistant" is a prefill: the model continues it.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from typing import Any

BOXED_INSTRUCTION = "Please reason step by step, and put your final answer within \\boxed{}."

SYSTEM_PROMPTS: dict[str, str] = {
    "qwen_math": "Please reason step by step, and put your final answer within \\boxed{}.",
    "qwen": "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.",
    "qwq": (
        "You are a helpful and harmless assistant. You are Qwen developed by Alibaba. "
        "You should think step-by-step."
    ),
    "skythought": (
        "Your role as an assistant involves thoroughly exploring questions through a "
        "systematic long thinking process before providing the final precise and accurate "
        "solutions. Please structure your response into two main sections: Thought and "
        "Solution."
    ),
    "helpful": "You are a helpful assistant.",
}

# First matching pattern (case-insensitive regex over model_source) wins.
MODEL_SYSTEM_PROMPTS: list[tuple[str, str]] = [
    (r"qwen2\.5-math", "qwen_math"),
    (r"qwq", "qwq"),
    (r"sky-t1", "skythought"),
    (r"qwen2\.5", "qwen"),
]


def resolve_system_prompt(system_prompt: str | None, model_source: str | None) -> str | None:
    """A named prompt, literal text, "none" for no prompt, or None for the model's default."""
    if system_prompt is None:
        for pattern, name in MODEL_SYSTEM_PROMPTS:
            if model_source and re.search(pattern, model_source, re.IGNORECASE):
                return SYSTEM_PROMPTS[name]
        return None
    if system_prompt.lower() == "none":
        return None
    return SYSTEM_PROMPTS.get(system_prompt, system_prompt)


@dataclass
class Template:
    """`messages` (chat) or `text` (completion); None fields fall back to the env default."""

    messages: list[dict[str, str]] | None = None
    text: str | None = None
    system_prompt: str | None = None

    def __post_init__(self) -> None:
        if self.messages is not None and self.text is not None:
            raise ValueError("A template has either `messages` (chat) or `text`, not both.")

    def merged_over(self, default: "Template") -> "Template":
        """This template's set fields over an env's default template."""
        if self.messages is None and self.text is None:
            return Template(default.messages, default.text, self.system_prompt or default.system_prompt)
        return Template(self.messages, self.text, self.system_prompt or default.system_prompt)

    def render(self, item: dict[str, Any], model_source: str | None = None) -> str | list[dict[str, str]]:
        """The prompt for one problem row; a missing field raises KeyError naming it."""
        if self.text is not None:
            return _fill(self.text, item)
        messages = [{"role": m["role"], "content": _fill(m["content"], item)} for m in self.messages or []]
        system = resolve_system_prompt(self.system_prompt, model_source)
        if system and not (messages and messages[0]["role"] == "system"):
            messages.insert(0, {"role": "system", "content": system})
        return messages


def _fill(template: str, item: dict[str, Any]) -> str:
    """`str.format` over the item's fields, leaving LaTeX braces like `\\boxed{}` alone."""
    out = []
    for literal, field, spec, conversion in string.Formatter().parse(template):
        out.append(literal)
        if field is None:
            continue
        if field == "" or not field.isidentifier():  # `{}` in \boxed{}, or LaTeX like {a+b}
            out.append("{" + field + (":" + spec if spec else "") + "}")
            continue
        if field not in item:
            raise KeyError(f"template field {{{field}}} is not a column of the problem (columns: {sorted(item)})")
        out.append(format(item[field], spec or ""))
    return "".join(out)
