"""`python -m skyeval.cli report DIR... [--out DIR] [--no-viewer]`

Scans the given folders (a sweep's root, several roots, or run folders themselves) for run
folders and writes, into --out (default: report/ under the first DIR):
  index.html   the models × benchmarks table with 95% intervals, every run, the plots
  summary.md   the same tables in Markdown
  runs.csv     one row per run
  *.png        pass@k curves, accuracy vs temperature / vs budget, truncated and failed rates,
               accuracy by month (dated benchmarks; --cutoff YYYY-MM marks a training cutoff
               and adds accuracy before/after it with an unpaired test)
  viewer.html  the per-sample viewer (works from file://; copy the folder anywhere)
"""

from __future__ import annotations

import argparse
import csv
import html
import sys
from collections import defaultdict
from pathlib import Path

from skyeval.errors import ConfigError, DataNotFoundError, SkyevalError
from skyeval.report.runs import DASH, RunInfo, describe, find_runs, fmt, varying

CSV_FIELDS = ["label", "env", "model", "status", "temperature", "max_tokens", "n", "problems", "samples", "scored",
              "failed", "accuracy", "accuracy_low", "accuracy_high", "accuracy_se", "interval_method",
              "pass_at_k", "truncated_rate", "failed_rate", "parse_failure_rate", "machine", "path"]


def build_report(roots: list[str | Path], out_dir: str | Path | None = None, viewer: bool = True,
                 cutoff: str | None = None) -> Path:
    """Write the report of every run under `roots`; returns the path of index.html.
    `cutoff` (`YYYY-MM`): a training cutoff, marked on the accuracy-by-month plot and
    tested (accuracy after − before) for every dated run."""
    from skyeval.metrics.unpaired import check_month

    cutoff = None if cutoff is None else check_month(cutoff)
    runs = find_runs(roots)
    if not runs:
        raise DataNotFoundError(f"no run folder (a folder with summary.json) under {', '.join(map(str, roots))}")
    if cutoff is not None and not any(run.metrics.get("by_month") for run in runs):
        raise ConfigError("--cutoff needs runs of a dated benchmark (liveaops, livecodebench: summary.json "
                          "metrics.by_month); none of these runs has one")
    out = Path(out_dir) if out_dir else Path(roots[0]) / "report"
    out.mkdir(parents=True, exist_ok=True)
    labels = run_labels(runs)
    rows, envs, table = models_by_benchmarks(runs, labels)
    split = cutoff_rows(runs, labels, cutoff) if cutoff is not None else None

    from skyeval.report.plots import write_plots

    plots = write_plots(runs, labels, out, cutoff)
    _write_csv(runs, labels, out / "runs.csv")
    (out / "summary.md").write_text(_markdown(runs, labels, rows, envs, table, plots, split), encoding="utf-8")
    if viewer:
        from skyeval.report.viewer import write_viewer

        write_viewer(runs, labels, out)
    (out / "index.html").write_text(_html(runs, labels, rows, envs, table, plots, viewer, split), encoding="utf-8")
    return out / "index.html"


CUTOFF_HEADER = ["run", "window", "before: months", "accuracy (problems)", "after: months", "accuracy (problems)",
                 "after − before", "95% interval", "p"]


def cutoff_rows(runs: list[RunInfo], labels: list[str], cutoff: str) -> tuple[str, list[list[str]]]:
    """(cutoff, one table row per dated run): accuracy on the problems dated up to the
    cutoff month and after it, with `skyeval.metrics.unpaired.before_after`'s test."""
    from skyeval.metrics.unpaired import before_after

    rows = []
    for run, label in zip(runs, labels):
        by_month = run.metrics.get("by_month")
        if not by_month:
            continue
        window = (run.config.get("env") or {})
        shown = " .. ".join(str(window.get(k) or "") for k in ("start_date", "end_date")).strip() or "all dates"
        try:
            r = before_after(by_month, cutoff)
        except ConfigError as err:
            rows.append([label, shown, str(err), "", "", "", "", "", ""])
            continue
        b, a = r["before"], r["after"]
        rows.append([label, shown, b["months"], f"{b['accuracy']:.3f} ({b['n']})", a["months"],
                     f"{a['accuracy']:.3f} ({a['n']})", f"{r['diff']:+.3f}", f"[{r['low']:+.3f}, {r['high']:+.3f}]",
                     _p(r["p_value"])])
    return cutoff, rows


def _p(p: float) -> str:
    return "<0.001" if p < 0.001 else f"{p:.3f}"


CUTOFF_NOTE = ("before = problems dated in or before the cutoff month (a model trained until then may have seen "
               "them), after = later ones; different problems, so the test is unpaired: {test}; "
               "a drop after the cutoff suggests the model's score before it is inflated by contamination.")


