"""PNG plots of a set of runs (matplotlib with the Agg backend, imported only here).

Plots say what they show: an interval is named in a label only where one is drawn;
accuracy axes start at 0, so a flat line stays flat; every run of a plot's benchmark
appears in it or is named in a note under it with the reason; a chart with nothing to
show is not written, and `Plots.skipped` says why (summary.md shows it)."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skyeval.errors import MissingDependencyError
from skyeval.report.runs import RunInfo, describe, varying


def _pyplot():
    try:
        import matplotlib
    except ImportError as err:
        raise MissingDependencyError("`skyeval report` draws its plots with matplotlib: pip install matplotlib") from err
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


@dataclass
class Plots:
    """The plots of a report: `made` {title: file name} in display order, and `skipped`
    {title: why it has nothing to show} for the charts not written."""

    made: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)


RATES_TITLE = "truncated and failed samples per run"


def write_plots(runs: list[RunInfo], labels: list[str], out_dir: Path, cutoff: str | None = None) -> Plots:
    """Draw every plot the runs have data for into `out_dir`. `cutoff` (`YYYY-MM`) marks a
    training cutoff on the accuracy-by-month plot."""
    plt = _pyplot()
    plots = Plots()

    def save(fig, title: str, name: str, why_not: str) -> None:
        if fig is None:
            plots.skipped[title] = why_not
            (out_dir / name).unlink(missing_ok=True)  # an earlier report's chart would show what this one does not
            return
        fig.savefig(out_dir / name, bbox_inches="tight")
        plots.made[title] = name
        plt.close(fig)

    fig = by_month_figure(plt, runs, labels, cutoff)
    if fig is not None:  # a report without dated runs has no such chart to miss
        save(fig, BY_MONTH_TITLE, BY_MONTH_PNG, "")
    by_env: dict[str, list[tuple[RunInfo, str]]] = defaultdict(list)
    for run, label in zip(runs, labels):
        by_env[run.env].append((run, label))
    for env, group in sorted(by_env.items()):
        for title, name, draw, why_not in (
            (f"pass@k on {env}", f"pass_at_k_{env}.png", _pass_at_k,
             "no run has pass@k at two or more k (n ≥ 2 samples per problem)"),
            (f"accuracy vs temperature on {env}", f"accuracy_vs_temperature_{env}.png", _versus("temperature"),
             "no two runs of a model differ in temperature alone"),
            (f"accuracy vs token budget on {env}", f"accuracy_vs_budget_{env}.png", _versus("max_tokens"),
             "no two runs of a model differ in max_tokens alone, and no run has a budget curve"),
        ):
            save(figure(plt, title, draw, group), title, name, why_not)
    if runs:
        save(_rates(plt, runs, labels), RATES_TITLE, "rates.png", "no run has truncated or failed samples")
    return plots


BY_MONTH_PNG = "accuracy_by_month.png"
BY_MONTH_TITLE = "accuracy by month of the problems' dates"


def by_month_figure(plt, runs: list[RunInfo], labels: list[str], cutoff: str | None = None):
    """Accuracy per month of the problems' dates: one line per dated run (its summary's
    `metrics.by_month`) with its 95% interval as a band where it has one, and the cutoff as
    a dashed line after its month. None when no run is dated."""
    dated = [(run, label) for run, label in zip(runs, labels) if run.metrics.get("by_month")]
    if not dated:
        return None
    months = sorted({m for run, _ in dated for m in run.metrics["by_month"]})
    position = {m: i for i, m in enumerate(months)}
    fig, ax = plt.subplots(figsize=(max(6.4, 0.45 * len(months) + 2.5), 4.0), dpi=100)
    banded = False
    for run, label in dated:
        points = sorted(run.metrics["by_month"].items())
        xs = [position[m] for m, _ in points]
        ys = [p["accuracy"] for _, p in points]
        line = ax.plot(xs, ys, marker="o", label=label)[0]
        if any(_ci(p) for _, p in points):
            lows = [_ci(p)[0] if _ci(p) else y for (_, p), y in zip(points, ys)]
            highs = [_ci(p)[1] if _ci(p) else y for (_, p), y in zip(points, ys)]
            ax.fill_between(xs, lows, highs, color=line.get_color(), alpha=0.15)
            banded = True
    if cutoff is not None:
        before = [i for m, i in position.items() if m <= cutoff]
        ax.axvline((max(before) + 0.5) if before else -0.5, color="#b00020", linestyle="--",
                   label=f"training cutoff {cutoff}")
    ax.set_xticks(range(len(months)), months, rotation=45, ha="right", fontsize=8)
    ax.set_xlabel("month of the problem's date")
    ax.set_ylabel("accuracy (95% interval shaded)" if banded else "accuracy")
    ax.set_title(BY_MONTH_TITLE)
    ax.grid(alpha=0.3)
    from_zero(ax)
    legend_outside(ax)
    left_out(fig, [(label, "no problem dates in its summary") for run, label in zip(runs, labels)
                   if not run.metrics.get("by_month")])
    return fig


def _ci(point: dict[str, Any]) -> list[float] | None:
    ci = point.get("ci95")
    return ci if ci and None not in ci else None


def figure(plt, title: str, draw, group: list[tuple[RunInfo, str]]):
    """One plot of `group` by `draw`, its legend outside the axes and, under it, the runs of
    `group` it leaves out and why; None when there is nothing to draw. `draw(ax, group)`
    returns None for nothing to draw, else [(run label, why it is left out)]."""
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=100)
    missing = draw(ax, group)
    if missing is None:
        plt.close(fig)
        return None
    ax.set_title(title)
    ax.grid(alpha=0.3)
    from_zero(ax)
    legend_outside(ax)
    left_out(fig, missing)
    return fig


def from_zero(ax) -> None:
    """A share's axis from 0 (up to 1 at most): a flat line is never zoomed into a slope."""
    top = ax.get_ylim()[1]
    ax.set_ylim(0.0, min(1.05, max(top, 0.1)))


