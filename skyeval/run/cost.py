"""What a run would send, and what it would cost: `dry_run=true`, and the actual cost after.

`estimate(env, problems, sampling, model_config)` streams the (raw or templated) problems
once and counts the prompt tokens of what is still to send:
- with the model's own tokenizer when the config has a local one (`VLLMConfig`,
  `RayConfig`: the tokenizer vLLM would load, rendered exactly as the backend does);
- for an HTTP model, with `tiktoken` when it is installed (OpenAI's tokenizers: close for
  OpenAI models, an estimate for others), else ~4 characters a token;
and says which in `prompt_tokens_counted_with` (`prompt_tokens_estimated` is True unless
the model's own tokenizer counted them). With `model_config.price` ({input, output} in
dollars per million tokens; `openai_batch` charges its `billed_price`, by default half of it)
it adds the worst case: every sample sends its prompt and generates `max_tokens`, and the
expected cost: every sample generates the typical length (`expected_completion_tokens`,
capped at `max_tokens`): the mean completion tokens of an earlier run of the same model
(`earlier_length`: its summary.json; on the same benchmark first), else of the benchmark's
gold solutions (counted like the prompts: a reasoning model writes several times more).
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, Callable, Iterable

log = logging.getLogger(__name__)

MESSAGE_OVERHEAD = 3  # tokens OpenAI's chat format adds per message (and once for the reply)


def estimate(env: Any, problems: Iterable[dict[str, Any]], sampling: Any, model_config: Any,
             wanted: Callable[[dict[str, Any]], int] | None = None,
             earlier: tuple[float, str] | None = None) -> dict[str, Any]:
    """Counts (and worst-case and expected cost) of sending `problems` with `sampling` to
    the model. `wanted(problem)` is how many of its samples are still to send (default all
    n: a resumed folder's finished samples are not sent again); `first_prompt` is the first
    prompt that would be sent, rendered. `earlier` is (mean completion tokens, where they
    were measured) of an earlier run of the model (`earlier_length`); without it the
    expected length is the gold solutions' mean (None when the problems have none)."""
    count, method, exact = prompt_counter(model_config)
    fans_out = getattr(model_config, "fan_out_n", None) is not False
    n_problems = samples = prompt_tokens = sent = 0
    solutions = solution_tokens = 0
    first_prompt = None
    for problem in problems:
        todo = sampling.n if wanted is None else wanted(problem)
        if not todo:
            continue
        if earlier is None and isinstance(problem.get("solution"), str) and problem["solution"].strip():
            solutions += 1
            solution_tokens += count(problem["solution"])
        item = problem if "prompt" in problem else env.apply_prompt_template_on_item(problem)
        tokens = count(item["prompt"])
        first_prompt = item["prompt"] if first_prompt is None else first_prompt
        prompt_tokens += tokens
        # worst case: each sample sends its prompt (an HTTP request with n choices sends it once,
        # but may fan out to one request per sample); fan_out_n=false never fans out
        sent += tokens * (todo if fans_out else 1)
        n_problems += 1
        samples += todo
    report: dict[str, Any] = {
        "problems": n_problems,
        "samples": samples,
        "first_prompt": first_prompt,
        "prompt_tokens": prompt_tokens,  # one prompt per problem
        "prompt_tokens_sent": sent,
        "prompt_tokens_counted_with": method,
        "prompt_tokens_estimated": not exact,
        "max_completion_tokens": samples * sampling.max_tokens,
        "price": getattr(model_config, "billed_price", None),  # a batch backend's discount applied
        "worst_case_cost": None,
        "expected_completion_tokens": None,
        "expected_from": None,
        "expected_cost": None,
    }
    report["worst_case_cost"] = actual_cost(report["prompt_tokens_sent"], report["max_completion_tokens"], report["price"])
    typical = earlier or ((solution_tokens / solutions, f"the mean length of {solutions:,} gold solutions of the "
                           "benchmark (a reasoning model writes several times more)") if solutions else None)
    if typical is not None:
        per_sample = min(typical[0], sampling.max_tokens)
        report["expected_completion_tokens"] = round(per_sample * samples)
        report["expected_from"] = typical[1]
        report["expected_cost"] = actual_cost(sent, report["expected_completion_tokens"], report["price"])
    return report


def earlier_length(results_dir: str | os.PathLike, model_source: str, env_name: str | None = None
                   ) -> tuple[float, str] | None:
    """(mean completion tokens per sample, which run they come from) of the newest finished
    run of `model_source` under `results_dir` that reported token counts, a run of
    `env_name` first; None when there is none. Reads the summary.json of each run folder
    directly under `results_dir`."""
    found = []
    for path in Path(results_dir).glob("*/summary.json"):
        try:
            summary = json.loads(path.read_text(encoding="utf-8"))
            mean = summary["metrics"]["tokens"]["completion"]["mean"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if summary.get("model") == model_source and mean:
            found.append((summary.get("env") == env_name, path.stat().st_mtime, float(mean), path.parent,
                          summary.get("env")))
    if not found:
        return None
    _, _, mean, folder, env = max(found)
    return mean, f"the mean completion length of an earlier run of this model on {env} ({folder})"


def actual_cost(prompt_tokens: int, completion_tokens: int, price: dict[str, float] | None) -> float | None:
    """Dollars for these tokens at `price` ({input, output} per million tokens); None
    without a price. Reasoning tokens are billed as output: they are part of
    `completion_tokens` in every backend's usage."""
    if not price:
        return None
    return round((prompt_tokens * price["input"] + completion_tokens * price["output"]) / 1e6, 6)


def prompt_counter(model_config: Any) -> tuple[Callable[[Any], int], str, bool]:
    """(count(prompt) -> tokens, how it counts, whether that is the model's own tokenizer)."""
    engine_kwargs = getattr(model_config, "engine_kwargs", None)
    if isinstance(engine_kwargs, dict) and isinstance(model_config.model_source, str):
        tokenizer = _local_tokenizer(model_config.model_source, engine_kwargs)
        if tokenizer is not None:
            from skyeval.backends.vllm import render_prompt

            chat = getattr(model_config, "chat", None)
            name = engine_kwargs.get("tokenizer") or model_config.model_source
            return (lambda prompt: len(render_prompt(tokenizer, prompt, chat))), f"tokenizer of {name}", True
    encoding = _tiktoken_encoding(getattr(model_config, "model_source", None) or "")
    if encoding is not None:
        return (lambda prompt: _chat_tokens(prompt, lambda text: len(encoding.encode(text, disallowed_special=())))), \
            f"tiktoken {encoding.name}", False
    return (lambda prompt: _chat_tokens(prompt, lambda text: (len(text) + 3) // 4)), "chars/4", False


def _chat_tokens(prompt: Any, count: Callable[[str], int]) -> int:
    if isinstance(prompt, str):
        return count(prompt)
    return sum(count(str(m.get("content", ""))) + MESSAGE_OVERHEAD for m in prompt) + MESSAGE_OVERHEAD


def _local_tokenizer(model_source: str, engine_kwargs: dict[str, Any]) -> Any:
    """The model's tokenizer when it loads here (a local folder, or the Hugging Face
    cache); None otherwise (no hub access, no transformers)."""
    try:
        from skyeval.backends.vllm import load_tokenizer

        return load_tokenizer(model_source, engine_kwargs)
    except Exception as exc:  # noqa: BLE001 (any failure means: estimate instead)
        log.info("no local tokenizer for %s (%s): estimating prompt tokens", model_source, type(exc).__name__)
        return None


def _tiktoken_encoding(model: str) -> Any:
    """tiktoken's encoding for `model` (o200k_base for unknown names); None when tiktoken
    is not installed or its encoding file is neither cached nor downloadable."""
    try:
        import tiktoken
    except ImportError:
        return None
    try:
        name = tiktoken.encoding_name_for_model(model.rsplit("/", 1)[-1])
    except KeyError:
        name = "o200k_base"
    try:
        return tiktoken.get_encoding(name)
    except Exception as exc:  # noqa: BLE001 (offline: the file cannot be fetched)
        log.info("tiktoken encoding %s unavailable (%s): estimating prompt tokens", name, type(exc).__name__)
        return None


def run_cost(summary: dict[str, Any], price: dict[str, float] | None) -> dict[str, Any] | None:
    """The run's actual token totals and, with a `price` (model_config.price), their cost."""
    tokens = summary["metrics"].get("tokens") or {}
    prompt = (tokens.get("prompt") or {}).get("total") or 0
    completion = (tokens.get("completion") or {}).get("total") or 0
    if not (prompt or completion):
        return None
    return {"prompt_tokens": prompt, "completion_tokens": completion, "price": price,
            "cost": actual_cost(prompt, completion, price)}
