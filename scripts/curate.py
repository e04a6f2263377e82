"""Turn a scored run folder into a training dataset. Each command prints and saves (next
to the output, as `<name>.summary.json`) how many rows each step kept.

  python scripts/curate.py sft RUN_DIR          correct + readable samples -> ShareGPT SFT rows (decontaminate first;
                                                reasoning kept: --reasoning think|sky_t1|drop)
  python scripts/curate.py pairs RUN_DIR        preference pairs (--silc adds short-incorrect/long-correct)
  python scripts/curate.py best-of-n RUN_DIR    per-question mean/max/majority/pass@k (--ks 1,4)
  python scripts/curate.py rewrite RUN_DIR --model openai --set model_source=gpt-4o-mini
                                                rewrite kept samples, keep rewrites still correct
  python scripts/curate.py difficulty RUN_DIR --model openai --set model_source=gpt-4o-mini
                                                1-10 difficulty label per problem (parse failures apart)
  python scripts/curate.py decontaminate INPUT --out DIR [--against aime24,math500] [--report-only]
                                                drop rows that contain a benchmark problem, copied or
                                                reworded (--paraphrase SCORE, --no-paraphrase; optional
                                                model stage: --embeddings-url URL --embedding-model M
                                                [--judge-model J])
  python scripts/curate.py dedup INPUT --out DIR  drop exact and near (MinHash LSH) duplicates

Decontaminate (and dedup) the generated data before `sft`/`pairs`: INPUT is a run folder
or a JSONL/Parquet file; they write DIR/kept.<format>, the dropped rows and report.json.
Then `sft RUN_DIR --exclude DIR/removed.jsonl` leaves the contaminated samples out.

Output: RUN_DIR/curated/<command>.jsonl unless --out is given; --format parquet for parquet.
`--model NAME` is a file of conf/model_config (reference, openai, openai_batch, vllm, ray) and each
`--set key=value` overrides one of its fields, e.g. `--set api_url=http://127.0.0.1:8000/v1`.
See docs/curation.md.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from skyeval.backends.base import SamplingParams, ScalingConfig
from skyeval.curation import (
    ReasoningFormat,
    StepLog,
    best_of_n,
    compose_model_config,
    judge,
    keep_passing,
    label_difficulty,
    load_env,
    load_scored,
    passes,
    preference_pairs,
    rewrite,
    sharegpt_row,
    to_dataset,
)
from skyeval.curation.decontaminate import DEFAULT_PARAPHRASE
from skyeval.errors import SkyevalError
from skyeval.reasoning import DEFAULT_THINK_TAGS
from skyeval.results import write_rows


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if args.command in STREAM_COMMANDS:
        try:
            return STREAM_COMMANDS[args.command](args)
        except SkyevalError as err:
            sys.exit(f"curate: {err}")
    run_dir = Path(args.run_dir)
    out = Path(args.out) if args.out else run_dir / "curated" / f"{args.command}.{args.format}"
    log = StepLog(args.command, str(run_dir))
    rows = load_scored(run_dir)
    log.record("scored samples", len(rows), len(rows))
    for path in args.exclude:
        rows = _exclude(rows, Path(path), log)
    result = COMMANDS[args.command](args, rows, log, out)
    return log.save(result, out, args.format)


def sft(args: argparse.Namespace, rows: list[dict], log: StepLog, out: Path) -> list[dict]:
    """Samples marked keep (correct and readable) as ShareGPT rows, via `ds.filter`; the
    reasoning kept as `--reasoning` says."""
    fmt = _reasoning_format(args)
    rows = _with_keep(rows, args.min_readability)
    kept = keep_passing(to_dataset(_columns(rows, SFT_COLUMNS))).take_all() if rows else []
    log.record("correct+readable", len(rows), len(kept), dropped_for=_dropped_for(rows))
    return sorted((sharegpt_row(r, fmt) for r in kept), key=lambda r: (r["id"], r["sample_idx"]))


def pairs(args: argparse.Namespace, rows: list[dict], log: StepLog, out: Path) -> list[dict]:
    """Preference pairs; a chosen response is correct and readable, its reasoning included."""
    fmt = _reasoning_format(args)
    rows = _with_keep(rows, args.min_readability)
    log.record("readable correct", sum(float(r["score"]) >= 1.0 for r in rows), sum(passes(r) for r in rows),
               dropped_for=_dropped_for(rows))
    made = preference_pairs(to_dataset(_columns(rows, PAIR_COLUMNS)), silc=args.silc,
                            fmt=fmt).take_all() if rows else []
    questions = len({r["id"] for r in rows})
    log.record("pairs", questions, len(made), unit="questions -> pairs", by_kind=dict(Counter(p["kind"] for p in made)))
    return sorted(made, key=lambda p: (p["id"], p["kind"]))


def best_of_n_command(args: argparse.Namespace, rows: list[dict], log: StepLog, out: Path) -> list[dict]:
    ks = [int(k) for k in args.ks.split(",")]
    per_question = best_of_n(to_dataset(_columns(rows, BEST_OF_N_COLUMNS)), ks=ks).take_all() if rows else []
    means = {f"pass@{k}": _mean(q[f"pass@{k}"] for q in per_question) for k in ks}
    means["majority_vote_accuracy"] = _mean(q["majority_score"] for q in per_question)
    log.record("samples -> questions", len(rows), len(per_question), **means)
    return sorted(per_question, key=lambda q: q["id"])


def rewrite_command(args: argparse.Namespace, rows: list[dict], log: StepLog, out: Path) -> list[dict]:
    """Rewrite the kept samples with a second model; keep rewrites that still score correct."""
    rows = _with_keep(rows, args.min_readability)
    kept = [r for r in rows if passes(r)]
    log.record("correct+readable", len(rows), len(kept))
    env = load_env(args.run_dir)
    result = rewrite(kept, _model_config(args, out), env.score_item, sampling=_sampling(args),
                     scaling=ScalingConfig(concurrency=args.concurrency))
    log.record("rewrite still correct", len(kept), len(result.kept),
               incorrect=len(result.incorrect), failed=len(result.failed))
    _save_apart(result.incorrect + result.failed, out, "dropped", args.format)
    # a rewrite replaces the whole response: the original reasoning is not kept
    return [{**r, **sharegpt_row(r, ReasoningFormat("drop"))}
            for r in sorted(result.kept, key=lambda r: (r["id"], r["sample_idx"]))]


def difficulty(args: argparse.Namespace, rows: list[dict], log: StepLog, out: Path) -> list[dict]:
    """One 1-10 label per problem of the run; unparsable replies go to *.failures.*."""
    problems = list({r["id"]: {"id": r["id"], "question": r["question"], "expected": r["expected"]}
                     for r in rows}.values())
    result = label_difficulty(problems, _model_config(args, out), sampling=_sampling(args),
                              scaling=ScalingConfig(concurrency=args.concurrency))
    log.record("labeled", len(problems), len(result.labeled), failures=len(result.failures))
    _save_apart(result.failures, out, "failures", args.format)
    return sorted(result.labeled, key=lambda r: r["id"])


def decontaminate_command(args: argparse.Namespace) -> dict[str, Any]:
    """Rows that contain a benchmark problem go to removed.*, the others to kept.*."""
    from skyeval.curation.decontaminate import BenchmarkIndex, decontaminate, read_benchmarks, report_table

    if not args.report_only and not args.out:
        sys.exit("curate: decontaminate needs --out DIR (or --report-only)")
    if bool(args.embeddings_url) != bool(args.embedding_model):
        sys.exit("curate: the model stage needs both --embeddings-url and --embedding-model")
    if (args.judge_backend or args.judge_set) and not args.judge_model:
        sys.exit("curate: --judge-backend and --judge-set need --judge-model")
    against = args.against.split(",") if args.against else None
    paraphrase = None if args.no_paraphrase else args.paraphrase
    sources, skipped = read_benchmarks(against, data_dir=args.data_dir)
    index = BenchmarkIndex.build(sources, not_checked=skipped, n=args.ngram, min_overlap=args.min_overlap,
                                 paraphrase=paraphrase)
    model = _model_stage(args, sources) if args.embeddings_url else None
    out = None if args.report_only else args.out
    try:
        report = decontaminate(args.run_dir, out, index, fields=_fields(args), format=args.format,
                               workers=args.workers, model=model)
    finally:
        if model is not None:
            model.close()
    if args.report_only and args.out:
        from skyeval.results import write_json

        Path(args.out).mkdir(parents=True, exist_ok=True)
        write_json(Path(args.out) / "report.json", report)
    print(report_table(report))
    if model is not None:
        print(model.cost.line())
    return report


def _score(text: str) -> float:
    """A paraphrase threshold: a number in (0, 1]."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1], got {text!r}")
    return value


