"""Turn a scored run folder into a training dataset. Each command prints and saves (next
to the output, as `<name>.summary.json`) how many rows each step kept.

  python scripts/curate.py sft RUN_DIR          correct + readable samples -> SFT rows (--format messages|sharegpt;
                                                reasoning kept: --reasoning think|sky_t1|reasoning_content|drop)
  python scripts/curate.py pairs RUN_DIR        preference pairs in TRL's format (--silc adds short-incorrect/
                                                long-correct; --prompt explicit|implicit)
  python scripts/curate.py best-of-n RUN_DIR    the best sample of each question (--by score|reward|judge) and
                                                per-question mean/max/majority/pass@k beside it (--ks 1,4)
  python scripts/curate.py rewrite RUN_DIR --model openai --set model_source=gpt-4o-mini
                                                rewrite the reasoning and answer of kept samples (--what
                                                both|reasoning|answer), keep rewrites still correct and readable
  python scripts/curate.py difficulty RUN_DIR --model openai --set model_source=gpt-4o-mini
                                                1-10 difficulty label per problem (parse failures apart)
  python scripts/curate.py decontaminate INPUT --out DIR [--against aime24,math500] [--report-only]
                                                drop rows that contain a benchmark problem, copied or
                                                reworded (--paraphrase SCORE, --no-paraphrase; optional
                                                model stage: --embeddings-url URL --embedding-model M
                                                [--judge-model J])
  python scripts/curate.py dedup INPUT --out DIR  drop exact and near (MinHash LSH) duplicates
                                                (--on prompt|response|conversation)

Decontaminate (and dedup) the generated data before `sft`/`pairs`: INPUT is a run folder
or a JSONL/Parquet file (an SFT export too); they write DIR/kept.<format>, the dropped rows
and report.json. Then `sft RUN_DIR --exclude DIR/removed.jsonl` leaves those samples out.

Output: RUN_DIR/curated/<command>.jsonl unless --out FILE is given (.jsonl, .json or
.parquet: the suffix says which). Model replies (rewrite, difficulty, best-of-n's reward
model and judge) are cached in RUN_DIR/curated/cache (--cache DIR): a re-run, or a run
stopped with Ctrl-C and started again, sends no request it already paid for.
`--model NAME` is a file of conf/model_config (reference, openai, openai_batch, vllm, ray) and each
`--set key=value` overrides one of its fields, e.g. `--set api_url=http://127.0.0.1:8000/v1`.
Usage errors exit 2, data errors 1. See docs/curation.md.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, NoReturn

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
    run_info,
    sft_row,
    to_dataset,
)
from skyeval.curation.runs import ray_log_path
from skyeval.curation.conversations import PARTS, reasoning_of
from skyeval.curation.decontaminate import DEFAULT_PARAPHRASE
from skyeval.curation.exports import FORMATS, check_format
from skyeval.errors import SkyevalError
from skyeval.reasoning import DEFAULT_THINK_TAGS
from skyeval.results import read_jsonl, write_rows

FILE_TYPES = {".jsonl": "jsonl", ".json": "json", ".parquet": "parquet"}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = _parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    usage = _usage(parser, args.command)
    try:
        if args.command in STREAM_COMMANDS:
            return STREAM_COMMANDS[args.command](args, usage)
        run_dir = Path(args.run_dir)
        out = Path(args.out) if args.out else run_dir / "curated" / f"{args.command}.jsonl"
        if out.suffix not in FILE_TYPES:
            usage(f"--out {out}: the file type comes from its suffix, one of {', '.join(FILE_TYPES)}")
        for path in args.exclude:
            if not Path(path).is_file():
                usage(f"--exclude {path}: no such file")
        if getattr(args, "difficulty", None) and not Path(args.difficulty).is_file():
            usage(f"--difficulty {args.difficulty}: no such file")
        _check_export(args, usage)
        log = StepLog(args.command, str(run_dir))
        rows = load_scored(run_dir)
        log.record("scored samples", len(rows), len(rows))
        for path in args.exclude:
            rows = _exclude(rows, Path(path), log)
        rows = _with_difficulty(rows, args, run_dir, log)
        result = COMMANDS[args.command](args, rows, log, out, usage)
        if ray_log_path() is not None:
            print(f"{len(rows)} samples: the Dataset steps ran on Ray; its messages are in {ray_log_path()}")
        return log.save(result, out, FILE_TYPES[out.suffix])
    except SkyevalError as err:
        sys.exit(f"curate: {err}")


def sft(args: argparse.Namespace, rows: list[dict], log: StepLog, out: Path, usage: Any) -> list[dict]:
    """Samples marked keep (correct and readable) as SFT rows, via `ds.filter`; the
    reasoning kept as `--reasoning` says."""
    fmt = _reasoning_format(args, usage)
    rows = _with_keep(rows, args.min_readability)
    kept = keep_passing(to_dataset(_columns(rows, SFT_COLUMNS), ray_log=_ray_log(out))).take_all() if rows else []
    log.record("correct+readable", len(rows), len(kept), dropped_for=_dropped_for(rows))
    by_key = {(r["id"], r["sample_idx"]): r for r in rows}  # every field, for the metadata
    run = run_info(args.run_dir)
    return sorted((sft_row(by_key[(r["id"], r["sample_idx"])], fmt, args.format, run) for r in kept),
                  key=lambda r: (r["id"], r["sample_idx"]))


def pairs(args: argparse.Namespace, rows: list[dict], log: StepLog, out: Path, usage: Any) -> list[dict]:
    """Preference pairs; a chosen response is correct and readable, its reasoning included."""
    fmt = _reasoning_format(args, usage)
    rows = _with_keep(rows, args.min_readability)
    log.record("readable correct", sum(float(r["score"]) >= 1.0 for r in rows), sum(passes(r) for r in rows),
               dropped_for=_dropped_for(rows))
    made = preference_pairs(to_dataset(_columns(rows, PAIR_COLUMNS), ray_log=_ray_log(out)), silc=args.silc, fmt=fmt, prompt=args.prompt,
                            run=run_info(args.run_dir)).take_all() if rows else []
    questions = len({r["id"] for r in rows})
    log.record("pairs", questions, len(made), unit="questions -> pairs", by_kind=dict(Counter(p["kind"] for p in made)))
    return sorted(made, key=lambda p: (p["id"], p["kind"]))


def best_of_n_command(args: argparse.Namespace, rows: list[dict], log: StepLog, out: Path, usage: Any) -> list[dict]:
    """The best sample of each question by `--by` (score, reward, judge), as SFT rows; the
    per-question statistics beside them in `<out>.stats.jsonl`."""
    from skyeval.curation.best_of_n import choose, judge_values, reward_values

    fmt = _reasoning_format(args, usage)
    ks = [int(k) for k in args.ks.split(",")]
    per_question = {q["id"]: q for q in best_of_n(to_dataset(_columns(rows, BEST_OF_N_COLUMNS), ray_log=_ray_log(out)), ks=ks).take_all()} \
        if rows else {}
    means = {f"pass@{k}": _mean(q[f"pass@{k}"] for q in per_question.values()) for k in ks}
    means["majority_vote_accuracy"] = _mean(q["majority_score"] for q in per_question.values())
    log.record("samples -> questions", len(rows), len(per_question), **means)
    if args.by == "reward":
        values, counts = reward_values(rows, args.reward_url, cache=_cache(args), progress="reward")
        print(f"reward model: {counts['requests']} requests sent, {counts['cached']} rewards from the cache")
    elif args.by == "judge":
        values = _judged(args, rows)
    else:
        values = [float(r["score"]) for r in rows]
    by_question: dict[str, list[tuple[dict, float | None]]] = defaultdict(list)
    for row, value in zip(rows, values):
        by_question[row["id"]].append((row, value))
    run, chosen, stats = run_info(args.run_dir), [], []
    for pid in sorted(by_question):
        samples = sorted(by_question[pid], key=lambda sv: sv[0]["sample_idx"])
        best, value = choose([s for s, _ in samples], [v for _, v in samples])
        stats.append({**per_question.get(pid, {"id": pid}), "by": args.by, "best_sample_idx": best["sample_idx"],
                      "best_value": value})
        if value is not None and (args.min_score is None or value >= args.min_score):
            row = sft_row(best, fmt, args.format, run)
            row["metadata"]["best_of_n"] = {"by": args.by, "value": value, "samples": len(samples)}
            chosen.append(row)
    log.record(f"best by {args.by}", len(by_question), len(chosen), unit="questions -> samples",
               min_score=args.min_score, unscored=sum(v is None for v in values))
    path = write_rows(stats, out.with_name(f"{out.stem}.stats{out.suffix}"), FILE_TYPES[out.suffix])
    print(f"per-question statistics in {path}")
    return chosen


def rewrite_command(args: argparse.Namespace, rows: list[dict], log: StepLog, out: Path, usage: Any) -> list[dict]:
    """Rewrite the kept samples with a second model (`--what`: both, reasoning, answer);
    keep rewrites that still score correct and read well, as SFT rows."""
    fmt = _reasoning_format(args, usage)
    rows = _with_keep(rows, args.min_readability)
    kept = [r for r in rows if passes(r)]
    log.record("correct+readable", len(rows), len(kept))
    env, model = load_env(args.run_dir), _model_config(args, out)
    result = rewrite(kept, model, env.score_item, what=args.what, sampling=_sampling(args),
                     scaling=ScalingConfig(concurrency=args.concurrency), cache=_cache(args), fmt=fmt,
                     min_readability=0.5 if args.min_readability is None else args.min_readability,
                     progress="rewrite")
    print(result.completions.line("rewrite"))
    log.record("rewrite correct+readable", len(kept), len(result.kept), what=args.what,
               incorrect=len(result.incorrect), unreadable=len(result.unreadable), failed=len(result.failed),
               requests=result.completions.sent, cached=result.completions.cached)
    _save_apart(result.incorrect + result.unreadable + result.failed, out, "dropped")
    run = run_info(args.run_dir)
    rewritten = []
    for row in sorted(result.kept, key=lambda r: (r["id"], r["sample_idx"])):
        made = sft_row(row, fmt, args.format, run)
        made["metadata"]["rewrite"] = {"model": model.model_source, "what": row["rewritten"]}
        rewritten.append(made)
    return rewritten


def difficulty(args: argparse.Namespace, rows: list[dict], log: StepLog, out: Path, usage: Any) -> list[dict]:
    """One 1-10 label per problem of the run; unparsable replies go to *.failures.*."""
    problems = list({r["id"]: {"id": r["id"], "question": r["question"], "expected": r["expected"]}
                     for r in rows}.values())
    result = label_difficulty(problems, _model_config(args, out), sampling=_sampling(args),
                              scaling=ScalingConfig(concurrency=args.concurrency), cache=_cache(args),
                              progress="difficulty")
    print(result.completions.line("difficulty"))
    log.record("labeled", len(problems), len(result.labeled), failures=len(result.failures),
               requests=result.completions.sent, cached=result.completions.cached)
    _save_apart(result.failures, out, "failures")
    return sorted(result.labeled, key=lambda r: r["id"])


def decontaminate_command(args: argparse.Namespace, usage: Any) -> dict[str, Any]:
    """Rows that contain a benchmark problem go to removed.*, the others to kept.*."""
    from skyeval.curation.decontaminate import BenchmarkIndex, decontaminate, read_benchmarks, report_table

    if not args.report_only and not args.out:
        usage("decontaminate needs --out DIR (or --report-only)")
    if bool(args.embeddings_url) != bool(args.embedding_model):
        usage("the model stage needs both --embeddings-url and --embedding-model")
    if (args.judge_backend or args.judge_set) and not args.judge_model:
        usage("--judge-backend and --judge-set need --judge-model")
    fields = _check_input(args, usage)  # before the index is built: a usage error costs nothing
    against = args.against.split(",") if args.against else None
    paraphrase = None if args.no_paraphrase else args.paraphrase
    sources, skipped = read_benchmarks(against, data_dir=args.data_dir)
    index = BenchmarkIndex.build(sources, not_checked=skipped, n=args.ngram, min_overlap=args.min_overlap,
                                 paraphrase=paraphrase)
    model = _model_stage(args, sources) if args.embeddings_url else None
    out = None if args.report_only else args.out
    try:
        report = decontaminate(args.run_dir, out, index, fields=fields, on=_part(args), format=args.format,
                               workers=args.workers, model=model, progress="decontaminate")
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


def dedup_command(args: argparse.Namespace, usage: Any) -> dict[str, Any]:
    """Exact and near duplicates go to duplicates.*, the first of each cluster to kept.*."""
    from skyeval.curation.dedup import DedupConfig, dedup

    fields = _check_input(args, usage)
    config = DedupConfig(threshold=args.threshold, num_perm=args.num_perm, shingle=args.shingle)
    report = dedup(args.run_dir, args.out, fields=fields, on=args.on, config=config, format=args.format,
                   workers=args.workers, progress="dedup")
    print(f"rows in {report['rows_in']}, kept {report['kept']}, exact duplicates {report['exact_duplicates']}, "
          f"near duplicates {report['near_duplicates']} (in {report['clusters_with_duplicates']} clusters), "
          f"compared on the {report['on']} of {', '.join(report['fields'])}")
    return report


def _check_input(args: argparse.Namespace, usage: Any) -> list[str]:
    """The fields to read (`--fields`, else the first row's default): a usage error when
    the input is missing, or its first row gives no text for `--on`."""
    from skyeval.curation.conversations import EmptyRowError, default_fields, field_texts
    from skyeval.curation.streams import as_dict, read_chunks

    try:
        first = next(read_chunks(args.run_dir, 1), [None])[0]
    except SkyevalError as err:
        usage(str(err))
    fields = [f for f in args.fields.split(",") if f] if args.fields else None
    if first is None:
        return fields or ["problem"]
    row = as_dict(first)
    try:
        fields = fields or default_fields(row)
        field_texts(row, fields, _part(args) or "conversation")
    except EmptyRowError as err:
        usage(f"{args.run_dir}: {err}")
    except SkyevalError as err:
        usage(f"{args.run_dir}: row 1: {err}")
    return fields


def _part(args: argparse.Namespace) -> str | None:
    """`--on`; decontaminate's default: all the text of fields named with --fields, else the prompt."""
    if args.on or args.command != "decontaminate":
        return args.on
    return "conversation" if args.fields else "prompt"


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


def _judge(args: argparse.Namespace, default_url: str | None = None) -> Any:
    """A judge's model config: `--judge-backend NAME` (a conf/model_config file, default
    openai: at `default_url` (decontaminate: the embedding server) with `--api-key-env`,
    unless `--judge-set` says otherwise) serving `--judge-model`, with `--judge-set
    key=value` fields; None without `--judge-model`."""
    if not args.judge_model:
        return None
    backend = args.judge_backend or "openai"
    overrides = [f"model_source={args.judge_model}"]
    url = default_url or getattr(args, "embeddings_url", None)
    if backend == "openai" and url:  # decontaminate: the embedding server's
        overrides += [f"api_url={url}", f"api_key_env={args.api_key_env or 'null'}"]
    return compose_model_config(backend, [*overrides, *args.judge_set])


def _judged(args: argparse.Namespace, rows: list[dict]) -> list[float | None]:
    """best-of-n --by judge: each sample's score from the project's judge (cached)."""
    from skyeval.curation.best_of_n import judge_values
    from skyeval.grading import GradingConfig, Judge, JudgeCache
    from skyeval.grading.apply import GradingStep

    grading = GradingConfig(mode="always", judge=_judge(args))
    judge_ = Judge(grading, JudgeCache(_cache(args) / "judge"))
    try:
        values = judge_values(rows, GradingStep(grading, judge_))
    finally:
        judge_.close()
    counts = judge_.summary()
    print(f"judge: {counts['requests']} requests sent, {counts['cached']} verdicts from the cache")
    return values


SFT_COLUMNS = ("id", "sample_idx", "keep")
PAIR_COLUMNS = ("id", "sample_idx", "prompt", "generation", "reasoning", "reasoning_content", "score", "usage", "keep",
                "expected", "verdict", "seed", "source", "difficulty", "transcript")
BEST_OF_N_COLUMNS = ("id", "sample_idx", "score", "extracted")
COMMANDS = {"sft": sft, "pairs": pairs, "best-of-n": best_of_n_command, "rewrite": rewrite_command,
            "difficulty": difficulty}
STREAM_COMMANDS = {"decontaminate": decontaminate_command, "dedup": dedup_command}
MODEL_COMMANDS = ("rewrite", "difficulty", "best-of-n")  # those that may call a model: --cache


def _columns(rows: list[dict], names: tuple[str, ...]) -> list[dict]:
    """Only the columns a step needs go to a Dataset (others may hold mixed types); `expected`
    as the judge reads it (a gold is a string, a number or a list, depending on the env)."""
    from skyeval.grading.prompts import gold_text

    return [{k: (gold_text(r.get(k)) if k == "expected" else r.get(k)) for k in names} for r in rows]


def _with_keep(rows: list[dict], min_readability: float | None) -> list[dict]:
    """Rows with `keep`, the whole sample judged (its reasoning too): as scored by a
    RejectionSampling env, or judged now when the run was scored by a plain env or
    `--min-readability` asks for another threshold. A run's keep that judged the answer
    alone (an older skyeval: no `reasoning_readability`) is judged again with the reasoning."""
    if rows and "keep" in rows[0] and min_readability is None:
        return [r if "reasoning_readability" in r else _reasoning_judged(r) for r in rows]
    threshold = 0.5 if min_readability is None else min_readability
    return [{**r, **judge(float(r["score"]), r.get("generation") or "", reasoning=reasoning_of(r),
                          min_readability=threshold)} for r in rows]


def _reasoning_judged(row: dict) -> dict:
    verdict = judge(float(row["score"]), row.get("generation") or "", reasoning=reasoning_of(row))
    thought = verdict["reasoning_readability"]
    keep = bool(row["keep"]) and (thought is None or thought >= 0.5)
    issues = list(dict.fromkeys([*(row.get("readability_issues") or []), *verdict["readability_issues"]]))
    return {**row, "reasoning_readability": thought, "readability_issues": issues, "keep": keep}


def _dropped_for(rows: list[dict]) -> dict[str, int]:
    """Why correct samples were not kept: their readability issues, counted."""
    return dict(Counter(issue for r in rows if float(r["score"]) >= 1.0 and not passes(r)
                        for issue in r.get("readability_issues") or []))


def _exclude(rows: list[dict], path: Path, log: StepLog) -> list[dict]:
    """Drop the samples listed in `path` (decontaminate's removed.jsonl, dedup's
    duplicates.jsonl: rows with `id` and `sample_idx`, at the top or in `metadata`; a row
    without `sample_idx` drops every sample of its problem)."""
    samples, problems = set(), set()
    for row in read_jsonl(path):
        about = row.get("metadata") or {}
        pid, idx = row.get("id", about.get("id")), row.get("sample_idx", about.get("sample_idx"))
        if pid is None:
            raise SkyevalError(f"--exclude {path}: a row without `id` (its keys: {', '.join(sorted(row))})")
        if idx is None:
            problems.add(str(pid))
        else:
            samples.add((str(pid), int(idx)))
    kept = [r for r in rows if str(r["id"]) not in problems and (str(r["id"]), int(r["sample_idx"])) not in samples]
    log.record(f"excluded ({path.name})", len(rows), len(kept))
    return kept


def _with_difficulty(rows: list[dict], args: argparse.Namespace, run_dir: Path, log: StepLog) -> list[dict]:
    """Rows with `difficulty` from `--difficulty FILE` (default: RUN_DIR/curated/difficulty.jsonl
    when it exists), joined by problem id, for the exports' metadata."""
    if args.command == "difficulty":
        return rows
    path = Path(args.difficulty) if args.difficulty else run_dir / "curated" / "difficulty.jsonl"
    if not path.is_file():
        return rows
    labels = {str(r["id"]): r["difficulty"] for r in read_jsonl(path)}
    joined = [{**r, "difficulty": labels.get(str(r["id"]))} for r in rows]
    log.record(f"difficulty labels ({path.name})", len(rows), sum(r["difficulty"] is not None for r in joined),
               unit="samples -> labelled")
    return joined


def _check_export(args: argparse.Namespace, usage: Any) -> None:
    """An export's --format and --reasoning together, and --by's own options."""
    if hasattr(args, "reasoning"):
        try:
            check_format(getattr(args, "format", "messages"), _reasoning_format(args, usage))
        except SkyevalError as err:
            usage(str(err))
    if args.command == "best-of-n":
        if args.by == "reward" and not args.reward_url:
            usage("--by reward needs --reward-url URL (an OpenRLHF-style /get_reward endpoint)")
        if args.by == "judge" and not args.judge_model:
            usage("--by judge needs --judge-model M (and --judge-set api_url=... for its server)")


def _reasoning_format(args: argparse.Namespace, usage: Any) -> ReasoningFormat:
    tags = tuple(args.think_tags.split(",")) if args.think_tags else DEFAULT_THINK_TAGS
    try:
        return ReasoningFormat(args.reasoning, tags)
    except (ValueError, SkyevalError) as err:
        usage(str(err))


def _model_config(args: argparse.Namespace, out: Path | None = None) -> Any:
    """`--model NAME --set k=v ...` composed through Hydra like the CLI (every model_config group).
    `openai_batch` keeps its batches beside `out` (`OUT.batches/`): the same command picks them up."""
    config = compose_model_config(args.model, args.set)
    if out is not None and getattr(config, "state_dir", "") is None:
        config.state_dir = str(out.with_name(f"{out.stem}.batches"))
    return config


def _ray_log(out: Path) -> Path:
    """Where Ray's lines go when a step is large enough to run on Ray: beside the output."""
    return out.parent / "logs.txt"


def _cache(args: argparse.Namespace) -> Path:
    """Where model replies are cached: --cache, else RUN_DIR/curated/cache."""
    return Path(args.cache) if args.cache else Path(args.run_dir) / "curated" / "cache"


def _sampling(args: argparse.Namespace) -> SamplingParams:
    return SamplingParams(temperature=args.temperature, max_tokens=args.max_tokens)


def _save_apart(rows: list[dict], out: Path, name: str) -> None:
    if rows:
        path = write_rows(rows, out.with_name(f"{out.stem}.{name}{out.suffix}"), FILE_TYPES[out.suffix])
        print(f"{len(rows)} {name} rows in {path}")


def _mean(values: Any) -> float | None:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def _usage(parser: argparse.ArgumentParser, command: str) -> Any:
    """A usage error of `command`: its usage line and the message on stderr, exit 2."""
    sub = parser._subparsers._group_actions[0].choices[command]  # noqa: SLF001 (argparse keeps them there)

    def fail(message: str) -> NoReturn:
        sub.error(message)

    return fail


def _export_options(cmd: argparse.ArgumentParser, formats: bool = True) -> None:
    if formats:
        cmd.add_argument("--format", choices=FORMATS, default="messages",
                         help="messages: role/content turns (TRL's SFTTrainer, the default); sharegpt: "
                              "from/value turns (LLaMA-Factory). The file type comes from --out's suffix")
    cmd.add_argument("--reasoning", choices=("think", "sky_t1", "reasoning_content", "drop"), default="think",
                     help="keep the reasoning before the answer in <think> tags (default), in Sky-T1's markers, in "
                          "the assistant message's reasoning_content (messages only), or drop it")
    cmd.add_argument("--think-tags", metavar="OPEN,CLOSE",
                     help="think block tags, read and written (default <think>,</think>)")


def _judge_options(cmd: argparse.ArgumentParser, what: str) -> None:
    cmd.add_argument("--judge-model", help=f"the judge model ({what})")
    cmd.add_argument("--judge-backend", metavar="NAME", help="the judge's conf/model_config: openai (default), vllm, ray")
    cmd.add_argument("--judge-set", action="append", default=[], metavar="KEY=VALUE",
                     help="a field of the judge's model config, e.g. api_url=URL, price={input:0.15,output:0.6}")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="curate", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        cmd = sub.add_parser(name)
        cmd.add_argument("run_dir", help="a run folder written by `skyeval.cli evaluate` or `score`")
        cmd.add_argument("--out", help="output file, .jsonl, .json or .parquet (default RUN_DIR/curated/<command>.jsonl)")
        cmd.add_argument("--exclude", action="append", default=[], metavar="FILE",
                         help="drop the samples listed in FILE: decontaminate's removed.jsonl, dedup's duplicates.jsonl")
        if name != "difficulty":
            cmd.add_argument("--difficulty", metavar="FILE", help="difficulty labels to join into the metadata "
                             "(default RUN_DIR/curated/difficulty.jsonl when it exists)")
        if name in ("sft", "rewrite", "pairs"):
            cmd.add_argument("--min-readability", type=float, default=None,
                             help="re-judge keep with this threshold (default: the run's keep, else 0.5)")
        if name in ("sft", "rewrite", "best-of-n"):
            _export_options(cmd)
        if name == "pairs":
            _export_options(cmd, formats=False)
            cmd.add_argument("--silc", action="store_true", help="also pair short incorrect with longer correct")
            cmd.add_argument("--prompt", choices=("explicit", "implicit"), default="explicit",
                             help="TRL's prompt style: a `prompt` column (explicit, default) or the prompt inside "
                                  "chosen and rejected (implicit)")
        if name == "best-of-n":
            cmd.add_argument("--ks", default="1", help="comma-separated k of pass@k, e.g. 1,4")
            cmd.add_argument("--by", choices=("score", "reward", "judge"), default="score",
                             help="score: the run's grades (default); reward: a reward model over HTTP "
                                  "(--reward-url); judge: the project's model judge (--judge-model)")
            cmd.add_argument("--reward-url", metavar="URL", help="an OpenRLHF-style reward endpoint, e.g. "
                             "http://127.0.0.1:5000/get_reward (skyeval.cli serve-reward is one)")
            _judge_options(cmd, "--by judge: the openai backend unless --judge-backend says otherwise; its server "
                                "with --judge-set api_url=URL")
            cmd.add_argument("--min-score", type=float, default=None,
                             help="leave out questions whose best sample scores below this (e.g. 1: solved only)")
        if name in ("rewrite", "difficulty"):
            cmd.add_argument("--model", required=True, help="a conf/model_config name: openai, openai_batch, vllm, ray, reference")
            cmd.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="model config field")
            cmd.add_argument("--temperature", type=float, default=0.0)
            cmd.add_argument("--max-tokens", type=int, default=4096)
            cmd.add_argument("--concurrency", type=int, default=64)
        if name == "rewrite":
            cmd.add_argument("--what", choices=("both", "reasoning", "answer"), default="both",
                             help="what the model rewrites: the reasoning and the answer (default, as Sky-T1 "
                                  "reformats the whole trace), or one of them")
        if name in MODEL_COMMANDS:
            cmd.add_argument("--cache", metavar="DIR", help="cache folder of model replies (default RUN_DIR/curated/"
                             "cache): a re-run sends no request it already paid for")
    for name in STREAM_COMMANDS:
        cmd = sub.add_parser(name)
        cmd.add_argument("run_dir", metavar="INPUT", help="a run folder, or a JSONL or Parquet file of rows "
                         "(problems, conversations in messages or ShareGPT form, samples)")
        cmd.add_argument("--out", required=name == "dedup", help="output folder: kept.<format>, report.json, ...")
        cmd.add_argument("--format", choices=("jsonl", "parquet"), default="jsonl", help="file type of the outputs")
        cmd.add_argument("--fields", help="comma-separated fields to read (default: messages or conversations, "
                         "else a sample's prompt and generation, else the first of problem, question, prompt, text)")
        cmd.add_argument("--on", choices=PARTS, default=None,
                         help="the part compared: the user turns (prompt), the assistant turns (response, reasoning "
                              "included) or both (conversation). Default: " + (
                                  "the prompt, or all the text of the fields named with --fields"
                                  if name == "decontaminate" else
                                  "conversation for conversations and samples, prompt for problem files"))
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
            _judge_options(model, "confirms each candidate; default: on the embedding server; without one the "
                                  "nearest candidate is the match")
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
        sys.exit("curate: interrupted: the output was not written; model replies received so far are cached, so the "
                 "same command resumes without paying for them again")