def run_labels(runs: list[RunInfo]) -> list[str]:
    """"model · env", plus the settings that differ between runs of the same model and env
    (and the folder name when even those are equal)."""
    groups: dict[tuple[str, str], list[RunInfo]] = defaultdict(list)
    for run in runs:
        groups[(run.model, run.env)].append(run)
    keys = {group: varying(members) for group, members in groups.items()}
    labels = [f"{run.model} · {run.env}" + describe(run, keys[(run.model, run.env)]) for run in runs]
    seen: dict[str, int] = defaultdict(int)
    for label in labels:
        seen[label] += 1
    return [f"{label} · {run.path.name}" if seen[label] > 1 else label for label, run in zip(labels, runs)]


def models_by_benchmarks(runs: list[RunInfo], labels: list[str]):
    """Rows (a model, with the settings that differ among its runs of one env: a row names
    only those, never a setting of another env's runs), columns (envs) and the runs in each
    cell: several when runs share every setting (each shown)."""
    by_group: dict[tuple[str, str], list[RunInfo]] = defaultdict(list)
    for run in runs:
        by_group[(run.model, run.env)].append(run)
    keys = {group: varying(members) for group, members in by_group.items()}
    table: dict[tuple[str, str], list[RunInfo]] = defaultdict(list)
    for run in runs:
        row = run.model + describe(run, keys[(run.model, run.env)])
        table[(row, run.env)].append(run)
    rows = sorted({r for r, _ in table})
    envs = sorted({e for _, e in table})
    return rows, envs, dict(table)


def cell(run: RunInfo | None) -> str:
    """"0.734 [0.701, 0.767] n=500/500" (samples/problems), or the accuracy alone without an
    interval; a run that did not finish its selection is marked ("⚠ interrupted: ...")."""
    if run is None:
        return ""
    acc = run.accuracy
    interval = run.interval("accuracy")
    mark = f" ⚠ {run.marker}" if run.marker else ""
    if acc is None:
        return DASH + mark
    if not interval:
        return f"{acc:.3f}{mark}"
    n = f" n={interval.get('n_samples', DASH)}/{interval.get('n_problems', DASH)}"
    return f"{acc:.3f} [{interval['low']:.3f}, {interval['high']:.3f}]{n}{mark}"


def cells(found: list[RunInfo] | None) -> str:
    """A matrix cell: one run's `cell`, or each of several runs' with its folder name."""
    if not found:
        return ""
    if len(found) == 1:
        return cell(found[0])
    return "; ".join(f"{cell(run)} ({run.path.name})" for run in found)


def _g(value) -> str:
    return DASH if value is None else format(value, "g")


def _pass_text(run: RunInfo) -> str:
    return " ".join(f"@{k}={v:.3f}" for k, v in sorted(run.pass_at_k.items())) or DASH


def _rate(value: float | None) -> str:
    return DASH if value is None else f"{100 * value:.1f}%"


def _run_rows(runs: list[RunInfo], labels: list[str]) -> list[list[str]]:
    return [[label, env_text(run), run.model, run.status or DASH, _g(run.temperature), _g(run.max_tokens), _g(run.n),
             fmt(run.counts.get("problems")), fmt(run.counts.get("samples")), cell(run), _pass_text(run),
             _rate(run.truncated_rate), _rate(run.failed_rate), run.judged, run.machine_text]
            for run, label in zip(runs, labels)]


def env_text(run: RunInfo) -> str:
    """The env, with its date window when the run has one: `liveaops (dates 2024-07 .. 2024-09)`."""
    env = run.config.get("env") or {}
    start, end = env.get("start_date"), env.get("end_date")
    if start is None and end is None:
        return run.env
    window = f"{start or ''} .. {end or ''}".strip()
    return f"{run.env} (dates {window})"


RUN_HEADER = ["run", "env", "model", "status", "T", "max_tokens", "n", "problems", "samples",
              "accuracy [95% interval] n=samples/problems", "pass@k", "truncated", "failed", "graded by a judge",
              "machine"]


def _write_csv(runs: list[RunInfo], labels: list[str], path: Path) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=CSV_FIELDS)
        writer.writeheader()
        for run, label in zip(runs, labels):
            interval = run.interval("accuracy") or {}
            writer.writerow({
                "label": label, "env": run.env, "model": run.model, "status": run.status,
                "temperature": run.temperature, "max_tokens": run.max_tokens, "n": run.n,
                "problems": run.counts.get("problems"), "samples": run.counts.get("samples"),
                "scored": run.counts.get("scored"), "failed": run.counts.get("failed"),
                "accuracy": run.accuracy, "accuracy_low": interval.get("low"), "accuracy_high": interval.get("high"),
                "accuracy_se": interval.get("se"), "interval_method": run.metrics.get("interval_method"),
                "pass_at_k": ";".join(f"{k}:{v}" for k, v in sorted(run.pass_at_k.items())),
                "truncated_rate": run.truncated_rate, "failed_rate": run.failed_rate,
                "parse_failure_rate": run.metrics.get("parse_failure_rate"),
                "machine": run.machine_text if run.machine else None, "path": str(run.path),
            })


def _methods(runs: list[RunInfo]) -> str:
    methods = sorted({str(r.metrics["interval_method"]) for r in runs if r.metrics.get("interval_method")})
    return "; ".join(methods) if methods else "not recorded in these runs' summaries"


