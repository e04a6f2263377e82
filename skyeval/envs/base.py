"""`Env`: a benchmark = dataset + default template + scorer.

Subclasses implement `to_problem` (a raw row -> a problem dict with at least `id`,
`question`, `expected`), `reference_generation` (the gold answer written the way a model
would write it) and `score_item`. Everything else (loading, templating, generation,
parallel scoring, saving) is shared.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

from skyeval.backends.base import GenerationRequest, GenerationResult, SamplingParams, ScalingConfig
from skyeval.envs.data import read_hub, read_local, resolve_data_dir
from skyeval.errors import ConfigError
from skyeval.templates import Template

if TYPE_CHECKING:
    import ray.data

log = logging.getLogger(__name__)


class Env:
    """Base class of every benchmark. Knobs are constructor arguments."""

    name: str = "env"
    default_template = Template(messages=[{"role": "user", "content": "{question}"}])

    def __init__(
        self,
        name: str | None = None,
        hf_id: str | None = None,
        hf_subset: str | None = None,
        split: str = "test",
        local_files: str | list[str] | None = None,
        data_dir: str | None = None,
        limit: int | None = None,
        template: Template | str | list | dict | None = None,
    ) -> None:
        self.name = name or self.name
        self.hf_id, self.hf_subset, self.split = hf_id, hf_subset, split
        self.local_files, self.data_dir = local_files, data_dir
        self.limit = check_limit(limit)
        self.template = Template.of(template).merged_over(self.default_template)
        self.backend: Any = None
        self.sampling = SamplingParams()
        self.model_source: str | None = None

    def __getstate__(self) -> dict[str, Any]:
        """Envs shipped to Ray workers (for scoring) leave their backend behind."""
        return {**self.__dict__, "backend": None}

    # ---- data ---------------------------------------------------------------------
    def load_rows(self) -> list[dict[str, Any]]:
        """Raw rows: from the local mirror when a data dir is set, else from the hub."""
        data_dir = resolve_data_dir(self.data_dir)
        if data_dir is not None:
            if not self.local_files:
                raise FileNotFoundError(f"env {self.name!r} has no local copy; unset SKYEVAL_DATA_DIR to use the hub")
            return read_local(data_dir, self.local_files)
        if not self.hf_id:
            raise ValueError(f"env {self.name!r} has no hf_id; set data_dir= or SKYEVAL_DATA_DIR to local files")
        return read_hub(self.hf_id, self.split, self.hf_subset)

    def to_problem(self, row: dict[str, Any], index: int) -> dict[str, Any]:
        """One raw row -> {"id", "question", "expected", ...}."""
        raise NotImplementedError(f"{type(self).__name__} must implement to_problem(row, index)")

    def keep(self, problem: dict[str, Any]) -> bool:
        """Row filter applied before `limit` (knobs like difficulty use it)."""
        return True

    def iter_problems(self, on_error: Callable[[int, Exception], None] | None = None) -> Iterator[dict[str, Any]]:
        """The env's problems, filtered and limited, as plain dicts, one at a time. A row
        that can't be read raises, or with `on_error` is reported as (row index, error)
        and skipped."""
        kept = 0
        for index, row in enumerate(self.load_rows()):
            if self.limit is not None and kept >= self.limit:
                return
            try:
                problem = self.to_problem(row, index)
            except Exception as err:  # noqa: BLE001 - a malformed row
                if on_error is None:
                    raise ValueError(f"env {self.name!r}: row {index} is malformed: {type(err).__name__}: {err}") from err
                on_error(index, err)
                continue
            if self.keep(problem):
                kept += 1
                yield problem

    def load_problems(self, on_error: Callable[[int, Exception], None] | None = None) -> list[dict[str, Any]]:
        """All of `iter_problems` in a list (small benchmarks and tests only)."""
        problems = list(self.iter_problems(on_error))
        ids = [p["id"] for p in problems]
        if len(set(ids)) != len(ids):
            raise ValueError(f"env {self.name!r} produced duplicate problem ids")
        return problems

    def read_dataset(self) -> "ray.data.Dataset":
        """The problems as a Ray Dataset (`ds.limit`, `ds.filter`, `ds.groupby` work)."""
        from skyeval.ray_session import dataset_of

        return dataset_of(self.load_problems())

    # ---- prompting and generation -----------------------------------------------------
    def setup(
        self,
        model_config: Any,
        scaling_config: ScalingConfig | None = None,
        template: Template | str | list | dict | None = None,
        sampling_params: SamplingParams | dict | None = None,
    ) -> "Env":
        """Attach a backend (built from a model config such as `HTTPConfig`) and options.

        `template` is a string (a completion prompt), a list of chat messages, a dict of
        Template fields or a `Template`; None keeps the current one. Calling `setup` again
        closes the backend it replaces."""
        if template is not None:
            self.template = Template.of(template).merged_over(self.default_template)
        if isinstance(sampling_params, dict):
            sampling_params = SamplingParams(**sampling_params)
        self.sampling = sampling_params or self.sampling
        self.close()
        self.model_source = getattr(model_config, "model_source", None)
        self.backend = model_config.build(scaling_config or ScalingConfig())
        return self

    def close(self) -> None:
        """Stop what the backend started (the HTTP client's loop thread, a vLLM engine).
        Safe to call twice; `with env:` calls it on exit."""
        backend, self.backend = self.backend, None
        if backend is not None:
            backend.close()

    def __enter__(self) -> "Env":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def apply_prompt_template_on_item(self, item: dict[str, Any]) -> dict[str, Any]:
        """The item with its `prompt` (chat messages or text) filled in."""
        return {**item, "prompt": self.template.render(item, self.model_source)}

    def reference_generation(self, problem: dict[str, Any]) -> str:
        """The gold solution, formatted as a model would write it (reference backend)."""
        raise NotImplementedError(f"{type(self).__name__} must implement reference_generation(problem)")

    def request_for(self, problem: dict[str, Any], sample_indices: list[int]) -> GenerationRequest:
        return GenerationRequest(
            id=problem["id"],
            prompt=problem["prompt"],
            sample_indices=sample_indices,
            reference=self.reference_generation(problem),
        )

    def stream_generations(self, problems: list[dict[str, Any]]) -> Iterator[GenerationResult]:
        """Results of every sample of the given (templated) problems, as they complete."""
        if self.backend is None:
            raise RuntimeError("call env.setup(model_config=...) before generating")
        samples = list(range(self.sampling.n))
        requests = [self.request_for(p, samples) for p in problems]
        return self.backend.generate(requests, self.sampling)

    def generate(self, ds: "ray.data.Dataset") -> "ray.data.Dataset":
        """One row per sample: the problem's fields plus `sample_idx`, `generation`, ..."""
        from skyeval.ray_session import dataset_of

        problems = {p["id"]: p for p in map(self._templated, ds.take_all())}
        rows = [
            {**problems[r.id], **r.to_dict()} for r in self.stream_generations(list(problems.values()))
        ]
        return dataset_of(rows)

    def _templated(self, item: dict[str, Any]) -> dict[str, Any]:
        return item if "prompt" in item else self.apply_prompt_template_on_item(item)

    # ---- scoring ------------------------------------------------------------------------
    def scoring_functions(self) -> dict[str, Any]:
        """The env's scorers by column name: `{"math": MathScorer}`. A value is a scorer
        class, built as `cls(env)`, or a callable; either is called with a sample
        (`generation`, `expected` ...) and returns a float 0..1 or a dict with `"score"`.
        Override it to score with several: `{"readability": ReadabilityScorer, "math":
        MathScorer}` adds a `readability` and a `math` column to every scored row."""
        return {}

    def primary_scorer(self) -> str | None:
        """Which scorer's result is `score` (what accuracy and pass@k count): the env
        family's own (`math`, `choice`, `code`) when listed, else the first listed."""
        names = list(self.scoring_functions())
        own = getattr(self, "scorer_name", None)
        return own if own in names else (names[0] if names else None)

    def scorer_names(self) -> list[str]:
        """The per-scorer columns `score_item` adds when the env has several scorers
        (summary.json reports each one's mean); [] for a single scorer (`score` only)."""
        names = list(self.scoring_functions())
        return names if len(names) > 1 else []

    def score_item(self, item: dict[str, Any]) -> dict[str, Any]:
        """Score one sample: `item` has `generation` and `expected`; returns at least
        {"score": float 0..1}, the primary scorer's fields (e.g. `extracted`), and with
        several scorers one column per scorer (its score) plus `<name>_<field>` for its
        other fields. Must not raise for any generation text."""
        scorers = self.scoring_functions()
        if not scorers:
            raise NotImplementedError(f"{type(self).__name__} must implement scoring_functions() or score_item(item)")
        primary = self.primary_scorer()
        results = {name: _scored(name, scorer(self) if isinstance(scorer, type) else scorer, item)
                   for name, scorer in scorers.items()}
        out = dict(results[primary])
        if len(results) > 1:
            for name, result in results.items():
                out[name] = result["score"]
                out.update({f"{name}_{key}": value for key, value in result.items() if key != "score"})
        return out

    def describe_scoring(self) -> dict[str, Any]:
        """What else decides the scores, for summary.json (code envs: the sandbox); may
        check it works, raising before anything is generated."""
        return {}

    def score(self, ds_or_item: "ray.data.Dataset | dict[str, Any]") -> Any:
        """Score one item (a dict) or every row of a Dataset, in parallel across cores."""
        if isinstance(ds_or_item, dict):
            return self.score_item(ds_or_item)
        return ds_or_item.map(_ScoreRow(self))

    # ---- saving -------------------------------------------------------------------------
    def save(self, ds: "ray.data.Dataset", path: str | os.PathLike, format: str = "jsonl") -> Path:
        """Write a Dataset to one file: json (a list), jsonl or parquet."""
        from skyeval.results import write_rows

        return write_rows(ds.take_all(), Path(path), format)


class _ScoreRow:
    """Row scorer shipped to Ray workers; a scorer that raises marks the row, not the run."""

    def __init__(self, env: Env) -> None:
        self.env = env

    def __call__(self, row: dict[str, Any]) -> dict[str, Any]:
        try:
            return {**row, **self.env.score_item(row), "score_error": None}
        except Exception as err:  # noqa: BLE001 - recorded as a failure by the pipeline
            return {**row, "score": None, "score_error": f"{type(err).__name__}: {err}"}


def _scored(name: str, scorer: Callable[[dict[str, Any]], Any], item: dict[str, Any]) -> dict[str, Any]:
    """A scorer's result as a dict with a float `score`."""
    result = scorer(item)
    if isinstance(result, dict):
        if "score" not in result:
            raise TypeError(f"scorer {name!r} returned a dict without 'score': {sorted(result)}")
        return {**result, "score": float(result["score"])}
    return {"score": float(result)}


def check_limit(limit: Any) -> int | None:
    """`limit` as a whole number >= 0 (0: none, a run that says so), or None for every
    problem; else a ConfigError."""
    if limit is None:
        return None
    text = str(limit).strip()
    if isinstance(limit, bool) or not (isinstance(limit, int) or text.isdigit()) or int(text) < 0:
        raise ConfigError(f"env.limit must be a whole number >= 0 (or null for every problem), got {limit!r}")
    return int(text)


def check_positive(knob: str, value: Any) -> float:
    """A number > 0 (timeouts, limits); else a ConfigError naming the knob."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{knob} must be a number > 0, got {value!r}") from None
    if not number > 0:
        raise ConfigError(f"{knob} must be a number > 0, got {value!r}")
    return number
