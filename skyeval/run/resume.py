"""Resuming: which folder holds a config's earlier work, and what that work finished.

Its records are reconciled with this run's: counted once, superseded failures dropped."""

from __future__ import annotations

import logging
import os
import re
import shutil
from array import array
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

from skyeval.config.fingerprints import compatible, fingerprint
from skyeval.config.schema import RunConfig
from skyeval.results import (
    Key,
    KeySet,
    RunFolder,
    Shard,
    UnreadableLines,
    key_hash,
    key_of,
    read_json,
    read_jsonl,
    write_rows,
)
from skyeval.run.records import GENERATE_STAGES

if TYPE_CHECKING:
    from skyeval.run.recorder import Recorder

log = logging.getLogger("skyeval")

_HASHED = re.compile(r"^(.*)_[0-9a-f]{8}$")


def same_config(config: RunConfig) -> Callable[[dict[str, Any]], bool]:
    """Whether a folder's run.json fingerprint describes `config`: the same values, keys
    that only one side has holding their defaults (`compatible`)."""
    current, defaults = fingerprint(config), fingerprint(_defaults(config))
    return lambda previous: compatible(previous, current, defaults)


def run_folder(config: RunConfig, run_dir: Path) -> RunFolder:
    """`run_dir`, unless it is new and a sibling folder of the same readable name holds this
    config's earlier work under another fingerprint digest (written before a knob existed,
    by an older skyeval): resuming there loses nothing."""
    folder = RunFolder(run_dir)
    match = _HASHED.match(run_dir.name)
    if folder.run_file.exists() or match is None:
        return folder
    same = same_config(config)
    for sibling in sorted(run_dir.parent.glob(f"{glob_escape(match[1])}_" + "[0-9a-f]" * 8)):
        previous = read_json(sibling / "run.json") if sibling != run_dir else None
        if previous is not None and same(previous):
            log.info("resuming %s: the earlier run folder of this config (named by an older skyeval)", sibling)
            return RunFolder(sibling)
    return folder


