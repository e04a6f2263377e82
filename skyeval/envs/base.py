"""`Env`: a benchmark = dataset + default template + scorer.

Subclasses implement `to_problem` (a raw row -> a problem dict with at least `id`,
`question`, `expected`), `reference_generation` (the gold answer written the way a model
would write it) and `score_item`. Everything else (loading, templating, generation,
parallel scoring, saving) is shared.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

from skyeval.backends.base import (
    GenerationRequest,
    GenerationResult,
    SamplingParams,
    ScalingConfig,
)
from skyeval.envs.data import RowSource
from skyeval.envs.dates import DateWindow, problem_date
from skyeval.errors import ConfigError, DataNotFoundError, GoldError
from skyeval.templates import Template
from skyeval.tools import ToolsConfig, TurnLoop, needs_loop

if TYPE_CHECKING:
    import pyarrow
    import ray.data

    from skyeval.scorers.pool import ScorerPool

log = logging.getLogger(__name__)
_POOL_LOCK = threading.Lock()  # one scoring pool per env, even when threads ask at once


class Env:
    """Base class of every benchmark. Knobs are constructor arguments."""

    name: str = "env"
    required_keys: tuple[str, ...] = ("expected",)  # a row with one of these None scores null, never 0
    default_template = Template(messages=[{"role": "user", "content": "{question}"}])
    # Dated benchmarks name the problem field holding each problem's date (`YYYY-MM` or
    # `YYYY-MM-DD`): `start_date`/`end_date` then keep a window of them, and metrics report
    # accuracy by month. None: the benchmark has no dates.
    date_field: str | None = None
    # When the local copy is missing: the raw row fields `to_problem` needs (named if the
    # env's folder holds rows without them) and the command that makes the copy.
    row_fields: tuple[str, ...] = ()
    local_copy: str | None = None

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
        start_date: str | None = None,
        end_date: str | None = None,
    ) -> None:
        self.name = name or self.name
        self.hf_id, self.hf_subset, self.split = hf_id, hf_subset, split
        self.local_files, self.data_dir = local_files, data_dir
        self.limit = check_limit(limit)
        self.start_date, self.end_date = start_date, end_date
        self.window = DateWindow.of(start_date, end_date)
        if self.window.active and self.date_field is None:
            raise ConfigError(f"env {self.name!r} has no problem dates: start_date/end_date apply to dated "
                              "benchmarks (liveaops, livecodebench)")
        self.template = Template.of(template).merged_over(self.default_template)
        self.backend: Any = None
        self.sampling = SamplingParams()
        self.model_source: str | None = None
        self.model_config: Any = None  # kept so lazy `generate` can build the backend in workers
        self.scaling_config = ScalingConfig()

    def __getstate__(self) -> dict[str, Any]:
        """Envs shipped to Ray workers or scoring processes leave their backend and pool behind."""
        return {**self.__dict__, "backend": None, "_scorer_pool": None}

    # ---- data ---------------------------------------------------------------------
    def load_rows(self) -> Iterator[dict[str, Any]]:
        """Raw rows, one at a time: from the local mirror when a data dir is set, else from
        the hub (memory-mapped by `datasets`). Missing files raise at once; rows are read
        as they are consumed (JSONL line by line, parquet by batches, CSV row by row)."""
        return self.row_source().rows()

    def row_source(self) -> RowSource:
        """Where the rows come from. A missing local copy is a DataNotFoundError saying what
        the data dir holds for this env instead, what its rows lack, and how to get the copy."""
        from skyeval.envs.data import resolve_data_dir, what_is_there

        try:
            return RowSource.of(self.name, self.data_dir, self.local_files, self.hf_id, self.split, self.hf_subset)
        except DataNotFoundError as err:
            root = resolve_data_dir(self.data_dir)
            if root is None or not (self.local_copy or self.row_fields):
                raise
            wanted = [self.local_files] if isinstance(self.local_files, str) else list(self.local_files or [])
            missing = [pattern for pattern in wanted if not any(root.glob(pattern))]
            message = (f"env {self.name!r} reads {', '.join(wanted)} under {root}; "
                       f"missing: {', '.join(missing) if len(missing) < len(wanted) else 'all of them'}. "
                       if missing else f"{err}. ")
            message += what_is_there(root / self.name, self.row_fields) + "."
            if self.local_copy:
                message += f" Get them with: {self.local_copy.format(data_dir=root)}"
            raise DataNotFoundError(message) from None

    @property
    def own_layout(self) -> bool:
        """Whether the env reads a file layout of its own (`load_rows` overridden, as aime25's
        MathArena folders): `read_dataset` then streams it in one Ray task."""
        return type(self).load_rows is not Env.load_rows

    def check_data(self) -> None:
        """Read every line of the env's local JSONL files once (before a run claims its
        folder): the first line that is not JSON is a DataFileError naming the file and the
        line. Hub data, other formats and layouts of the env's own are checked as read."""
        from skyeval.envs.data import check_lines, resolve_data_dir

        if not self.own_layout and self.local_files and resolve_data_dir(self.data_dir) is not None:
            check_lines(self.row_source().paths or [])

    def to_problem(self, row: dict[str, Any], index: int) -> dict[str, Any]:
        """One raw row -> {"id", "question", "expected", ...}."""
        raise NotImplementedError(f"{type(self).__name__} must implement to_problem(row, index)")

    def keep(self, problem: dict[str, Any]) -> bool:
        """Row filter applied before `limit` (knobs like difficulty use it)."""
        return True

    def date_of(self, problem: dict[str, Any]) -> str | None:
        """The problem's date, `YYYY-MM` or `YYYY-MM-DD` (None for an undated benchmark or
        problem): its `date_field`."""
        return None if self.date_field is None else problem_date(problem.get(self.date_field))

    def selected(self, problem: dict[str, Any]) -> bool:
        """Whether a problem is run: `keep` and, for a dated benchmark, in the date window."""
        return self.keep(problem) and (not self.window.active or self.window.holds(self.date_of(problem)))

    def iter_problems(self, on_error: Callable[[int, Exception], None] | None = None) -> Iterator[dict[str, Any]]:
        """The env's problems, filtered (`keep`, the date window) and limited, as plain
        dicts, one at a time. A row that can't be read (its date included) raises, or with
        `on_error` is reported as (row index, error) and skipped. A date window that holds
        no problem raises a ConfigError naming the data's dates."""
        kept = 0
        dates = DateRange()
        for index, row in enumerate(self.load_rows()):
            if self.limit is not None and kept >= self.limit:
                return
            try:
                problem = self.to_problem(row, index)
                self.check_gold(problem, allow_none=True)  # no gold: scored null; a malformed one: this row fails
                if self.date_field is not None:
                    dates.add(self.date_of(problem))
            except Exception as err:  # noqa: BLE001 - a malformed row
                if on_error is None:
                    raise ValueError(f"env {self.name!r}: row {index} is malformed: {type(err).__name__}: {err}") from err
                on_error(index, err)
                continue
            if self.selected(problem):
                kept += 1
                yield problem
        if self.window.active and kept == 0 and self.limit != 0:
            raise ConfigError(f"env {self.name!r}: no problem in the date window {self.window.describe()}; "
                              f"{dates.describe()}")

    def describe_window(self) -> dict[str, Any]:
        """summary.json's `date_window` (the window, inclusive, and the field it reads);
        {} without a window."""
        if not self.window.active:
            return {}
        return {"date_window": {"start_date": self.start_date, "end_date": self.end_date,
                                "date_field": self.date_field, "shown": self.window.describe()}}

    def check_window(self) -> None:
        """Raise the ConfigError of a date window that holds no problem, before any work
        (reads until the first problem in the window; nothing without a window)."""
        if self.window.active:
            next(iter(self.iter_problems(on_error=lambda index, err: None)), None)

    def load_problems(self, on_error: Callable[[int, Exception], None] | None = None) -> list[dict[str, Any]]:
        """All of `iter_problems` in a list (small benchmarks and tests only)."""
        problems = list(self.iter_problems(on_error))
        ids = [p["id"] for p in problems]
        if len(set(ids)) != len(ids):
            raise ValueError(f"env {self.name!r} produced duplicate problem ids")
        return problems

    def read_dataset(self, engine: str | None = None) -> "ray.data.Dataset":
        """The problems as a lazy Dataset (`ds.limit`, `ds.filter`, `ds.groupby` work).

        `engine`: "ray" (a `ray.data.Dataset`: rows stream in blocks from parallel read
        tasks, JSONL byte ranges, parquet row groups, hub row ranges), "local" (a
        `skyeval.envs.local.LocalDataset`: the same API and rows, in this process,
        without starting Ray) or "auto" (the default, or $SKYEVAL_DATASET_ENGINE): Ray
        when a cluster is named (RAY_ADDRESS), Ray is already running here, or the env has
        more than `LOCAL_MAX_PROBLEMS` problems; else local. `limit` is `ds.limit`. Rows
        keep the file order. Envs with a layout of their own (aime25's MathArena folders,
        APPS problem folders) are read by one task streaming `load_rows()`."""
        import itertools

        from skyeval.envs.local import LOCAL_MAX_PROBLEMS, LocalDataset, choose_engine

        engine = choose_engine(engine)
        if engine != "ray":
            wanted = self.limit if engine == "local" else LOCAL_MAX_PROBLEMS + 1
            problems = list(itertools.islice(self.iter_problems(), wanted))
            if engine == "local" or len(problems) <= LOCAL_MAX_PROBLEMS:
                return LocalDataset.from_rows(problems)
        from skyeval.envs.dataset import read_problems

        self.check_window()
        ds = read_problems(self)
        return ds if self.limit is None else ds.limit(self.limit)

    # ---- prompting and generation -----------------------------------------------------
    def setup(
        self,
        model_config: Any,
        scaling_config: ScalingConfig | None = None,
        template: Template | str | list | dict | None = None,
        sampling_params: SamplingParams | dict | None = None,
        tools: ToolsConfig | dict | None = None,
    ) -> "Env":
        """Attach a backend (built from a model config such as `HTTPConfig`) and options.

        `template` is a string (a completion prompt), a list of chat messages, a dict of
        Template fields or a `Template`; None keeps the current one. `tools` (a
        `ToolsConfig` or its fields, e.g. `{"name": "python"}`) gives the model a tool;
        with a tool or budget forcing (`sampling_params.min_thinking_tokens`) the backend
        is wrapped in a `skyeval.tools.TurnLoop`. Calling `setup` again closes the backend
        it replaces."""
        if template is not None:
            self.template = Template.of(template).merged_over(self.default_template)
        if isinstance(sampling_params, dict):
            sampling_params = SamplingParams(**sampling_params)
        self.sampling = sampling_params or self.sampling
        if tools is not None:
            self.tools = tools if isinstance(tools, ToolsConfig) else ToolsConfig(**tools)
        self.close()
        self.model_config, self.scaling_config = model_config, scaling_config or ScalingConfig()
        self.model_source = getattr(model_config, "model_source", None)
        self.backend = self.build_backend(model_config, self.scaling_config)
        return self

    def build_backend(self, model_config: Any, scaling_config: ScalingConfig | None = None) -> Any:
        """The backend of `model_config`, in a turn loop when this env's tools or sampling
        need one."""
        backend = model_config.build(scaling_config)
        tools = getattr(self, "tools", None) or ToolsConfig()
        if needs_loop(tools, self.sampling):
            return TurnLoop(backend, tools, getattr(model_config, "think_tags", None))
        return backend

    def close(self) -> None:
        """Stop what the backend started (the HTTP client's loop thread, a vLLM engine).
        Safe to call twice; `with env:` calls it on exit."""
        backend, self.backend = self.backend, None
        if backend is not None:
            backend.close()
        pool, self._scorer_pool = self.__dict__.get("_scorer_pool"), None
        if pool is not None:
            pool.close()

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

    def stream_generations(self, problems: Iterable[dict[str, Any]]) -> Iterator[GenerationResult]:
        """Results of every sample of the given problems (templated here if they have no
        `prompt`), as they complete. Requests are built as the backend takes them."""
        if self.backend is None:
            raise ConfigError("call env.setup(model_config=...) before generating")
        samples = list(range(self.sampling.n))
        requests = (self.request_for(self._templated(p), samples) for p in problems)
        return self.backend.generate(requests, self.sampling)

    def generate(self, ds: "ray.data.Dataset") -> "ray.data.Dataset":
        """A lazy transform: one row per sample, with the problem's fields, `prompt`,
        `sample_idx`, `generation`, `finish_reason`, `usage`, `error`, `error_type`. Nothing
        runs until the result is consumed. Each of `scaling_config.num_replicas` Ray actors
        builds the backend from the model config given to `setup` and generates batches of
        `scaling_config.batch_size` problems; a failed sample is a row with `error` set.
        Every consumption runs the chain again, generation included: `env.save` it once
        (or `materialize()` a small one) before computing several figures from it."""
        from skyeval.envs.batches import GenerateBatch
        from skyeval.envs.local import LocalDataset

        model = getattr(self, "model_config", None) or self.backend
        if model is None:
            raise ConfigError("call env.setup(model_config=...) before generating")
        scaling = getattr(self, "scaling_config", None) or ScalingConfig()
        if isinstance(ds, LocalDataset):  # in this process, on the backend `setup` built
            return ds.map_batches(GenerateBatch, fn_constructor_args=(self, self.backend or model, scaling, self.sampling),
                                  batch_size=scaling.batch_size, batch_format="pyarrow", progress="generate")
        import ray.data

        return ds.map_batches(
            GenerateBatch,
            fn_constructor_args=(self, model, scaling, self.sampling),
            batch_size=scaling.batch_size,
            batch_format="pyarrow",
            compute=ray.data.ActorPoolStrategy(size=scaling.num_replicas),
        )

    def _templated(self, item: dict[str, Any]) -> dict[str, Any]:
        return item if item.get("prompt") is not None else self.apply_prompt_template_on_item(item)

    # ---- scoring ------------------------------------------------------------------------
    def check_gold(self, item: dict[str, Any], allow_none: bool = False, where: str = "") -> None:
        """Raise GoldError when a gold the item carries (its `required_keys`) is malformed:
        None (unless `allow_none`: a problem without a gold fails as such), empty, of the
        wrong type or unparseable. A missing key is left to the caller's own message."""
        for key in self.required_keys:
            if key not in item or (item[key] is None and allow_none):
                continue
            expected = self.gold_problem(key, item[key], item)
            if expected is not None:
                raise GoldError(self.name, key, expected, item[key], where)

    def gold_problem(self, key: str, value: Any, item: dict[str, Any]) -> str | None:
        """What gold `key` must be when `value` is not that, else None. Base: an answer
        string (or a number), or a non-empty list of them."""
        def answer(v: Any) -> bool:
            return (isinstance(v, str) and bool(v.strip())) or (isinstance(v, (int, float)) and not isinstance(v, bool))

        ok = answer(value) or (isinstance(value, list) and bool(value) and all(map(answer, value)))
        return None if ok else "a non-empty answer string (or a list of them)"

    def gold_hash(self, problem: dict[str, Any]) -> str:
        """A hash of what a sample of `problem` is scored against (its `required_keys`): a
        score record keeps it, and a resume reuses the score only for the same gold."""
        from skyeval.results import content_hash

        return content_hash({key: problem.get(key) for key in self.required_keys})

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

    def unit_metrics(self) -> dict[str, str]:
        """Metrics over units smaller than a sample, for summary.json (IFEval: its
        instructions): metric name -> the score column counting the units a sample passed.
        `units(problem)` says how many units a sample of the problem has. {} for none."""
        return {}

    def units(self, problem: dict[str, Any]) -> dict[str, int]:
        """How many units of each of `unit_metrics` a sample of this problem has."""
        return {}

    def score_item(self, item: dict[str, Any]) -> dict[str, Any]:
        """Score one sample: `item` has `generation` and `expected`; returns at least
        {"score": float 0..1}, the primary scorer's fields (e.g. `extracted`), and with
        several scorers one column per scorer (its score) plus `<name>_<field>` for its
        other fields. Must not raise for any generation text."""
        scorers = self.scoring_functions()
        if not scorers:
            raise NotImplementedError(f"{type(self).__name__} must implement scoring_functions() or score_item(item)")
        self.check_gold(item)
        primary = self.primary_scorer()
        results = {name: _scored(name, scorer(self) if isinstance(scorer, type) else scorer, item)
                   for name, scorer in scorers.items()}
        out = dict(results[primary])
        if len(results) > 1:
            for name, result in results.items():
                out[name] = result["score"]
                out.update({f"{name}_{key}": value for key, value in result.items() if key != "score"})
        return out

    def scorer_pool(self, workers: int | None = None, item_timeout_s: float = 60.0) -> "ScorerPool":
        """`score_item` on a persistent pool of worker processes (`skyeval.scorers.pool`),
        started at the first call and reused until `close`; asking for other settings
        replaces it."""
        from skyeval.scorers.pool import ScorerPool

        wanted = (workers or len(os.sched_getaffinity(0)), float(item_timeout_s))
        with _POOL_LOCK:
            pool = self.__dict__.get("_scorer_pool")
            if pool is None or pool.closed or (pool.workers, pool.item_timeout_s) != wanted:
                if pool is not None:
                    pool.close()
                pool = self._scorer_pool = ScorerPool(self.score_item, wanted[0], item_timeout_s=wanted[1])
            return pool

    def score_batch(self, items: Iterable[dict[str, Any]], workers: int | None = None,
                    item_timeout_s: float = 60.0) -> list[dict[str, Any]]:
        """`score_item` of every item (each with `generation` and the env's `required_keys`),
        in order, in parallel on `scorer_pool`. Never raises on a generation: an item that
        ran past `item_timeout_s`, crashed its worker twice or made the scorer raise scores
        0.0 with the reason in `score_error` (None on the others). A missing key, a generation
        that is not a string or a malformed gold (`check_gold`: GoldError) is the caller's
        error (a ValueError), raised before anything is scored; workers that cannot score at
        all (they could not start) raise InfrastructureError, never a 0."""
        from skyeval.scorers.pool import ItemFailure

        items = list(items)
        for index, item in enumerate(items):
            missing = [key for key in ("generation", *self.required_keys) if key not in item]
            if missing or not isinstance(item["generation"], str):
                problem = f"lacks {missing}" if missing else f"has a {type(item['generation']).__name__} generation, not a string"
                raise ValueError(f"score_batch of env {self.name!r}: item {index} {problem}")
            self.check_gold(item, where=f" of item {index}")
        results = self.scorer_pool(workers, item_timeout_s).map(items)
        return [{"score": 0.0, "score_error": r.reason} if isinstance(r, ItemFailure) else {**r, "score_error": None}
                for r in results]

    def describe_scoring(self) -> dict[str, Any]:
        """What else decides the scores, for summary.json (code envs: the sandbox); may
        check it works, raising before anything is generated."""
        return {}

    def score(self, ds_or_item: "ray.data.Dataset | dict[str, Any]") -> Any:
        """Score one item (a dict: `score_item`, with a clear error for a missing key) or
        every row of a Dataset, as a lazy transform run in parallel across cores.

        Rows that can't be scored keep `score` null, with the reason in `score_error`:
        a failed generation (`error` set, or `generation` None), a problem without a
        reference (a None value of the env's `required_keys`, by default `("expected",)`),
        a key the scorer needs but the row lacks, or a scorer that raised. They are never
        scored 0. So `ds.mean("score")` (Ray skips nulls) is the scored-only accuracy and
        `ds.sum("score") / ds.count()` the accuracy counting them as wrong (the CLI's
        headline). In a best-of-N, `ds.groupby("id").max("score")` skips them; inside
        `map_groups` their score is NA, so `max(g["score"])` raises "boolean value of NA is
        ambiguous": use `batch_format="pandas"` and `g["score"].max()` (scored only) or
        `g["score"].fillna(0.0).max()` (failed samples count as wrong).
        """
        from skyeval.envs.local import LocalDataset

        if isinstance(ds_or_item, dict):
            return RowScorer(self).score(ds_or_item)
        if isinstance(ds_or_item, LocalDataset):  # in this process, with a bar on a terminal
            return ds_or_item.map_batches(RowScorer(self), batch_size=64, batch_format="pyarrow", progress="score")
        return ds_or_item.map_batches(RowScorer(self), batch_format="pyarrow")

    # ---- saving -------------------------------------------------------------------------
    def save(self, ds: "ray.data.Dataset", path: str | os.PathLike, format: str | None = None) -> Path:
        """Write a Dataset (a Ray Dataset or the in-process one `read_dataset` returns for
        small data). Returns `path`.

        - A path ending in `.jsonl` or `.parquet` is ONE file of every row (scored or
          not, with `score` and `score_error`), that `pandas.read_parquet` /
          `read_json(lines=True)` and `datasets` read; it is replaced if it exists.
        - Any other path is a folder in the run-folder layout, written as part files as
          rows stream in: `generations/` (samples generated), `scores/` (rows with a
          non-null score), `failures/` (failed generations and null scores, with the error
          and `stage`), and `logs.txt` (rows per folder). A scored row lands in exactly
          one of scores/ or failures/. `format`: "jsonl" (the default) or "json" (both
          JSON Lines, `part-*.jsonl`, readable by `skyeval.results.iter_records`) or
          "parquet".

        `format` may be left out for a file (the suffix says it); one that contradicts the
        suffix is a ConfigError."""
        from skyeval.envs.saving import save_target, write_file

        single, format = save_target(path, format)
        path = Path(path).resolve()  # Ray workers write it, from another working directory
        if single:
            write_file(ds.iter_batches(batch_size=None, batch_format="pyarrow"), path, format)
            return path
        if getattr(ds, "save_folder", None) is not None:  # the in-process Dataset
            ds.save_folder(path, format)
            return path
        from skyeval.envs.dataset import RunFolderSink
        from skyeval.envs.saving import check_empty

        check_empty(path)
        ds.write_datasink(RunFolderSink(path, format))
        return path


