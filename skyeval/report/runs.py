"""Run folders as the views read them: the summary's headline fields, its selection, and
each sample's outcome.

Every view reads exactly the samples the summary counts (`skyeval.results.Selection`).
Missing fields stay None (shown as "—"); outcomes stream from the part files."""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skyeval.errors import DataNotFoundError
from skyeval.metrics import CORRECT
from skyeval.results import Selection, read_json

DASH = "—"
SETTLED = ("complete", "complete_with_failures")  # statuses of runs that finished their selection
NOT_SETTINGS = ("logging", "shard", "data_dir", "dry_run", "overwrite", "retry_failures", "imports", "scaling",
                "stage")  # config sections that do not change a run's numbers


@dataclass
class RunInfo:
    """One run folder's summary, flattened to what tables and plots show."""

    path: Path
    env: str
    model: str
    status: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    n: int | None = None
    counts: dict[str, int] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    stage: str | None = None
    grading: dict[str, Any] = field(default_factory=dict)  # summary.json `grading` (a judge's part), if any
    machine: dict[str, Any] = field(default_factory=dict)  # summary.json `machine` (older runs: none)

    @classmethod
    def load(cls, path: str | os.PathLike) -> "RunInfo":
        path = Path(path)
        summary = _read_summary(path)
        if summary is None:
            raise DataNotFoundError(f"{path} is not a run folder (no summary.json)")
        config = summary.get("config") or {}
        sampling = config.get("sampling_params") or {}
        model = summary.get("model") or (config.get("model_config") or {}).get("model_source") or DASH
        return cls(
            path=path,
            env=str(summary.get("env") or DASH),
            model=str(model),
            status=summary.get("status"),
            temperature=_number(sampling.get("temperature")),
            max_tokens=_number(sampling.get("max_tokens")),
            n=_number(sampling.get("n")),
            counts=summary.get("counts") or {},
            metrics=summary.get("metrics") or {},
            config=config,
            stage=summary.get("stage"),
            grading=summary.get("grading") or {},
            machine=summary.get("machine") or {},
        )

    @property
    def selection(self) -> Selection:
        return Selection.of(self.path, {"config": self.config, "stage": self.stage})

    @property
    def marker(self) -> str:
        """"" for a run that finished its selection, else e.g. "interrupted: 73 of 300 problems, 10 samples missing"."""
        if self.status is None or self.status in SETTLED:
            return ""
        missing = self.counts.get("missing")
        limit = (self.config.get("env") or {}).get("limit")
        of = f" of {limit}" if isinstance(limit, int) and limit != self.counts.get("problems") else ""
        problems = self.counts.get("problems")
        return (f"{self.status}: {fmt(problems)}{of} problem{'' if problems == 1 and not of else 's'}"
                + (f", {missing} sample{'' if missing == 1 else 's'} missing" if missing else ""))

    @property
    def accuracy(self) -> float | None:
        return _number(self.metrics.get("accuracy"))

    def interval(self, metric: str = "accuracy") -> dict[str, Any] | None:
        """The summary's interval for `metric` ("accuracy", "pass@1", ...) if it has one with both bounds."""
        found = (self.metrics.get("intervals") or {}).get(metric)
        if not isinstance(found, dict) or not found.get("ci95") or None in found["ci95"]:
            return None  # none, or none computable (one problem: no spread to estimate)
        low, high = found["ci95"]
        problems = found.get("problems")
        return {**found, "low": low, "high": high, "n_problems": problems,
                "n_samples": (found.get("n") or 0) * (problems or 0)}

    @property
    def pass_at_k(self) -> dict[int, float]:
        return {int(k): float(v) for k, v in (self.metrics.get("pass@k") or {}).items()
                if v is not None and k.isdigit()}  # "1:n=64" keys (user-selected metrics) are not a curve

    @property
    def truncated_rate(self) -> float | None:
        return _number(self.metrics.get("truncated_rate"))

    @property
    def judged(self) -> str:
        """"2 of 6 (fallback)": the samples a judge decided, or — without a judge."""
        if not self.grading:
            return DASH
        by = self.grading.get("graded_by") or {}
        return f"{by.get('judge', 0)} of {sum(by.values())} ({self.grading.get('mode')})"

    @property
    def machine_text(self) -> str:
        """"2× NVIDIA A100-SXM4-80GB (80 GB), driver 535.104.05, CUDA 12.2; 64 CPUs AMD EPYC
        7B13, 503 GiB; vLLM 0.8.4, torch 2.6.0" (summary.json `machine`), or —."""
        m = self.machine
        if not m:
            return DASH
        parts = []
        gpus = Counter(str(g.get("name") or "GPU") + (f" ({round(g['memory_mib'] / 1024)} GB)" if g.get("memory_mib")
                                                      else "") for g in m.get("gpus") or [] if isinstance(g, dict))
        if gpus:
            parts.append(", ".join(f"{count}× {kind}" for kind, count in gpus.items())
                         + "".join(f", {label} {m[key]}" for key, label in (("gpu_driver", "driver"), ("cuda", "CUDA"))
                                   if m.get(key)))
        cpu = m.get("cpu") or {}
        parts.append(" ".join(str(x) for x in (cpu.get("usable") or cpu.get("count"), "CPUs", cpu.get("model")) if x)
                     + (f", {m['memory_gib']:g} GiB" if m.get("memory_gib") else ""))
        parts.append(", ".join(f"{name} {m[key]}" for key, name in (("vllm", "vLLM"), ("torch", "torch")) if m.get(key)))
        return "; ".join(part for part in parts if part)

    @property
    def failed_rate(self) -> float | None:
        samples, failed = self.counts.get("samples"), self.counts.get("failed")
        return failed / samples if samples and failed is not None else None

    def settings(self) -> dict[str, Any]:
        return {"T": self.temperature, "max_tokens": self.max_tokens, "n": self.n}

    def knobs(self) -> dict[str, Any]:
        """Every config value that can change the run's numbers, flattened ("env.limit": 5,
        "template.system_prompt": ...), the model left out (it has its own column)."""
        flat: dict[str, Any] = {}

        def walk(prefix: str, value: Any) -> None:
            if isinstance(value, dict) and value:
                for key, inner in value.items():
                    walk(f"{prefix}.{key}" if prefix else str(key), inner)
            else:
                flat[prefix] = json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) else value

        config = dict(self.config)
        if (config.get("grading") or {}).get("mode", "off") == "off":  # no judge: its settings change nothing
            config["grading"] = {"mode": "off"}
        walk("", {k: v for k, v in config.items() if k not in NOT_SETTINGS})
        for key in ("model_config.model_source", "env.name", "env.data_dir", "env._target_"):
            flat.pop(key, None)
        return flat