def glob_escape(text: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", text)


def _defaults(config: RunConfig) -> dict[str, Any]:
    """The sections of `config` as their classes' defaults (the env's knobs, the model
    config's fields, a default template and sampling), for `compatible`."""
    import dataclasses

    from skyeval.backends.base import SamplingParams
    from skyeval.envs.registry import env_defaults
    from skyeval.templates import Template

    model = {f.name: f.default if f.default is not dataclasses.MISSING else f.default_factory()
             for f in dataclasses.fields(config.model_config)
             if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING}
    return {"env": env_defaults(config.env), "template": dataclasses.asdict(Template()),
            "model_config": model, "sampling_params": dataclasses.asdict(SamplingParams())}


class EarlierRecords:
    """Keys of what earlier runs left in the folder (hashes only), and the files they are in.

    Each key is kept twice: alone, and with what the record was made from (a generation's
    `prompt_hash`, a score's `prompt_hash` and `gold_hash`), so a record is reused only for
    the same prompt and gold. Records of an older skyeval carry no hashes and are reused."""

    def __init__(self, folder: RunFolder, stage: str) -> None:
        self.parts = {kind: folder.parts(kind) for kind in ("generations", "scores", "failures")}
        self.unreadable = {kind: UnreadableLines() for kind in self.parts}  # torn lines, by kind
        rescore = stage == "score"
        generated, generated_as, scored, scored_as = array("Q"), array("Q"), array("Q"), array("Q")
        for r in folder.records("generations", self.unreadable["generations"]):
            key = key_of(r)
            generated.append(key_hash(key))
            generated_as.append(key_hash(made_from(key, r.get("prompt_hash"))))
        for r in () if rescore else folder.records("scores", self.unreadable["scores"]):
            key = key_of(r)
            scored.append(key_hash(key))
            scored_as.append(key_hash(made_from(key, r.get("prompt_hash"), r.get("gold_hash"))))
        self.generated, self.generated_as = KeySet(hashes=generated), KeySet(hashes=generated_as)
        self.scored, self.scored_as = KeySet(hashes=scored), KeySet(hashes=scored_as)
        # score failures of the infrastructure (workers that could not run) are scored again
        fails = [(key_of(r), r.get("stage") in GENERATE_STAGES) for r in folder.records("failures", self.unreadable["failures"])
                 if not ((rescore or r.get("error_type") == "infrastructure") and r.get("stage") == "score")]
        # samples whose generation line is torn: generated again, whatever else they have
        self.torn_generations = KeySet(k for keys in self.unreadable["generations"].keys.values() for k in keys)
        self.failed_generating = KeySet(k for k, gen in fails if gen)
        self.failed_scoring = KeySet(k for k, gen in fails if not gen)

    @property
    def empty(self) -> bool:
        return not (len(self.generated) or len(self.scored) or len(self.failed_generating) or len(self.failed_scoring)
                    or self.unreadable_lines)

    @property
    def unreadable_lines(self) -> int:
        return sum(lines.total for lines in self.unreadable.values())

    def warn_unreadable(self, root: Path, stage: str) -> None:
        """One warning per file with unreadable lines, saying what the run does about them."""
        done = {"generations": "generated again" if stage != "score" else "without a generation to score "
                "(run evaluate to generate it again)", "scores": "scored again", "failures": "tried again"}
        for kind, lines in self.unreadable.items():
            lines.warn(log, root, lambda path, kind=kind: f"its sample is {done[kind]}")

    def generated_same(self, key: Key, prompt_hash: str | None) -> bool:
        """Whether an earlier generation of `key` was made from this prompt (or predates hashes)."""
        return made_from(key, prompt_hash) in self.generated_as or made_from(key, None) in self.generated_as

    def scored_same(self, key: Key, prompt_hash: str | None, gold_hash: str | None) -> bool:
        """Whether an earlier score of `key` is of a generation of this prompt against this gold."""
        return (made_from(key, prompt_hash, gold_hash) in self.scored_as
                or made_from(key, None, None) in self.scored_as)

    def done(self, key: Key, stage: str, retry_failures: bool, made: tuple[str, str] | None = None) -> bool:
        """Whether an earlier run finished this sample for `stage` (its records are counted
        later); with `made` (prompt hash, gold hash) only when made from the same problem."""
        if key in self.torn_generations and key not in self.generated:
            return False
        if stage == "evaluate" and key in self.scored and (made is None or self.scored_same(key, *made)):
            return True
        if stage == "generate" and key in self.generated and (made is None or self.generated_same(key, made[0])):
            return True
        if retry_failures:
            return False
        if key in self.failed_scoring and stage != "generate":
            return made is None or key not in self.generated or self.generated_same(key, made[0])
        return key in self.failed_generating and key not in self.generated

    def generations(self) -> Iterator[dict[str, Any]]:
        """The saved generations, streamed from the earlier part files."""
        return records(self.parts["generations"])


def made_from(key: Key, *hashes: str | None) -> Key:
    """`key` joined with the hashes of what its record was made from ("" for none)."""
    return (f"{key[0]}\x01{'/'.join(h or '' for h in hashes)}", key[1])


def account(earlier: EarlierRecords, recorder: Recorder, members: KeySet, n: int, stage: str, shard: Shard,
            stale_scored: KeySet | None = None, stale_generated: KeySet | None = None) -> int:
    """Count what earlier runs left for this run's samples into `recorder`, and drop
    failure records that a later success (or a newer failure of the same sample)
    superseded, score records made from another prompt or gold (`stale_scored`), and
    generations of another prompt (`stale_generated`) generated again. A shard rewrites only
    its own part files: the other shards may be writing theirs right now. Returns how many
    earlier samples lie outside this run's selection (other problems, indices >= n): kept
    in the folder, not counted."""
    fresh = earlier.empty  # nothing earlier to count or supersede: skip the look-up sets
    new_scored = KeySet(hashes=() if fresh else recorder.new_scored)  # 8 bytes a key, sorted
    new_failed = KeySet(hashes=() if fresh else recorder.new_failed)
    new_generated = KeySet(hashes=() if fresh else recorder.new_generated)
    stale_scored, stale_generated = stale_scored or KeySet(), stale_generated or KeySet()

    def ours(key: Key) -> bool:
        return key[1] < n and (key[0], -1) in members

    def superseded(record: dict[str, Any]) -> bool:
        key = key_of(record)
        if key in new_failed or key in new_scored or key in earlier.scored:
            return True
        if record.get("stage") in GENERATE_STAGES:
            return key in earlier.generated or key in new_generated
        return stage == "score"  # a re-score replaces every earlier score failure

    def mine(path: Path) -> bool:
        return path.name.startswith(shard.prefix) and "per_problem" not in path.name

    def replaced(record: dict[str, Any]) -> bool:
        key = key_of(record)
        return key in stale_generated and key in new_generated

    for kind, lines in earlier.unreadable.items():  # heal: drop torn lines once their samples are redone
        for path in lines.lines:
            if mine(path) and (kind != "generations" or all(k in new_generated for k in lines.keys.get(path, ()))):
                write_rows(read_jsonl(path), path)

    outside = 0
    if stage == "evaluate":
        for path in earlier.parts["scores"]:
            if "per_problem" in path.name:
                continue
            dropped = False
            for record in read_jsonl(path):
                key = key_of(record)
                if key in stale_scored:
                    dropped = True
                elif ours(key):
                    with recorder.lock:
                        recorder.metrics.add_score(record)
                        recorder.progress.counts["scored"] += 1
                else:
                    outside += shard.owns(str(record["id"]))  # another shard's records are not outside
            if dropped and mine(path):
                write_rows((r for r in read_jsonl(path) if key_of(r) not in stale_scored), path)
    elif stage == "generate" and not fresh:
        for record in records(earlier.parts["generations"]):
            key = key_of(record)
            if not ours(key):
                outside += shard.owns(key[0])
            elif key not in new_generated:  # an earlier run's generation, reused: its tokens count
                with recorder.lock:
                    recorder.metrics.add_usage(record)
    if len(stale_generated):  # the old generation of a sample generated again
        for path in earlier.parts["generations"]:
            if mine(path) and any(replaced(r) for r in read_jsonl(path)):
                write_rows((r for r in read_jsonl(path) if not replaced(r)), path)
    for path in earlier.parts["failures"]:
        dropped = False
        for record in read_jsonl(path):
            if superseded(record):
                dropped = True
                continue
            if ours(key_of(record)):
                recorder.count_failure(record)
            else:
                outside += shard.owns(str(record["id"]))
        if dropped and path.name.startswith(shard.prefix):
            write_rows((r for r in read_jsonl(path) if not superseded(r)), path)
    return outside


def replace_scores(folder: RunFolder, staging: Path) -> None:
    """The `score` stage's new scores replace the old ones."""
    for path in folder.parts("scores"):
        if "per_problem" not in path.name:
            path.unlink()
    for path in staging.glob("*.jsonl"):
        os.replace(path, folder.dir("scores") / path.name)
    shutil.rmtree(staging, ignore_errors=True)


def records(paths: list[Path]) -> Iterator[dict[str, Any]]:
    """Records of part files, per-problem rows left out."""
    for path in paths:
        if "per_problem" not in path.name:
            yield from read_jsonl(path)