def _markdown(runs, labels, rows, envs, table, plots, split=None) -> str:
    def md_table(header, body):
        esc = lambda s: str(s).replace("|", "\\|")
        return "\n".join(["| " + " | ".join(map(esc, header)) + " |", "|" + "---|" * len(header)]
                         + ["| " + " | ".join(map(esc, r)) + " |" for r in body])

    parts = [f"# skyeval report: {len(runs)} runs", "",
             "## Accuracy: models × benchmarks",
             "", "accuracy [95% interval] n=samples/problems; interval method: " + _methods(runs)
             + ". ⚠ marks a run that stopped before finishing its selection.", "",
             md_table(["model", *envs], [[row, *(cells(table.get((row, env))) for env in envs)] for row in rows]), "",
             "## Runs", "", md_table(RUN_HEADER, _run_rows(runs, labels)), ""]
    if split is not None:
        from skyeval.metrics.unpaired import TEST

        parts += [f"## Before and after the training cutoff {split[0]}", "", CUTOFF_NOTE.format(test=TEST), "",
                  md_table(CUTOFF_HEADER, split[1]), ""]
    parts += ["## Plots", ""]
    parts += [f"![{title}]({name})" for title, name in plots.made.items()]
    if plots.skipped:
        parts += ["", "Not drawn, with nothing to show:", ""]
        parts += [f"- {title}: {why}" for title, why in plots.skipped.items()]
    return "\n".join(parts) + "\n"


def _html(runs, labels, rows, envs, table, plots, viewer: bool, split=None) -> str:
    e = html.escape

    def html_table(header, body, cls=""):
        head = "".join(f"<th>{e(h)}</th>" for h in header)
        body_html = "".join("<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in r) + "</tr>" for r in body)
        return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body_html}</tbody></table>'

    matrix = html_table(["model", *envs], [[row, *(cells(table.get((row, env))) for env in envs)] for row in rows], "matrix")
    figures = "".join(f'<figure><img src="{e(name)}" alt="{e(title)}"><figcaption>{e(title)}</figcaption></figure>'
                      for title, name in plots.made.items())
    if plots.skipped:
        figures += ('<p class="note">Not drawn, with nothing to show:</p><ul class="note">'
                    + "".join(f"<li>{e(title)}: {e(why)}</li>" for title, why in plots.skipped.items()) + "</ul>")
    cutoff = ""
    if split is not None:
        from skyeval.metrics.unpaired import TEST

        cutoff = (f"<h2>Before and after the training cutoff {e(split[0])}</h2>"
                  f'<p class="note">{e(CUTOFF_NOTE.format(test=TEST))}</p>{html_table(CUTOFF_HEADER, split[1])}')
    link = ('<p class="viewer"><a href="viewer.html">Open the sample viewer →</a> every sample with filters, search, '
            'and a two-run comparison of the problems where runs disagree.</p>') if viewer else ""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>skyeval report</title>
<style>
body {{ font: 14px/1.45 system-ui, sans-serif; margin: 24px; color: #1d2330; }}
table {{ border-collapse: collapse; margin: 8px 0 20px; }}
th, td {{ border: 1px solid #dde1e8; padding: 4px 8px; text-align: left; }}
th {{ background: #eef0f4; }}
.matrix td:not(:first-child) {{ font-variant-numeric: tabular-nums; }}
figure {{ display: inline-block; margin: 0 16px 16px 0; }}
figcaption {{ color: #4a5468; }}
.viewer a {{ font-size: 16px; font-weight: 600; }}
.note {{ color: #4a5468; }}
</style></head><body>
<h1>skyeval report: {len(runs)} runs</h1>
{link}
<h2>Accuracy: models × benchmarks</h2>
<p class="note">accuracy [95% interval] n=samples/problems · interval method: {e(_methods(runs))}.
Failed samples count as wrong. — means the run's summary does not have the number.
A row is a model with the settings that differ among its runs of one benchmark; runs equal in every setting share a cell, each shown.
⚠ marks a run that stopped before finishing its selection (interrupted, failed): its numbers cover what it finished.</p>
{matrix}
<h2>Runs</h2>
{html_table(RUN_HEADER, _run_rows(runs, labels))}
{cutoff}
<h2>Plots</h2>
{figures}
</body></html>
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="skyeval report", description=__doc__.split("\n\n", 1)[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dirs", nargs="+", metavar="DIR", help="run folders or folders that hold them")
    parser.add_argument("--out", help="output folder (default: DIR/report for the first DIR)")
    parser.add_argument("--no-viewer", action="store_true", help="skip the per-sample viewer")
    parser.add_argument("--cutoff", metavar="YYYY-MM", help="a training cutoff: marked on accuracy_by_month.png, and "
                        "accuracy before/after it tested for every dated run")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        index = build_report(args.dirs, args.out, viewer=not args.no_viewer, cutoff=args.cutoff)
    except SkyevalError as err:
        print(f"skyeval: error: {err}", file=sys.stderr)
        return 2
    print(f"report: {index}")
    if not args.no_viewer:
        print(f"viewer: {index.parent / 'viewer.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
