"""Prompt templates: chat or plain-string, with named and per-model system prompts.

A template is either a plain string (`"{question}\\nAnswer:"`, sent as a completion
prompt) or a list of chat messages whose contents are format strings over the fields of
a problem row (`[{"role": "user", "content": "{question}"}]`). A final message with role
"assistant" is a prefill: the model continues it.
"""

from __future__ import annotations

import difflib
import re
import string
from dataclasses import dataclass
from typing import Any

from skyeval.errors import ConfigError

BOXED_INSTRUCTION = "Please reason step by step, and put your final answer within \\boxed{}."

# Named system prompts, chosen with `template.system_prompt_name=NAME`. `qwen_cot`,
# `prime_rl` and `skythought` are SkyThought's (skythought/evals/models/model_configs.yaml;
# prime_rl is PRIME-RL's eval/system_prompt.md, leading newline included).
SYSTEM_PROMPTS: dict[str, str] = {
    "qwen_math": "Please reason step by step, and put your final answer within \\boxed{}.",
    # Qwen2.5-Math's tool-integrated reasoning prompt (its README; template=qwen25-math-tir, tools=python)
    "qwen_math_tir": ("Please integrate natural language reasoning with programs to solve the problem above, "
                      "and put your final answer within \\boxed{}."),
    "qwen": "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.",
    "qwq": (
        "You are a helpful and harmless assistant. You are Qwen developed by Alibaba. "
        "You should think step-by-step."
    ),
    "qwen_cot": (
        "You are a helpful and harmless assistant. You are Qwen developed by Alibaba. "
        "You should think step-by-step."
    ),
    "prime_rl": (
        "\nWhen tackling complex reasoning tasks, you have access to the following actions. Use them as needed "
        "to progress through your thought process.\n\n[ASSESS]\n\n[ADVANCE]\n\n[VERIFY]\n\n[SIMPLIFY]\n\n"
        "[SYNTHESIZE]\n\n[PIVOT]\n\n[OUTPUT]\n\nYou should strictly follow the format below:\n\n[ACTION NAME]"
        "\n\n# Your action step 1\n\n# Your action step 2\n\n# Your action step 3\n\n...\n\n"
        "Next action: [NEXT ACTION NAME]\n"
    ),
    "skythought": (
        "Your role as an assistant involves thoroughly exploring questions through a systematic long "
        "thinking process before providing the final precise and accurate solutions. This requires "
        "engaging in a comprehensive cycle of analysis, summarizing, exploration, reassessment, reflection, "
        "backtracing, and iteration to develop well-considered thinking process. "
        "Please structure your response into two main sections: Thought and Solution. "
        "In the Thought section, detail your reasoning process using the specified format: "
        "<|begin_of_thought|> {thought with steps separated with '\n\n'} "
        "<|end_of_thought|> "
        "Each step should include detailed considerations such as analisying questions, summarizing "
        "relevant findings, brainstorming new ideas, verifying the accuracy of the current steps, refining "
        "any errors, and revisiting previous steps. "
        "In the Solution section, based on various attempts, explorations, and reflections from the Thought "
        "section, systematically present the final solution that you deem correct. The solution should "
        "remain a logical, accurate, concise expression style and detail necessary step needed to reach the "
        "conclusion, formatted as follows: "
        "<|begin_of_solution|> "
        "{final formatted, precise, and clear solution} "
        "<|end_of_solution|> "
        "Now, try to solve the following question through the above guidelines:"
    ),
    "helpful": "You are a helpful assistant.",
}
NO_SYSTEM_PROMPT = "none"  # system_prompt_name=none: no system prompt, not even the model's default

# A model's default system prompt: the first pattern (a case-insensitive regex) matching the
# start of its name (model_source's last path part) wins. Only the official names: a
# fine-tune named `my-org/qwq-distill-7b` gets none unless asked for one.
MODEL_SYSTEM_PROMPTS: list[tuple[str, str]] = [
    (r"qwen2\.5-math", "qwen_math"),
    (r"qwq-32b", "qwq"),
    (r"sky-t1", "skythought"),
    (r"eurus-2-7b-prime", "prime_rl"),
    (r"qwen2\.5", "qwen"),
]


def named_system_prompt(name: str) -> str | None:
    """The text of a named prompt (None for "none"); an unknown name raises with the closest."""
    if name.lower() == NO_SYSTEM_PROMPT:
        return None
    if name not in SYSTEM_PROMPTS:
        close = difflib.get_close_matches(name, list(SYSTEM_PROMPTS), n=1, cutoff=0.5)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"unknown template.system_prompt_name {name!r}.{hint} Known: "
                          f"{', '.join(sorted(SYSTEM_PROMPTS))}, none")
    return SYSTEM_PROMPTS[name]