def _model_stage(args: argparse.Namespace, sources: dict[str, list[tuple[str, str]]]) -> Any:
    """The optional model stage of `decontaminate` (embeddings, then a judge if named)."""
    from skyeval.curation.model_stage import ModelStage, ModelStageConfig

    config = ModelStageConfig(args.embeddings_url, args.embedding_model, judge=_judge(args),
                              api_key_env=args.api_key_env or None, top_k=args.model_top_k,
                              min_similarity=args.model_min_similarity,
                              **({"cache": args.model_cache} if args.model_cache else {}))
    problems = [(name, pid, text) for name, rows in sources.items() for pid, text in rows]
    return ModelStage(config, problems)


def _judge(args: argparse.Namespace) -> Any:
    """The model stage's judge: `--judge-backend NAME` (a conf/model_config file, default
    openai: the embedding server and key unless `--judge-set` says otherwise) serving
    `--judge-model`, with `--judge-set key=value` fields; None without `--judge-model`."""
    if not args.judge_model:
        return None
    backend = args.judge_backend or "openai"
    overrides = [f"model_source={args.judge_model}"]
    if backend == "openai":
        overrides += [f"api_url={args.embeddings_url}", f"api_key_env={args.api_key_env or 'null'}"]
    return compose_model_config(backend, [*overrides, *args.judge_set])