LEFT_OUT_LINES = 8


def left_out(fig, missing: list[tuple[str, str]]) -> None:
    """A note under the figure naming each run of its benchmark it does not show, and why."""
    if not missing:
        return
    lines = [f"not shown: {label} ({why})" for label, why in missing[:LEFT_OUT_LINES]]
    if len(missing) > LEFT_OUT_LINES:
        lines.append(f"and {len(missing) - LEFT_OUT_LINES} more runs")
    below = min(ax.get_tightbbox(fig.canvas.get_renderer()).transformed(fig.transFigure.inverted()).y0
                for ax in fig.axes)  # under the tick labels and the axis label
    fig.text(0.01, below - 0.02, "\n".join(lines), ha="left", va="top", fontsize=7, color="#4a5468")


def legend_outside(ax):
    """The legend to the right of the axes, so it never covers a curve."""
    return ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)


def lines_versus(group: list[tuple[RunInfo, str]], setting: str) -> dict[str, list[RunInfo]]:
    """Runs joined into one line: same model, every other setting equal, so the line shows
    `setting` alone ("temperature" or "max_tokens"). Keyed by a legend label: the model and
    the settings that tell its lines apart. Lines of one point are left out."""
    plotted = "sampling_params." + setting
    lines: dict[str, list[RunInfo]] = defaultdict(list)
    for run, _ in group:
        if getattr(run, setting) is not None and run.accuracy is not None:
            rest = {k: v for k, v in run.knobs().items() if k != plotted}
            lines[json.dumps([run.model, rest], sort_keys=True, default=str)].append(run)
    lines = {key: members for key, members in lines.items() if len({getattr(r, setting) for r in members}) >= 2}
    firsts = [members[0] for members in lines.values()]
    labelled: dict[str, list[RunInfo]] = {}
    for members in lines.values():
        model_firsts = [r for r in firsts if r.model == members[0].model]
        keys = [k for k in varying(model_firsts) if k != plotted]
        labelled[members[0].model + describe(members[0], keys)] = sorted(members, key=lambda r: getattr(r, setting))
    return labelled


def _pass_at_k(ax, group) -> list[tuple[str, str]] | None:
    drawn = shaded = False
    missing = []
    for run, label in group:
        curve = sorted(run.pass_at_k.items())
        if len(curve) < 2:
            missing.append((label, "n=1: pass@1 only" if curve else "no pass@k in its summary"))
            continue
        ks, values = zip(*curve)
        line = ax.plot(ks, values, marker="o", label=label)[0]
        lows, highs = zip(*[_bounds(run, f"pass@{k}") for k, v in curve])
        if any(lo is not None for lo in lows):
            ax.fill_between(ks, [v if lo is None else lo for lo, v in zip(lows, values)],
                            [v if hi is None else hi for hi, v in zip(highs, values)], color=line.get_color(), alpha=0.15)
            shaded = True
        drawn = True
    if not drawn:
        return None
    _log2_axis(ax)
    ax.set_xlabel("k (samples per problem)")
    ax.set_ylabel("pass@k (95% interval shaded)" if shaded else "pass@k")
    return missing


