"""ShareGPT conversations for SFT: ``{"conversations": [{"from", "value"}, ...]}``.

Roles map system -> "system", user -> "human", assistant -> "gpt". A plain-text prompt
becomes one "human" turn. The response is the final "gpt" turn; an assistant prefill at
the end of the prompt is joined with the generation that continued it.
"""

from __future__ import annotations

from typing import Any

ROLES = {"system": "system", "user": "human", "assistant": "gpt"}


def to_sharegpt(prompt: str | list[dict[str, str]], response: str) -> dict[str, list[dict[str, str]]]:
    """One SFT example from a stored prompt (text or chat messages) and the response."""
    messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else [dict(m) for m in prompt]
    if messages and messages[-1]["role"] == "assistant":
        response = messages.pop()["content"] + response
    turns = []
    for message in messages:
        if message["role"] not in ROLES:
            raise ValueError(f"unknown chat role {message['role']!r}: one of {sorted(ROLES)}")
        turns.append({"from": ROLES[message["role"]], "value": message["content"]})
    turns.append({"from": "gpt", "value": response})
    return {"conversations": turns}


def sharegpt_row(row: dict[str, Any], response_col: str = "generation") -> dict[str, Any]:
    """A scored sample as a ShareGPT row, keeping `id` and `sample_idx` for traceability."""
    return {"id": row["id"], "sample_idx": row["sample_idx"], **to_sharegpt(row["prompt"], row[response_col])}