def dedup_command(args: argparse.Namespace) -> dict[str, Any]:
    """Exact and near duplicates go to duplicates.*, the first of each cluster to kept.*."""
    from skyeval.curation.dedup import DedupConfig, dedup

    config = DedupConfig(threshold=args.threshold, num_perm=args.num_perm, shingle=args.shingle)
    fields = _fields(args)
    report = dedup(args.run_dir, args.out, field=fields[0] if fields else None, config=config,
                   format=args.format, workers=args.workers)
    print(f"rows in {report['rows_in']}, kept {report['kept']}, exact duplicates {report['exact_duplicates']}, "
          f"near duplicates {report['near_duplicates']} (in {report['clusters_with_duplicates']} clusters)")
    return report


def _fields(args: argparse.Namespace) -> list[str] | None:
    return [f for f in args.fields.split(",") if f] if args.fields else None


SFT_COLUMNS = ("id", "sample_idx", "prompt", "generation", "reasoning", "reasoning_content", "transcript", "keep")
PAIR_COLUMNS = ("id", "sample_idx", "prompt", "generation", "reasoning", "reasoning_content", "score", "usage", "keep")
BEST_OF_N_COLUMNS = ("id", "sample_idx", "score", "extracted")
COMMANDS = {"sft": sft, "pairs": pairs, "best-of-n": best_of_n_command, "rewrite": rewrite_command,
            "difficulty": difficulty}
STREAM_COMMANDS = {"decontaminate": decontaminate_command, "dedup": dedup_command}


def _columns(rows: list[dict], names: tuple[str, ...]) -> list[dict]:
    """Only the columns a step needs go to Ray (others may hold mixed types, e.g. `expected`)."""
    return [{k: r.get(k) for k in names} for r in rows]


def _with_keep(rows: list[dict], min_readability: float | None) -> list[dict]:
    """Rows with `keep`, the whole sample judged (its reasoning too): as scored by a
    RejectionSampling env, or judged now when the run was scored by a plain env or
    `--min-readability` asks for another threshold. A run's keep that judged the answer
    alone (an older skyeval: no `reasoning_readability`) is judged again with the reasoning."""
    if rows and "keep" in rows[0] and min_readability is None:
        return [r if "reasoning_readability" in r else _reasoning_judged(r) for r in rows]
    threshold = 0.5 if min_readability is None else min_readability
    return [{**r, **judge(float(r["score"]), r.get("generation") or "", reasoning=_reasoning(r),
                          min_readability=threshold)} for r in rows]


