"""`python -m skyeval.cli compare RUN_A RUN_B [--json] [--strict] [--cutoff YYYY-MM]`

Pairs the samples of two runs of one benchmark by (problem id, sample index), each run
read as its summary selects (its problems, sample indices below its n), and reports B − A
for accuracy and each pass@k with a paired 95% interval (MOVER from each run's own interval
and their correlation over problems: `skyeval.metrics.paired`) and a p-value: McNemar's
exact test when every problem has one 0/1 outcome, else the p-value inverting the interval.
Only problems with the same gold and problem text in both runs are paired: the others are
counted and named in one warning line (`--strict` refuses the pair instead). Then the
problems B won (answered right more often than A) and lost, in natural id order among
equals. Failed samples count as wrong, as in the headline metrics, and are counted and
marked as failures. `--json` prints the same as one JSON object. On a dated benchmark,
`--cutoff YYYY-MM` adds each run's accuracy before and after a training cutoff, with the
difference, its interval and p-value (an unpaired test: the problems differ).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from skyeval.errors import ConfigError, SkyevalError
from skyeval.metrics import ks_for, pass_at_k
from skyeval.report.runs import RunInfo, natural_key, outcomes, unmatched

LISTED = 20  # problem ids printed per side in the text output (--json has all)
log = logging.getLogger("skyeval")


def compare_runs(run_a: str | Path, run_b: str | Path, cutoff: str | None = None,
                 strict: bool = False) -> dict[str, Any]:
    """B − A for accuracy and pass@k over the samples both runs hold, of problems with the
    same gold and problem text (see the module doc; `strict`: a problem that differs is a
    ConfigError); with `cutoff`, each run's accuracy after − before it (`cutoff_split`)."""
    import numpy as np

    from skyeval.metrics.intervals import DIFFERENCE_METHOD
    from skyeval.metrics.paired import mcnemar_p, paired_difference

    info_a, info_b = RunInfo.load(run_a), RunInfo.load(run_b)
    split = cutoff_split(info_a, info_b, cutoff) if cutoff is not None else None
    if info_a.env != info_b.env:
        raise ConfigError(f"cannot compare runs of different benchmarks: A ({info_a.path}) is {info_a.env!r}, "
                          f"B ({info_b.path}) is {info_b.env!r}; compare two runs of the same env")
    out_a, out_b = outcomes(info_a.path, info_a.selection), outcomes(info_b.path, info_b.selection)
    differ = unmatched(out_a, out_b)
    if differ:
        shown = ", ".join(sorted(differ, key=natural_key)[:LISTED])
        message = (f"{info_b.path} and {info_a.path}: {len(differ)} problems differ in gold or problem text "
                   f"({shown}{', ...' if len(differ) > LISTED else ''})")
        if strict:
            raise ConfigError(f"{message}: not comparable (--strict)")
        log.warning("%s: left out of the pairing", message)
    keys = {key for key in set(out_a) & set(out_b) if key[0] not in differ}
    if not keys:
        raise ConfigError(f"{info_a.path} and {info_b.path} share no (problem id, sample index) of the same problem "
                          "in their summaries' selections: nothing to pair")

    by_problem: dict[str, list[tuple]] = defaultdict(list)
    binary = True
    for key in keys:
        a, b = out_a[key], out_b[key]
        by_problem[key[0]].append((a.score, b.score, a.correct, b.correct, a.failed, b.failed))
        binary = binary and a.score in (0.0, 1.0) and b.score in (0.0, 1.0)
    ids = sorted(by_problem, key=natural_key)  # "2" before "10"
    count = np.array([len(by_problem[i]) for i in ids], dtype=np.float64)
    score_a, score_b, right_a, right_b, failed_a, failed_b = (
        np.array([sum(s[j] for s in by_problem[i]) for i in ids], dtype=np.float64) for j in range(6)
    )
    units = int(count.min())  # samples of every problem (the interval's bound on independent samples)

    metrics: dict[str, Any] = {}
    accuracy: dict[str, Any] = {"a": float(score_a.sum() / count.sum()), "b": float(score_b.sum() / count.sum()),
                                **paired_difference(score_a / count, score_b / count, units),
                                "test": f"paired {DIFFERENCE_METHOD}"}
    if binary and bool(np.all(count == 1)):  # one 0/1 outcome per problem: McNemar's exact test gives p
        a_only, b_only = int(np.sum((right_a == 1) & (right_b == 0))), int(np.sum((right_a == 0) & (right_b == 1)))
        accuracy.update(p_value=mcnemar_p(a_only, b_only), test=f"McNemar (exact binomial); interval {DIFFERENCE_METHOD}",
                        discordant={"a_only": a_only, "b_only": b_only})
    metrics["accuracy"] = accuracy
    for k in ks_for(int(count.max())):
        eligible = count >= k
        pa = np.array([pass_at_k(int(n), int(c), k) for n, c in zip(count[eligible], right_a[eligible])])
        pb = np.array([pass_at_k(int(n), int(c), k) for n, c in zip(count[eligible], right_b[eligible])])
        if k == 1:  # pass@1 is the accuracy of 0/1 outcomes: the same test, not a second one
            entry = {key: accuracy[key] for key in ("low", "high", "p_value", "test")}
        else:
            entry = {**paired_difference(pa, pb, max(int(count[eligible].min()) // k, 1)),
                     "test": f"paired {DIFFERENCE_METHOD}"}
        metrics[f"pass@{k}"] = {"a": float(pa.mean()), "b": float(pb.mean()), **entry,
                                "diff": float((pb - pa).mean()), "n_problems": int(eligible.sum())}

    rate_a, rate_b = right_a / count, right_b / count
    order = np.argsort(-np.abs(rate_b - rate_a), kind="stable")  # ties stay in natural id order
    problem = lambda i: _problem(ids[i], right_a[i], right_b[i], count[i], failed_a[i], failed_b[i])  # noqa: E731
    won = [problem(i) for i in order if rate_b[i] > rate_a[i]]
    lost = [problem(i) for i in order if rate_b[i] < rate_a[i]]
    return {
        "env": info_a.env,
        "a": _describe(info_a), "b": _describe(info_b),
        "matched": {"samples": len(keys), "problems": len(ids),
                    "a_only": len(out_a) - len(keys), "b_only": len(out_b) - len(keys),
                    "failed": {"a": int(failed_a.sum()), "b": int(failed_b.sum())},
                    "differing_problems": sorted(differ, key=natural_key)},
        "confidence": 0.95,
        "metrics": metrics,
        "won": won, "lost": lost,
        **({"cutoff": split} if split is not None else {}),
    }


def cutoff_split(info_a: RunInfo, info_b: RunInfo, cutoff: str) -> dict[str, Any]:
    """Each run's accuracy on the problems dated up to the cutoff month and after it
    (`skyeval.metrics.unpaired.before_after`); a ConfigError for an undated run."""
    from skyeval.metrics.unpaired import before_after, check_month

    cutoff = check_month(cutoff)
    out: dict[str, Any] = {"cutoff": cutoff}
    for side, info in (("a", info_a), ("b", info_b)):
        if not info.metrics.get("by_month"):
            raise ConfigError(f"--cutoff needs a dated benchmark: run {side.upper()} ({info.path}) has no "
                              "metrics.by_month in its summary.json")
        out[side] = before_after(info.metrics["by_month"], cutoff)
    return out


def format_text(result: dict[str, Any]) -> str:
    a, b, m = result["a"], result["b"], result["matched"]
    lines = [
        f"compare on {result['env']}: B − A (paired, 95% interval)",
        f"  A: {a['path']}  ({a['model']}, {_settings(a)})",
        f"  B: {b['path']}  ({b['model']}, {_settings(b)})",
        f"  paired {m['samples']} samples on {m['problems']} problems"
        + (f" (unpaired, left out: {m['a_only']} only in A, {m['b_only']} only in B)" if m["a_only"] or m["b_only"] else ""),
        f"  failed samples (counted as wrong): A {m['failed']['a']}, B {m['failed']['b']}",
        *([f"  left out: {len(m['differing_problems'])} problems whose gold or problem text differ between the runs "
           f"({', '.join(m['differing_problems'][:LISTED])}{', ...' if len(m['differing_problems']) > LISTED else ''})"]
          if m.get("differing_problems") else []),
        "",
        f"  {'metric':<10} {'A':>7} {'B':>7} {'B − A':>8}  {'95% interval':<20} {'p':>7}  test",
    ]
    for name, e in result["metrics"].items():
        interval = f"[{e['low']:+.3f}, {e['high']:+.3f}]"
        test = e["test"]
        if "discordant" in e:
            test += f", discordant: {e['discordant']['a_only']} A-only vs {e['discordant']['b_only']} B-only"
        lines.append(f"  {name:<10} {e['a']:>7.3f} {e['b']:>7.3f} {e['diff']:>+8.3f}  {interval:<20} {_p(e['p_value']):>7}  {test}")
    if "cutoff" in result:
        split = result["cutoff"]
        lines += ["", f"  training cutoff {split['cutoff']}: accuracy after − before, per run (unpaired: different problems)",
                  f"  {'run':<4} {'before':>15} {'after':>15} {'after − before':>15}  {'95% interval':<20} {'p':>7}  test"]
        for side in ("a", "b"):
            r = split[side]
            before, after = (f"{r[k]['accuracy']:.3f} ({r[k]['n']})" for k in ("before", "after"))
            lines.append(f"  {side.upper():<4} {before:>15} {after:>15} {r['diff']:>+15.3f}  "
                         f"[{r['low']:+.3f}, {r['high']:+.3f}]{'':<3} {_p(r['p_value']):>7}  {r['test']}")
    for side, verb in (("won", "B right more often than A"), ("lost", "B right less often than A")):
        problems = result[side]
        shown = ", ".join(f"{p['id']} ({p['a_correct']}→{p['b_correct']}/{p['samples']}{_failed(p)})"
                          for p in problems[:LISTED])
        more = f", … {len(problems) - LISTED} more (--json lists all)" if len(problems) > LISTED else ""
        lines.append(f"\nB {side} {len(problems)} problems ({verb}){': ' if problems else ''}{shown}{more}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="skyeval compare", description=__doc__.split("\n\n")[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_a", help="run folder A (the baseline)")
    parser.add_argument("run_b", help="run folder B (differences are B − A)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--strict", action="store_true", help="refuse runs whose problems differ in gold or text "
                        "(default: leave those problems out of the pairing, with a warning)")
    parser.add_argument("--cutoff", metavar="YYYY-MM", help="a training cutoff: each run's accuracy before/after it "
                        "(dated benchmarks)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        result = compare_runs(args.run_a, args.run_b, cutoff=args.cutoff, strict=args.strict)
    except SkyevalError as err:
        print(f"skyeval: error: {err}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2, ensure_ascii=False) if args.json else format_text(result))
    return 0


def _problem(pid: str, a: float, b: float, n: float, failed_a: float, failed_b: float) -> dict[str, Any]:
    return {"id": pid, "a_correct": int(a), "b_correct": int(b), "samples": int(n),
            "a_failed": int(failed_a), "b_failed": int(failed_b)}


def _failed(p: dict[str, Any]) -> str:
    """", A failed 1, B failed 2" for a problem with failed samples."""
    return "".join(f", {side.upper()} failed {p[f'{side}_failed']}" for side in ("a", "b") if p[f"{side}_failed"])


def _describe(info: RunInfo) -> dict[str, Any]:
    return {"path": str(info.path), "model": info.model, **info.settings()}


def _settings(d: dict[str, Any]) -> str:
    return ", ".join(f"{k}={'—' if d.get(k) is None else format(d[k], 'g')}" for k in ("T", "max_tokens", "n"))


def _p(p: float) -> str:
    return "<0.001" if p < 0.001 else f"{p:.3f}"


if __name__ == "__main__":
    sys.exit(main())