def resolve_system_prompt(system_prompt: str | None, model_source: str | None,
                          system_prompt_name: str | None = None) -> tuple[str | None, str]:
    """(text or None, why): literal `system_prompt` text ("none": no system message), else
    the named prompt, else the model's default by name."""
    if system_prompt is not None:
        if system_prompt.strip().lower() == NO_SYSTEM_PROMPT:
            return None, "none: template.system_prompt=none"
        return system_prompt, "configured: template.system_prompt"
    if system_prompt_name is not None:
        text = named_system_prompt(system_prompt_name)
        return text, f"{'none' if text is None else 'configured'}: template.system_prompt_name={system_prompt_name}"
    name = (model_source or "").rstrip("/").rpartition("/")[2]
    for pattern, prompt in MODEL_SYSTEM_PROMPTS:
        if re.match(pattern, name, re.IGNORECASE):
            return SYSTEM_PROMPTS[prompt], (f"model default: {model_source!r} matches {pattern!r} -> {prompt} "
                                            "(template.system_prompt_name=none sends none)")
    return None, "none: none configured and no model default matches"


@dataclass
class Template:
    """`messages` (chat) or `text` (completion); None fields fall back to the env default.

    `system_prompt` is literal text ("none": no system message); `system_prompt_name` one
    of `SYSTEM_PROMPTS` (or "none"). With neither, models with a known default (QwQ,
    Sky-T1 ...: `MODEL_SYSTEM_PROMPTS`) get theirs. `describe` says which was used and why.
    `Template.of` also takes a plain string (a completion prompt) or a message list."""

    messages: list[dict[str, str]] | None = None
    text: str | None = None
    system_prompt: str | None = None
    system_prompt_name: str | None = None

    def __post_init__(self) -> None:
        if self.messages is not None and self.text is not None:
            raise ConfigError("A template has either `messages` (chat) or `text`, not both.")
        if self.system_prompt is not None and self.system_prompt_name is not None:
            raise ConfigError("set template.system_prompt (literal text) or template.system_prompt_name, not both")
        if self.system_prompt in SYSTEM_PROMPTS:
            raise ConfigError(
                f"template.system_prompt is sent as literal text; for the named prompt {self.system_prompt!r} "
                f"use template.system_prompt_name={self.system_prompt}"
            )
        if self.system_prompt_name is not None:
            named_system_prompt(self.system_prompt_name)  # unknown names fail here, not mid-run
        if self.messages is not None:
            for message in self.messages:
                if not isinstance(message, dict) or not {"role", "content"} <= set(message):
                    raise ConfigError(f"a template message needs `role` and `content`, got {message!r}")

    @classmethod
    def of(cls, value: "Template | str | list | dict | None") -> "Template":
        """A Template from what users write: a string (completion prompt), a list of chat
        messages, a dict of fields, a Template, or None (the env's default)."""
        if value is None:
            return cls()
        if isinstance(value, Template):
            return value
        if isinstance(value, str):
            return cls(text=value)
        if isinstance(value, (list, tuple)):
            return cls(messages=[dict(m) if isinstance(m, dict) else m for m in value])
        if isinstance(value, dict):
            unknown = set(value) - {"messages", "text", "system_prompt", "system_prompt_name"}
            if unknown:
                raise ConfigError(f"unknown template field(s) {sorted(unknown)}: a template has messages, text, "
                                  "system_prompt, system_prompt_name")
            return cls(**value)
        raise ConfigError(f"a template is a string, a list of chat messages or a dict, not {type(value).__name__}")

    def merged_over(self, default: "Template") -> "Template":
        """This template's set fields over an env's default template."""
        own = self.system_prompt is not None or self.system_prompt_name is not None
        system = (self.system_prompt, self.system_prompt_name) if own else (default.system_prompt, default.system_prompt_name)
        if self.messages is None and self.text is None:
            return Template(default.messages, default.text, *system)
        return Template(self.messages, self.text, *system)

    def render(self, item: dict[str, Any], model_source: str | None = None) -> str | list[dict[str, str]]:
        """The prompt for one problem row; a missing field raises KeyError naming it."""
        if self.text is not None:
            return _fill(self.text, item)
        messages = [{"role": m["role"], "content": _fill(m["content"], item)} for m in self.messages or []]
        system, _ = resolve_system_prompt(self.system_prompt, model_source, self.system_prompt_name)
        if system and not (messages and messages[0]["role"] == "system"):
            messages.insert(0, {"role": "system", "content": system})
        return messages


    def describe(self, model_source: str | None) -> dict[str, Any]:
        """The system prompt this template sends for `model_source`, and why (summary.json)."""
        if self.text is not None:
            return {"kind": "text", "system_prompt_used": None,
                    "system_prompt_reason": "none: a completion (text) template has no system message"}
        if self.messages and self.messages[0]["role"] == "system":
            return {"kind": "chat", "system_prompt_used": self.messages[0]["content"],
                    "system_prompt_reason": "configured: the template's own system message"}
        text, why = resolve_system_prompt(self.system_prompt, model_source, self.system_prompt_name)
        return {"kind": "chat", "system_prompt_used": text, "system_prompt_reason": why}


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