def _reasoning_judged(row: dict) -> dict:
    verdict = judge(float(row["score"]), row.get("generation") or "", reasoning=_reasoning(row))
    thought = verdict["reasoning_readability"]
    keep = bool(row["keep"]) and (thought is None or thought >= 0.5)
    issues = list(dict.fromkeys([*(row.get("readability_issues") or []), *verdict["readability_issues"]]))
    return {**row, "reasoning_readability": thought, "readability_issues": issues, "keep": keep}


def _reasoning(row: dict) -> str | None:
    return row.get("reasoning") or row.get("reasoning_content")


def _dropped_for(rows: list[dict]) -> dict[str, int]:
    """Why correct samples were not kept: their readability issues, counted."""
    return dict(Counter(issue for r in rows if float(r["score"]) >= 1.0 and not passes(r)
                        for issue in r.get("readability_issues") or []))


def _exclude(rows: list[dict], path: Path, log: StepLog) -> list[dict]:
    """Drop the samples listed in `path` (decontaminate's removed.jsonl, dedup's
    duplicates.jsonl: rows with `id` and `sample_idx`; a row without `sample_idx` drops
    every sample of its problem)."""
    from skyeval.results import read_jsonl

    if not path.is_file():
        sys.exit(f"curate: --exclude {path}: no such file")
    samples, problems = set(), set()
    for row in read_jsonl(path):
        if row.get("sample_idx") is None:
            problems.add(str(row["id"]))
        else:
            samples.add((str(row["id"]), int(row["sample_idx"])))
    kept = [r for r in rows if str(r["id"]) not in problems and (str(r["id"]), int(r["sample_idx"])) not in samples]
    log.record(f"excluded ({path.name})", len(rows), len(kept))
    return kept


def _reasoning_format(args: argparse.Namespace) -> ReasoningFormat:
    tags = tuple(args.think_tags.split(",")) if args.think_tags else DEFAULT_THINK_TAGS
    try:
        return ReasoningFormat(args.reasoning, tags)
    except (ValueError, SkyevalError) as err:
        sys.exit(f"curate: {err}")


def _model_config(args: argparse.Namespace, out: Path | None = None) -> Any:
    """`--model NAME --set k=v ...` composed through Hydra like the CLI (every model_config group).
    `openai_batch` keeps its batches beside `out` (`OUT.batches/`): the same command picks them up."""
    try:
        config = compose_model_config(args.model, args.set)
    except SkyevalError as err:
        sys.exit(f"curate: {err}")
    if out is not None and getattr(config, "state_dir", "") is None:
        config.state_dir = str(out.with_name(f"{out.stem}.batches"))
    return config


def _sampling(args: argparse.Namespace) -> SamplingParams:
    return SamplingParams(temperature=args.temperature, max_tokens=args.max_tokens)


def _save_apart(rows: list[dict], out: Path, name: str, format: str) -> None:
    if rows:
        path = write_rows(rows, out.with_name(f"{out.stem}.{name}.{format}"), format)
        print(f"{len(rows)} {name} rows in {path}")