class RowScorer:
    """Scorer shipped to Ray workers (`map_batches` over Arrow blocks, or one row): a
    row that can't be scored gets `score` None and `score_error`, never an exception."""

    def __init__(self, env: Env) -> None:
        self.env = env

    def score(self, item: dict[str, Any]) -> dict[str, Any]:
        """`score_item`, with a KeyError for a key the item lacks turned into a clear error."""
        try:
            return self.env.score_item(item)
        except KeyError as err:
            key = err.args[0] if err.args else None
            if key is None or key in item:
                raise
            raise ValueError(
                f"score_item of env {self.env.name!r} needs key {key!r}, which this item lacks "
                "(rows from env.read_dataset() have it)"
            ) from None

    def __call__(self, row: "dict[str, Any] | pyarrow.Table") -> Any:
        if not isinstance(row, dict):  # an Arrow block
            rows = [self(r) for r in row.to_pylist()]
            keys = dict.fromkeys(k for r in rows for k in r)
            return {key: [r.get(key) for r in rows] for key in keys}
        return {**row, **self.outcome(row)}

    def outcome(self, row: dict[str, Any]) -> dict[str, Any]:
        """The scorer's fields for one row, with `score_error` set (and `score` None) when
        the row can't be scored or the scorer raised."""
        reason = self._unscorable(row)
        if reason is not None:
            return {"score": None, "score_error": reason}
        try:
            return {**self.score(row), "score_error": None}
        except Exception as err:  # noqa: BLE001 - a failure record, not a crash
            return {"score": None, "score_error": f"{type(err).__name__}: {err}"}

    def _unscorable(self, row: dict[str, Any]) -> str | None:
        if row.get("error") is not None:
            return f"generation failed: {row.get('error_type') or 'Error'}: {row['error']}"
        if "generation" in row and row["generation"] is None:
            return "generation failed: no generation"
        for key in self.env.required_keys:
            if key in row and row[key] is None:
                return f"no {key} for this problem: nothing to score against"
        return None

def _scored(name: str, scorer: Callable[[dict[str, Any]], Any], item: dict[str, Any]) -> dict[str, Any]:
    """A scorer's result as a dict with a float `score`."""
    result = scorer(item)
    if isinstance(result, dict):
        if "score" not in result:
            raise TypeError(f"scorer {name!r} returned a dict without 'score': {sorted(result)}")
        return {**result, "score": float(result["score"])}
    return {"score": float(result)}


class DateRange:
    """The earliest and latest of the problem dates seen (for the empty-window error)."""

    def __init__(self) -> None:
        self.first: str | None = None
        self.last: str | None = None
        self.undated = 0

    def add(self, date: str | None) -> None:
        if date is None:
            self.undated += 1
            return
        self.first = date if self.first is None or date < self.first else self.first
        self.last = date if self.last is None or date > self.last else self.last

    def describe(self) -> str:
        if self.first is None:
            return "the data has no problem dates"
        undated = f" ({self.undated} problems have none)" if self.undated else ""
        return f"the data's dates run {self.first} .. {self.last}{undated}"


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
