"""`audit run_dir=PATH [out=FILE]`: grade a math run folder twice, side by side.

Every generation the run's summary counts (`skyeval.results.Selection`) is graded with skyeval's
grader (the env's ``score_item``, with the sample's ``reasoning`` and ``finish_reason``)
and with plain math-verify, ``verify(parse("\\boxed{gold}"), parse(generation))`` with
its default settings. Every disagreement (id, sample_idx, gold, what each side extracted,
both verdicts, skyeval's parse_error and reasoning state, the sample's finish_reason, the
generation's last characters) goes to
``RUN_DIR/audit/disagreements.jsonl`` (or ``out=FILE``); the count table is printed and
written to ``audit/summary.json`` beside it. For an env whose problems list several
answers (liveaops), the problems whose listed answers disagree in value (`value_classes`:
the grader's `equivalent`) go to ``answer_disagreements.jsonl`` beside it. The table also says where skyeval's answers
came from (a box, an "answer is" statement, or the no-box fallback) and its three-way
verdicts; every fallback extraction goes to ``fallbacks.jsonl`` beside the disagreements,
since that is where grading is least certain.

    python -m skyeval.report.audit run_dir=outputs/math500_reference_t0.0
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from skyeval.errors import ConfigError, DataNotFoundError, SkyevalError

TAIL_CHARS = 400  # of the generation, kept in each disagreement to read it at a glance
USAGE = "usage: audit run_dir=PATH [out=FILE]"


def main(argv: list[str]) -> int:
    """Run the audit; returns the exit code (0). Raises SkyevalError for bad input."""
    args = _parse_args(argv)
    run_dir = Path(args["run_dir"]).expanduser()
    out = Path(args["out"]).expanduser() if "out" in args else run_dir / "audit" / "disagreements.jsonl"
    counts = audit_run(run_dir, out)
    print(format_counts(counts))
    return 0


def audit_run(run_dir: Path, out: Path) -> dict[str, Any]:
    """Grade every generation of ``run_dir`` both ways; write the disagreements to ``out``
    and the counts to ``out``'s folder as summary.json. Returns the counts."""
    import logging

    from skyeval.results import Selection

    logging.getLogger("math_verify").setLevel(logging.ERROR)  # its time-out warnings quote whole texts
    env, problems = _env_and_problems(run_dir)
    golds = {pid: p["expected"] for pid, p in problems.items()}
    out.parent.mkdir(parents=True, exist_ok=True)
    counts: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    states: Counter[str] = Counter()  # reasoning closed / unclosed / none, per sample
    sources: Counter[str] = Counter()  # box / statement / fallback / none
    verdicts: Counter[str] = Counter()  # equal / different / undecided
    fallbacks_file = out.parent / "fallbacks.jsonl"
    malformed: dict[str, dict[str, str]] = {}  # problem id -> its gold and what is wrong with it
    with out.open("w", encoding="utf-8") as fh, fallbacks_file.open("w", encoding="utf-8") as fallbacks:
        for record in Selection.of(run_dir).records(run_dir, "generations"):
            gold = record["expected"] if record.get("expected") is not None else golds.get(str(record.get("id")))
            generation = record.get("generation")
            if gold is None or not isinstance(generation, str):
                counts["skipped"] += 1  # a failed generation, or a problem no longer in the dataset
                continue
            problem = str(record.get("id"))
            if problem not in malformed:
                malformed[problem] = _gold_problems(gold)
            ours = env.score_item({"generation": generation, "expected": gold, "reasoning": record.get("reasoning"),
                                   "finish_reason": record.get("finish_reason"), "question": record.get("question")})
            theirs, their_extracted = plain_math_verify(generation, gold)
            right = ours["score"] == 1.0
            counts["generations"] += 1
            counts[_cell(right, theirs)] += 1
            counts["skyeval_timed_out"] += bool(ours.get("timed_out"))
            if ours.get("parse_error"):
                reasons[ours["parse_error"]] += 1
            states[ours.get("reasoning_state") or "none"] += 1
            sources[ours.get("answer_source") or "none"] += 1
            verdicts[ours.get("verdict") or "undecided"] += 1
            if ours.get("answer_source") == "fallback":
                fallbacks.write(json.dumps({
                    "id": record.get("id"), "sample_idx": record.get("sample_idx"), "gold": gold,
                    "extracted": ours.get("extracted"), "skyeval": ours["score"], "verdict": ours.get("verdict"),
                    "generation_tail": generation[-TAIL_CHARS:],
                }, ensure_ascii=False) + "\n")
            if right != theirs:
                fh.write(json.dumps({
                    "id": record.get("id"),
                    "sample_idx": record.get("sample_idx"),
                    "gold": gold,
                    "extracted": ours.get("extracted"),
                    "math_verify_extracted": their_extracted,
                    "skyeval": ours["score"],
                    "math_verify": 1.0 if theirs else 0.0,
                    "parse_error": ours.get("parse_error"),
                    "reasoning_state": ours.get("reasoning_state"),
                    "finish_reason": record.get("finish_reason"),
                    "generation_tail": generation[-TAIL_CHARS:],
                }, ensure_ascii=False) + "\n")
    summary = {
        "run_dir": str(run_dir),
        "env": env.name,
        "generations": counts["generations"],
        "skipped": counts["skipped"],
        "agree": counts["both_right"] + counts["both_wrong"],
        "both_right": counts["both_right"],
        "both_wrong": counts["both_wrong"],
        "skyeval_only_right": counts["skyeval_only_right"],
        "math_verify_only_right": counts["math_verify_only_right"],
        "skyeval_timed_out": counts["skyeval_timed_out"],
        "skyeval_parse_errors": dict(reasons),
        "reasoning_states": dict(states),
        "answer_sources": dict(sources),
        "malformed_golds": {problem: found for problem, found in malformed.items() if found},
        "verdicts": dict(verdicts),
        "disagreements_file": str(out),
        "fallbacks_file": str(fallbacks_file),
    }
    if hasattr(env, "value_classes"):
        summary.update(answer_disagreements(env, problems.values(), out.parent / "answer_disagreements.jsonl"))
    (out.parent / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary


def answer_disagreements(env: Any, problems: Any, path: Path) -> dict[str, Any]:
    """Write the problems whose listed `answers` hold more than one value (the env's
    `value_classes`) to `path`, one JSON line each (id, date, answers, classes); returns
    the counts for the audit's summary."""
    listed = disagreeing = 0
    with path.open("w", encoding="utf-8") as fh:
        for problem in problems:
            answers = problem.get("answers") or []
            if len(answers) < 2:
                continue
            listed += 1
            classes = env.value_classes(answers)
            if len(classes) > 1:
                disagreeing += 1
                fh.write(json.dumps({"id": problem["id"], "date": problem.get("date"), "answers": answers,
                                     "classes": classes}, ensure_ascii=False) + "\n")
    return {"answer_lists": listed, "answer_lists_disagreeing": disagreeing, "answer_disagreements_file": str(path)}


def _gold_problems(gold: str | list[str]) -> dict[str, str]:
    """{gold: why it cannot be graded against} for each unusable answer of ``gold``."""
    from skyeval.scorers.math import gold_problem

    answers = gold if isinstance(gold, list) else [gold]
    return {str(answer): why for answer in answers if (why := gold_problem(answer))}


def plain_math_verify(generation: str, gold: str | list[str]) -> tuple[bool, str | None]:
    """(verdict, extracted text) of math-verify used the plain way, with its own defaults
    and time-outs; a gold list is right if any of its answers is."""
    from math_verify import parse, verify

    parsed = parse(generation)
    extracted = next((item for item in reversed(parsed) if isinstance(item, str)), None)
    golds = gold if isinstance(gold, list) else [gold]
    return any(verify(parse(f"\\boxed{{{g}}}"), parsed) for g in golds), extracted


def format_counts(summary: dict[str, Any]) -> str:
    n = summary["generations"] or 1
    lines = [
        f"audit of {summary['run_dir']} ({summary['env']}): {summary['generations']} generations"
        + (f", {summary['skipped']} skipped (no generation or no gold)" if summary["skipped"] else ""),
        f"  {'agree':26} {summary['agree']:7}  {summary['agree'] / n:7.2%}",
        f"  {'both right':26} {summary['both_right']:7}",
        f"  {'both wrong':26} {summary['both_wrong']:7}",
        f"  {'skyeval right only':26} {summary['skyeval_only_right']:7}",
        f"  {'math-verify right only':26} {summary['math_verify_only_right']:7}",
        f"  {'skyeval timed out':26} {summary['skyeval_timed_out']:7}",
    ]
    lines += [f"  skyeval parse_error {reason!r}: {count}" for reason, count in summary["skyeval_parse_errors"].items()]
    lines.append("  reasoning " + ", ".join(f"{state}: {count}" for state, count in sorted(summary["reasoning_states"].items())))
    lines.append("  skyeval answers from " + ", ".join(
        f"{source}: {summary['answer_sources'].get(source, 0)}" for source in ("box", "statement", "fallback", "none")))
    lines.append("  skyeval verdicts " + ", ".join(f"{v}: {c}" for v, c in sorted(summary["verdicts"].items())))
    bad = summary["malformed_golds"]
    lines.append(f"  malformed golds (report them to the dataset; no grader can use them): {len(bad)}")
    lines += [f"    {problem}: {found}" for problem, found in list(bad.items())[:20]]
    lines.append(f"disagreements: {summary['disagreements_file']}")
    if "answer_lists" in summary:
        lines.append(f"problems whose listed answers disagree in value: {summary['answer_lists_disagreeing']} of "
                     f"{summary['answer_lists']} with several answers: {summary['answer_disagreements_file']}")
    lines.append(f"fallback extractions: {summary['fallbacks_file']}")
    return "\n".join(lines)


def _cell(ours: bool, theirs: bool) -> str:
    if ours == theirs:
        return "both_right" if ours else "both_wrong"
    return "skyeval_only_right" if ours else "math_verify_only_right"


def _parse_args(argv: list[str]) -> dict[str, str]:
    args = {}
    for arg in argv:
        key, sep, value = arg.partition("=")
        if not sep or key not in ("run_dir", "out") or not value:
            raise ConfigError(f"unexpected argument {arg!r}; {USAGE}")
        args[key] = value
    if "run_dir" not in args:
        raise ConfigError(f"audit needs run_dir=PATH; {USAGE}")
    return args


def _env_and_problems(run_dir: Path) -> tuple[Any, dict[str, Any]]:
    """The run's env, rebuilt from its config.yaml, and its problems' golds, listed answers
    and dates by problem id."""
    from omegaconf import OmegaConf

    from skyeval.envs.math import MathEnv
    from skyeval.envs.registry import SkyEnvBuilder

    config = run_dir / "config.yaml"
    if not config.is_file():
        raise DataNotFoundError(f"{run_dir} is not a run folder (no config.yaml)")
    cfg = OmegaConf.to_container(OmegaConf.load(config), resolve=False)
    env_cfg = dict(cfg.get("env") or {})
    name = env_cfg.pop("name", None)
    if not name:
        raise ConfigError(f"{config} has no env.name")
    knobs = {k: v for k, v in env_cfg.items() if k != "_target_"}
    if not knobs.get("data_dir") and cfg.get("data_dir"):
        knobs["data_dir"] = cfg["data_dir"]
    env = SkyEnvBuilder.build(name, knobs)
    if not isinstance(env, MathEnv):
        raise ConfigError(f"audit compares math graders; env {name!r} is not a math env")
    fields = ("id", "expected", "answers", "date")  # not the question texts
    return env, {str(p["id"]): {k: p[k] for k in fields if k in p} for p in env.iter_problems()}


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except SkyevalError as err:
        print(f"skyeval: error: {err}", file=sys.stderr)
        sys.exit(2)
