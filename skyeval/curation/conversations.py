"""The one reader of conversation rows: every curation step and every reader of a training
file takes a row's text from here (decontaminate, dedup, the model stage, readability,
pairs, the exports).

A field's value is read as role/content messages (`messages`) whatever its layout:

- role/content messages (OpenAI chat, TRL's conversational format), where `content` may be
  a string or OpenAI's list of parts (`[{"type": "text", "text": ...}, ...]`: the text
  parts joined, images and other parts left out);
- ShareGPT turns `{"from", "value"}` (`human`, `gpt`, `system`; LLaMA-Factory's
  `function_call` and `observation` as assistant and tool turns);
- a string: one turn, a `user` turn unless the field holds a response (`generation`,
  `completion`, `response`: an `assistant` turn). A sample's `generation` carries its
  reasoning (`reasoning`, else a server's `reasoning_content`) before the answer.

`text(row, fields, on)` is the text of a part of the row: `prompt` (user turns), `response`
(assistant and tool turns) or `conversation` (both, in order); system turns are left out
of all three (a shared system prompt is boilerplate, not content). A row whose chosen fields
give no text for that part is an `EmptyRowError` naming the row and its keys, never a
silent "".
"""

from __future__ import annotations

from typing import Any, Sequence

from skyeval.errors import SkyevalError

PARTS = ("prompt", "response", "conversation")
SHAREGPT_ROLES = {"human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant",
                  "system": "system", "function_call": "assistant", "observation": "tool", "tool": "tool"}
RESPONSE_FIELDS = ("generation", "completion", "response")
CONVERSATION_FIELDS = ("messages", "conversations")
PROBLEM_FIELDS = ("problem", "question", "prompt", "text")  # a problem file's text: the first present
_ROLES_OF = {"prompt": ("user",), "response": ("assistant", "tool"), "conversation": ("user", "assistant", "tool")}


class ConversationError(SkyevalError):
    """A field that is not a conversation in any layout this module reads."""


class EmptyRowError(SkyevalError):
    """A row whose chosen fields give no text. `index` is its position in the rows read
    (`streams.map_chunks` turns a chunk's position into the input's)."""

    def __init__(self, index: int, ident: Any, keys: list[str], fields: Sequence[str], on: str) -> None:
        self.index, self.ident, self.keys, self.fields, self.on = index, ident, list(keys), list(fields), on
        super().__init__(self._message())

    @classmethod
    def of(cls, index: int, row: dict[str, Any], fields: Sequence[str], on: str) -> "EmptyRowError":
        return cls(index, row.get("id"), sorted(row), fields, on)

    def __reduce__(self) -> tuple:  # raised in a worker process, re-raised in the parent
        return type(self), (self.index, self.ident, self.keys, self.fields, self.on)

    def _message(self) -> str:
        ident = f" (id {self.ident})" if self.ident is not None else ""
        return (f"row {self.index + 1}{ident}: {', '.join(self.fields)} give no {self.on} text "
                f"(the row's keys: {', '.join(self.keys) or 'none'}); name the fields that hold it with --fields")

    def at(self, start: int) -> "EmptyRowError":
        """The same error, `start` rows further into the input."""
        self.index += start
        self.args = (self._message(),)
        return self


def messages(value: Any, field: str = "") -> list[dict[str, Any]]:
    """`value` as role/content messages with text content (see the module docstring); a
    string is one turn, `assistant` when `field` names a response; None is no turn."""
    if value is None:
        return []
    if isinstance(value, (str, int, float)):
        return [{"role": "assistant" if field in RESPONSE_FIELDS else "user", "content": str(value)}]
    if isinstance(value, list) and all(isinstance(m, dict) for m in value):
        return [_message(m, field) for m in value]
    if isinstance(value, dict) and ("role" in value or "from" in value):
        return [_message(value, field)]
    raise ConversationError(f"field {field or '?'}: a {type(value).__name__} is neither text nor a conversation "
                            "(role/content messages, ShareGPT from/value turns)")