def _versus(setting: str):
    """Accuracy of runs that differ in `setting` alone (`lines_versus`), with 95% intervals as
    error bars where the summaries have them; for budgets also each run's one-run estimate at
    smaller budgets (dashed). When something is drawn, every other run of the benchmark with
    the setting and an accuracy is a point of its own (no line: no run differs from it in
    the setting alone); the rest are named as left out."""

    def draw(ax, group) -> list[tuple[str, str]] | None:
        shown: set[int] = set()
        barred = False

        def points(members: list[RunInfo], label: str, **style) -> None:
            nonlocal barred
            xs = [getattr(r, setting) for r in members]
            ys = [r.accuracy for r in members]
            bounds = [_bounds(r, "accuracy") for r in members]
            barred = barred or any(lo is not None for lo, _ in bounds)
            err = [[y - (lo if lo is not None else y) for y, (lo, _) in zip(ys, bounds)],
                   [(hi if hi is not None else y) - y for y, (_, hi) in zip(ys, bounds)]]
            ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=label, **style)
            shown.update(id(r) for r in members)

        for label, members in sorted(lines_versus(group, setting).items()):
            points(members, label)
        if setting == "max_tokens":
            for run, label in group:
                estimate = budget_points(run.metrics.get("budget_curve"))
                if len(estimate) >= 2:
                    xs, ys = zip(*estimate)
                    ax.plot(xs, ys, linestyle="--", marker=".", label=f"{label} (estimate from one run)")
                    shown.add(id(run))
        if not shown:
            return None
        missing = []
        for run, label in group:
            if id(run) in shown:
                continue
            if getattr(run, setting) is None or run.accuracy is None:
                missing.append((label, f"no {'accuracy' if run.accuracy is None else setting} in its summary"))
            else:
                points([run], f"{label} (single run)", linestyle="none")
        ax.set_xlabel("temperature" if setting == "temperature" else "max_tokens")
        if setting == "max_tokens":
            _log2_axis(ax)
        ax.set_ylabel("accuracy (bars: 95% interval)" if barred else "accuracy")
        return missing

    return draw


def _rates(plt, runs, labels):
    """Truncated and failed shares per run; None when every one is 0 (or unknown)."""
    truncated = [r.truncated_rate or 0.0 for r in runs]
    failed = [r.failed_rate or 0.0 for r in runs]
    if not any(truncated) and not any(failed):
        return None
    height = 1.2 + 0.32 * len(runs)
    fig, ax = plt.subplots(figsize=(7.5, height), dpi=100)
    ys = range(len(runs))
    ax.barh([y - 0.2 for y in ys], truncated, height=0.4, label="truncated (finish_reason = length)", color="#e0a100")
    ax.barh([y + 0.2 for y in ys], failed, height=0.4, label="failed (no score)", color="#555555")
    ax.set_yticks(list(ys), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("share of samples")
    ax.set_xlim(0, max(0.05, *truncated, *failed) * 1.15)
    legend_outside(ax)
    ax.set_title(RATES_TITLE)
    return fig


def budget_points(budget: Any) -> list[tuple[float, float]]:
    """(budget, accuracy) pairs from summary.metrics.budget, whichever of the shapes
    {"1024": 0.5}, {"1024": {"accuracy": 0.5}} or [{"max_tokens"|"budget": 1024, "accuracy": 0.5}]
    (possibly under a "rows"/"table"/"curve" key) it has."""
    if isinstance(budget, dict):
        for key in ("rows", "table", "curve", "points"):
            if isinstance(budget.get(key), (list, dict)):
                return budget_points(budget[key])
        items = budget.items()
    elif isinstance(budget, list):
        items = [(r.get("max_tokens", r.get("budget")), r) for r in budget if isinstance(r, dict)]
    else:
        return []
    points = []
    for b, value in items:
        acc = value.get("accuracy") if isinstance(value, dict) else value
        try:
            points.append((float(b), float(acc)))
        except (TypeError, ValueError):
            continue
    return sorted(points)


def _log2_axis(ax) -> None:
    from matplotlib.ticker import FormatStrFormatter, NullFormatter

    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax.xaxis.set_minor_formatter(NullFormatter())


def _bounds(run: RunInfo, metric: str) -> tuple[Any, Any]:
    interval = run.interval(metric)
    return (interval["low"], interval["high"]) if interval else (None, None)
