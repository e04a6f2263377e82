"""An IFEval response against its instructions: strict and loose verdicts.

Strict checks the response as it is. Loose (the paper's upper bound) also accepts an
instruction when it holds for the response with its first line, its last line or both
removed, or with every `*` removed (eight variants). A response that is empty (or only
whitespace) follows nothing. Only the answer part is read: a model's reasoning (a think
block, closed or not) is never checked (`skyeval.reasoning`).
"""

from __future__ import annotations

from typing import Any

from skyeval.scorers.ifeval.checkers import CHECKERS, KWARGS


def loose_variants(response: str) -> list[str]:
    """The response and its seven loose variants, in the official order."""
    lines = response.split("\n")
    cut = ["\n".join(lines[1:]).strip(), "\n".join(lines[:-1]).strip(), "\n".join(lines[1:-1]).strip()]
    return [response, response.replace("*", ""), *cut, *(v.replace("*", "") for v in cut)]


def instruction_arguments(instruction_id: str, kwargs: dict[str, Any] | None) -> dict[str, Any]:
    """The arguments of one instruction's checker from the dataset's kwargs (keys with no
    value, as in the hub copy's all-keys rows, are dropped); a missing one raises ValueError."""
    if instruction_id not in CHECKERS:
        raise ValueError(f"unknown IFEval instruction {instruction_id!r}")
    given = {k: v for k, v in (kwargs or {}).items() if v is not None}
    missing = [k for k in KWARGS[instruction_id] if k not in given]
    if missing:
        raise ValueError(f"IFEval instruction {instruction_id!r} needs {missing} (kwargs {given})")
    return {k: given[k] for k in KWARGS[instruction_id]}


def follows(instruction_id: str, arguments: dict[str, Any], response: str) -> bool:
    return bool(response.strip()) and CHECKERS[instruction_id](response, **arguments)


def score_ifeval(generation: str, instruction_ids: list[str], kwargs: list[dict[str, Any] | None],
                 *, reasoning: str | None = None) -> dict[str, Any]:
    """`score` = prompt-level strict (1.0 when every instruction is followed); `strict` and
    `loose` the per-instruction verdicts; `prompt_level_loose`; `followed_strict` /
    `followed_loose` / `instructions` the counts behind instruction-level accuracy."""
    from skyeval.reasoning import parse

    if len(kwargs) != len(instruction_ids):
        raise ValueError(f"{len(instruction_ids)} instructions but {len(kwargs)} kwargs")
    parsed = parse(generation, reasoning_content=reasoning)
    response = parsed.answer or ""
    variants = loose_variants(response)
    strict, loose = [], []
    for instruction_id, given in zip(instruction_ids, kwargs):
        arguments = instruction_arguments(instruction_id, given)
        strict.append(follows(instruction_id, arguments, response))
        loose.append(strict[-1] or any(follows(instruction_id, arguments, v) for v in variants[1:]))
    return {
        "score": float(all(strict)),
        "prompt_level_loose": float(all(loose)),
        "strict": strict,
        "loose": loose,
        "followed_strict": sum(strict),
        "followed_loose": sum(loose),
        "instructions": len(instruction_ids),
        "extracted": None,
        "parse_failed": not response.strip(),
        "reasoning_state": parsed.state,
    }