def _message(turn: dict[str, Any], field: str) -> dict[str, Any]:
    if "from" in turn and "role" not in turn:
        role = SHAREGPT_ROLES.get(str(turn["from"]))
        if role is None:
            raise ConversationError(f"field {field or '?'}: unknown ShareGPT role {turn['from']!r} "
                                    f"(one of {', '.join(SHAREGPT_ROLES)})")
        return {"role": role, "content": content_text(turn.get("value"))}
    if "role" not in turn:
        raise ConversationError(f"field {field or '?'}: a turn without `role` or `from` (keys: {', '.join(sorted(turn))})")
    message = {"role": str(turn["role"]), "content": content_text(turn.get("content"))}
    if turn.get("reasoning_content"):
        message["reasoning_content"] = content_text(turn["reasoning_content"])
    return message


def content_text(content: Any) -> str:
    """A message's content as text: a string, or the text of OpenAI's content parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text") or "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return str(content)


def row_messages(row: dict[str, Any], fields: Sequence[str]) -> list[dict[str, Any]]:
    """The messages of `fields` of a row, in order; a sample's `generation` with its
    reasoning (`reasoning_content` of the assistant turn)."""
    out: list[dict[str, Any]] = []
    for field in fields:
        turns = messages(row.get(field), field)
        if field == "generation" and turns and (reasoning := reasoning_of(row)):
            turns[-1]["reasoning_content"] = reasoning
        out.extend(turns)
    return out


def text(row: dict[str, Any], fields: Sequence[str], on: str = "prompt", index: int = 0) -> str:
    """The text of part `on` (prompt | response | conversation) of a row's `fields`.
    Raises EmptyRowError (naming the row by `index`) when there is none."""
    return "\n".join(t for _, t in field_texts(row, fields, on, index))


def field_texts(row: dict[str, Any], fields: Sequence[str], on: str = "prompt",
                index: int = 0) -> list[tuple[str, str]]:
    """(field, text of part `on`) of each field with text; EmptyRowError when none has any."""
    if on not in PARTS:
        raise ValueError(f"unknown part {on!r}: one of {', '.join(PARTS)}")
    out = []
    for field in fields:
        value = part_text(row_messages(row, [field]), on)
        if value.strip():
            out.append((field, value))
    if not out:
        raise EmptyRowError.of(index, row, fields, on)
    return out


def part_text(turns: list[dict[str, Any]], on: str) -> str:
    """The text of the turns of part `on`, an assistant turn's reasoning before its content."""
    roles = _ROLES_OF[on]
    return "\n".join(t for m in turns if m["role"] in roles
                     for t in (m.get("reasoning_content") or "", m["content"]) if t)


def reasoning_of(row: dict[str, Any]) -> str | None:
    """A sample's reasoning kept apart by the backend: `reasoning`, else a server's
    `reasoning_content` (None: none, or still inside the text)."""
    return row.get("reasoning") or row.get("reasoning_content") or None


def default_fields(row: dict[str, Any]) -> list[str]:
    """The fields a row's text is in: a conversation (`messages`, `conversations`), a
    sample (`prompt` + `generation`), a prompt-completion row (`prompt` + `completion`),
    else the first of PROBLEM_FIELDS."""
    for name in CONVERSATION_FIELDS:
        if name in row:
            return [name]
    for response in ("generation", "completion"):
        if "prompt" in row and response in row:
            return ["prompt", response]
    for name in PROBLEM_FIELDS:
        if name in row:
            return [name]
    raise EmptyRowError.of(0, row, PROBLEM_FIELDS, "prompt")


def has_response(row: dict[str, Any], fields: Sequence[str]) -> bool:
    """Whether these fields of a row hold a response (a conversation, a sample), not only a problem."""
    return any(m["role"] in ("assistant", "tool") for m in row_messages(row, fields))