def _mean(values: Any) -> float | None:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        cmd = sub.add_parser(name)
        cmd.add_argument("run_dir", help="a run folder written by `skyeval.cli evaluate` or `score`")
        cmd.add_argument("--out", help="output file (default RUN_DIR/curated/<command>.<format>)")
        cmd.add_argument("--format", choices=("jsonl", "json", "parquet"), default="jsonl")
        cmd.add_argument("--exclude", action="append", default=[], metavar="FILE",
                         help="drop the samples listed in FILE: decontaminate's removed.jsonl, dedup's duplicates.jsonl")
        if name in ("sft", "rewrite", "pairs"):
            cmd.add_argument("--min-readability", type=float, default=None,
                             help="re-judge keep with this threshold (default: the run's keep, else 0.5)")
        if name in ("sft", "pairs"):
            cmd.add_argument("--reasoning", choices=("think", "sky_t1", "drop"), default="think",
                             help="keep the reasoning before the answer in <think> tags (default), in Sky-T1's "
                                  "markers, or drop it")
            cmd.add_argument("--think-tags", metavar="OPEN,CLOSE",
                             help="think block tags, read and written (default <think>,</think>)")
        if name == "pairs":
            cmd.add_argument("--silc", action="store_true", help="also pair short incorrect with longer correct")
        if name == "best-of-n":
            cmd.add_argument("--ks", default="1", help="comma-separated k of pass@k, e.g. 1,4")
        if name in ("rewrite", "difficulty"):
            cmd.add_argument("--model", required=True, help="a conf/model_config name: openai, openai_batch, vllm, ray, reference")
            cmd.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="model config field")
            cmd.add_argument("--temperature", type=float, default=0.0)
            cmd.add_argument("--max-tokens", type=int, default=4096)
            cmd.add_argument("--concurrency", type=int, default=64)
    for name in STREAM_COMMANDS:
        cmd = sub.add_parser(name)
        cmd.add_argument("run_dir", metavar="INPUT", help="a run folder, or a JSONL or Parquet file of rows")
        cmd.add_argument("--out", required=name == "dedup", help="output folder: kept.<format>, report.json, ...")
        cmd.add_argument("--format", choices=("jsonl", "parquet"), default="jsonl")
        cmd.add_argument("--fields", help="comma-separated fields to check (default: the first of "
                         "problem, question, prompt, text the rows have)" + (", e.g. problem,generation"
                                                                              if name == "decontaminate" else ""))
        cmd.add_argument("--workers", type=int, default=0, help="worker processes (default: one per core)")
        if name == "decontaminate":
            cmd.add_argument("--against", help="comma-separated env names (default: every evaluation env)")
            cmd.add_argument("--ngram", type=int, default=8, help="words per n-gram (default 8)")
            cmd.add_argument("--min-overlap", type=float, default=0.25,
                             help="share of a problem's n-grams a row must hold (default 0.25; at least one)")
            cmd.add_argument("--paraphrase", type=_score, default=DEFAULT_PARAPHRASE, metavar="SCORE",
                             help=f"meaning-level check: a row whose paraphrase score reaches SCORE matches "
                                  f"(default {DEFAULT_PARAPHRASE}; --report-only tabulates other thresholds)")
            cmd.add_argument("--no-paraphrase", action="store_true", help="n-gram checks only")
            cmd.add_argument("--report-only", action="store_true", help="write no data, only the report "
                             "(and the rows each paraphrase threshold would remove)")
            cmd.add_argument("--data-dir", help="local benchmark mirror (default: $SKYEVAL_DATA_DIR, else the hub)")
            model = cmd.add_argument_group("model stage (off unless --embeddings-url is given)")
            model.add_argument("--embeddings-url", metavar="URL",
                               help="base URL of an OpenAI-compatible server with /embeddings, e.g. "
                                    "http://127.0.0.1:8000/v1")
            model.add_argument("--embedding-model", help="embedding model name")
            model.add_argument("--judge-model", help="judge model that confirms each candidate (default: on the "
                               "embedding server; without one the nearest candidate is the match)")
            model.add_argument("--judge-backend", metavar="NAME", help="the judge's conf/model_config: openai "
                               "(default), vllm, ray")
            model.add_argument("--judge-set", action="append", default=[], metavar="KEY=VALUE",
                               help="a field of the judge's model config, e.g. api_url=URL, price={input:0.15,output:0.6}")
            model.add_argument("--model-top-k", type=int, default=3, help="nearest problems per row (default 3)")
            model.add_argument("--model-min-similarity", type=float, default=0.8,
                               help="cosine similarity a candidate needs (default 0.8)")
            model.add_argument("--model-cache", metavar="DIR",
                               help="cache folder of embeddings and judge verdicts (default ~/.cache/skyeval/"
                                    "decontaminate)")
            model.add_argument("--api-key-env", default="OPENAI_API_KEY",
                               help="environment variable holding the embedding server's API key ('' for none; "
                                    "also the default judge's)")
        else:
            cmd.add_argument("--threshold", type=float, default=0.8, help="MinHash LSH Jaccard threshold")
            cmd.add_argument("--num-perm", type=int, default=128, help="MinHash permutations")
            cmd.add_argument("--shingle", type=int, default=3, help="words per shingle")
    return parser


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit("curate: interrupted (nothing was written)")
