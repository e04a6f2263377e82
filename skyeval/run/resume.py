"""Resuming: which folder holds a config's earlier work, and what that work finished.

Its records are reconciled with this run's: counted once, superseded failures dropped."""

from __future__ import annotations

import logging
import os
import shutil
from array import array
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from skyeval.config.fingerprints import Fingerprint
from skyeval.results import (
    Key,
    KeySet,
    RunFolder,
    Shard,
    UnreadableLines,
    covers,
    key_hash,
    key_of,
    read_json,
    read_jsonl,
    selection_name,
    write_rows,
)
from skyeval.run.records import GENERATE_STAGES

if TYPE_CHECKING:
    from skyeval.run.recorder import Recorder

log = logging.getLogger("skyeval")

def run_folder(identity: Fingerprint, run_dir: Path) -> RunFolder:
    """`run_dir`, unless it is new and a sibling folder of the same readable name holds this
    run's earlier work (same config, same data) under another fingerprint digest (written
    before a knob or the data's identity entered it, by an older skyeval): resuming there
    loses nothing. A folder of other data is never taken: another copy gets its own folder."""
    folder = RunFolder(run_dir)
    if folder.run_file.exists():
        return folder
    for sibling in identity.siblings(run_dir):
        previous = read_json(sibling / "run.json")
        if previous is not None and identity.matches(previous) and identity.same_data(previous):
            log.info("resuming %s: the earlier run folder of this config (named by an older skyeval)", sibling)
            return RunFolder(sibling)
    return folder


def recorded_data(config_only: Fingerprint, run_dir: Path) -> dict[str, Any] | None:
    """The data identity recorded by the one folder of this config at `run_dir` (its name's
    digest still to fill in: among the folders of its readable name), or None."""
    named = config_only.folder(run_dir)
    found = [read_json(path / "run.json") for path in (named, *config_only.siblings(named))]
    data = [previous["data"] for previous in found
            if previous is not None and previous.get("data") is not None and config_only.matches(previous)]
    return data[0] if len(data) == 1 else None


def smaller_selection(folder: RunFolder, config: Any) -> Path | None:
    """Where this run's summary goes when the folder's summary.json counts a selection this
    one does not cover (fewer problems or samples): `selections/<name>/` (`selection_name`),
    so a smaller run never rewrites a larger run's summary; None: summary.json. Shards and
    `score` always write the folder's own."""
    previous = read_json(folder.summary) if not config.overwrite else None
    if previous is None or config.shard.active or config.stage == "score":
        return None
    asked = previous.get("selection") or {}
    old_config = previous.get("config") or {}
    old = (asked.get("limit", (old_config.get("env") or {}).get("limit")),
           asked.get("n", (old_config.get("sampling_params") or {}).get("n", 1)))
    limit = config.env.get("limit")
    new = (None if limit is None else int(limit), config.sampling_params.n)
    if covers(new, (None if old[0] is None else int(old[0]), int(old[1]))):
        return None
    return folder.path / selection_name(*new)


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
        scored_on = array("Q")
        for r in folder.records("generations", self.unreadable["generations"]):
            key = key_of(r)
            generated.append(key_hash(key))
            generated_as.append(key_hash(made_from(key, r.get("prompt_hash"))))
        for r in () if rescore else folder.records("scores", self.unreadable["scores"]):
            key = key_of(r)
            scored.append(key_hash(key))
            scored_as.append(key_hash(made_from(key, r.get("prompt_hash"), r.get("gold_hash"), r.get("grading_hash"))))
            scored_on.append(key_hash(made_from(key, r.get("prompt_hash"), r.get("gold_hash"))))
        self.generated, self.generated_as = KeySet(hashes=generated), KeySet(hashes=generated_as)
        self.scored, self.scored_as = KeySet(hashes=scored), KeySet(hashes=scored_as)
        self.scored_for = KeySet(hashes=scored_on)  # by problem (prompt, gold) alone: to tell a grading change
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

    def scored_same(self, key: Key, prompt_hash: str | None, gold_hash: str | None,
                    grading_hash: str | None = None) -> bool:
        """Whether an earlier score of `key` is of a generation of this prompt against this
        gold, graded this way (`grading_hash`: a judge's part, None for the rules alone)."""
        return (made_from(key, prompt_hash, gold_hash, grading_hash) in self.scored_as
                or made_from(key, None, None, None) in self.scored_as)

    def scored_for_problem(self, key: Key, prompt_hash: str | None, gold_hash: str | None) -> bool:
        """Whether an earlier score of `key` is of this prompt against this gold, graded any way."""
        return made_from(key, prompt_hash, gold_hash) in self.scored_for

    def done(self, key: Key, stage: str, retry_failures: bool, made: tuple[str, ...] | None = None) -> bool:
        """Whether an earlier run finished this sample for `stage` (its records are counted
        later); with `made` (prompt hash, gold hash, grading hash) only when made from the
        same problem and graded the same way."""
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