def is_run_folder(path: Path) -> bool:
    """A folder whose summary.json describes a run (it has the contract's `counts`): an
    `audit/` folder's summary.json, or a curated dataset's, is not one."""
    summary = _read_summary(path)
    return isinstance(summary, dict) and isinstance(summary.get("counts"), dict)


def find_runs(roots: list[str | os.PathLike]) -> list[RunInfo]:
    """Every run folder (`is_run_folder`) under the given roots, sorted by path. A run
    folder's own subfolders (generations/, audit/, report/ ...) are not entered."""
    runs: dict[Path, RunInfo] = {}
    for root in map(Path, roots):
        if not root.is_dir():
            raise DataNotFoundError(f"{root} is not a folder")
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d != "report" and not d.startswith("."))
            if "summary.json" in filenames and is_run_folder(Path(dirpath)):
                path = Path(dirpath).resolve()
                runs[path] = RunInfo.load(path)
                dirnames[:] = []
    return [runs[p] for p in sorted(runs)]


@dataclass(slots=True)
class SampleOutcome:
    """One sample's result: its score (failed samples score 0, as in the headline metrics)."""

    score: float
    failed: bool = False

    @property
    def correct(self) -> bool:
        return self.score >= CORRECT


def outcomes(run_dir: str | os.PathLike, selection: Selection | None = None) -> dict[tuple[str, int], SampleOutcome]:
    """(problem id, sample index) -> SampleOutcome for every scored or failed sample of the
    run's selection (default: its summary's)."""
    selection = selection or Selection.of(run_dir)
    found: dict[tuple[str, int], SampleOutcome] = {}
    for record in selection.records(run_dir, "failures"):
        found[(str(record["id"]), int(record["sample_idx"]))] = SampleOutcome(0.0, failed=True)
    for record in selection.records(run_dir, "scores"):
        found[(str(record["id"]), int(record["sample_idx"]))] = SampleOutcome(float(record.get("score") or 0.0))
    return found


def varying(runs: list[RunInfo]) -> list[str]:
    """The settings (`RunInfo.knobs`) whose values differ among `runs`, in a stable order.
    A setting some summaries lack (older runs) is unknown there, not different."""
    knobs = [run.knobs() for run in runs]
    names = sorted(set.intersection(*(set(kn) for kn in knobs)) if knobs else (), key=setting_order)
    return [k for k in names if len({json.dumps(kn.get(k), sort_keys=True, default=str) for kn in knobs}) > 1]


def describe(run: RunInfo, keys: list[str]) -> str:
    """" · T=0.7 · env.limit=50" for the given settings of a run."""
    knobs = run.knobs()
    return "".join(f" · {_short_name(k)}={_value(knobs.get(k))}" for k in keys)


def setting_order(key: str) -> tuple[int, str]:
    first = ("sampling_params.temperature", "sampling_params.n", "sampling_params.max_tokens")
    return (first.index(key), "") if key in first else (len(first), key)


def _short_name(key: str) -> str:
    return {"sampling_params.temperature": "T", "sampling_params.n": "n",
            "sampling_params.max_tokens": "max_tokens"}.get(key, key.removeprefix("sampling_params."))


def _value(value) -> str:
    if value is None:
        return DASH
    if isinstance(value, float):
        return format(value, "g")
    text = str(value)
    return text if len(text) <= 40 else text[:39] + "…"


def natural_key(text: str) -> list:
    """Sort key that orders "2" before "10" and "test/9" before "test/10"."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", str(text))]


def fmt(value: Any, digits: int = 3) -> str:
    """A number for tables: "—" when missing."""
    if value is None:
        return DASH
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _read_summary(path: Path) -> dict[str, Any] | None:
    return read_json(path / "summary.json")


def _number(value: Any) -> Any:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
