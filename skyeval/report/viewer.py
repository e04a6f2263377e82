"""The static per-sample viewer: `report/viewer.html` plus one folder of data files per run.

Pages opened from file:// cannot fetch() other files, so data travels as JavaScript files
that the page adds as `<script src>` when it needs them: `data/index.js` (the runs),
`data/rN/list-K.js` (compact rows: outcome, answers, short text, for filters and search)
of the samples the run's summary counts (`skyeval.results.Selection`)
and `data/rN/text-K.js` (full prompt, reasoning and answer, loaded when a sample is opened).
A run is read once, streamed, and written in chunks, so 100k samples stay usable.
"""

from __future__ import annotations

import json
import shutil
from importlib import resources
from pathlib import Path
from typing import Any

from skyeval.report.runs import RunInfo, problem_of

LIST_CHUNK = 5000  # rows per list file
TEXT_CHUNK = 200  # samples per full-text file
HEAD, TAIL = 160, 200  # characters of prompt start / answer end kept in list rows
ASSETS = ("viewer.html", "viewer.js", "viewer.css")

CORRECT, WRONG, FAILED = 0, 1, 2


def write_viewer(runs: list[RunInfo], labels: list[str], out_dir: Path) -> Path:
    """Write viewer.html, its assets and the data files of `runs` under `out_dir`."""
    data = out_dir / "data"
    if data.exists():
        shutil.rmtree(data)
    data.mkdir(parents=True)
    assets = resources.files("skyeval.report") / "assets"
    for name in ASSETS:
        (out_dir / name).write_bytes((assets / name).read_bytes())
    index = []
    for i, (run, label) in enumerate(zip(runs, labels)):
        entry = _write_run(run, data / f"r{i}", f"r{i}")
        index.append({"key": f"r{i}", "label": label, "env": run.env, "model": run.model,
                      "path": str(run.path), **entry})
    _write_js(data / "index.js", "SKYEVAL_INDEX", {"runs": index})
    return out_dir / "viewer.html"


def _write_run(run: RunInfo, folder: Path, key: str) -> dict[str, Any]:
    """Stream the samples of one run's selection into list and text chunks; returns counts for the index."""
    folder.mkdir(parents=True)
    selection = run.selection
    scores: dict[tuple[str, int], tuple] = {}
    for r in selection.records(run.path, "scores"):
        scores[(str(r["id"]), int(r["sample_idx"]))] = (
            float(r.get("score") or 0.0), r.get("extracted"), bool(r.get("parse_failed")), r.get("expected"),
            r.get("finish_reason"), _judge(r), problem_of(r))
    failures: dict[tuple[str, int], str] = {}
    for r in selection.records(run.path, "failures"):
        failures[(str(r["id"]), int(r["sample_idx"]))] = (
            f"{r.get('stage', '?')} failed: {r.get('error_type', 'error')}: {r.get('message', '')}")

    writer = _ChunkWriter(folder, key)
    for gen in selection.records(run.path, "generations"):
        k = (str(gen["id"]), int(gen["sample_idx"]))
        writer.add(k, scores.pop(k, None), failures.pop(k, None), gen)
    for k, score in scores.items():  # scored, but the generation record is missing (older folders)
        writer.add(k, score, failures.pop(k, None), None)
    for k, error in failures.items():  # failed before any generation
        writer.add(k, None, error, None)
    return writer.close()


class _ChunkWriter:
    def __init__(self, folder: Path, key: str) -> None:
        self.folder, self.key = folder, key
        self.rows: list[list] = []
        self.texts: list[list] = []
        self.prompts: dict[str, str] = {}
        self.list_chunks = self.text_chunks = self.samples = 0
        self.outcomes = [0, 0, 0]

    def add(self, key: tuple[str, int], score: tuple | None, error: str | None, gen: dict | None) -> None:
        pid, idx = key
        value, extracted, parse_failed, gold, finish, judge, problem = score or (0.0, None, False, None, None, None, None)
        finish = (gen or {}).get("finish_reason") or finish
        status = FAILED if error is not None or score is None else CORRECT if value >= 1 - 1e-9 else WRONG
        self.outcomes[status] += 1
        text_at, prompt_head, answer_tail = -1, "", ""
        if gen is not None:
            prompt = _prompt_text(gen.get("prompt"))
            answer = str(gen.get("generation") or "")
            prompt_head, answer_tail = prompt[:HEAD], answer[-TAIL:]
            self.prompts.setdefault(pid, prompt)
            self.texts.append([pid, str(gen.get("reasoning") or ""), answer, gen.get("usage"), gen.get("seed")])
            text_at = self.text_chunks * TEXT_CHUNK + len(self.texts) - 1
            if len(self.texts) == TEXT_CHUNK:
                self._flush_texts()
        self.rows.append([pid, idx, status, int(finish == "length"), int(parse_failed), round(value, 4),
                          _short(extracted), _short(gold), finish, text_at, prompt_head, answer_tail, error, judge,
                          problem])  # problem: its gold and text as a hash; the diff pairs only equal ones
        self.samples += 1
        if len(self.rows) == LIST_CHUNK:
            self._flush_rows()

    def _flush_rows(self) -> None:
        _write_js(self.folder / f"list-{self.list_chunks}.js", None, self.rows,
                  call=f"SKYEVAL.list({json.dumps(self.key)}, {self.list_chunks}, ")
        self.list_chunks += 1
        self.rows = []

    def _flush_texts(self) -> None:
        _write_js(self.folder / f"text-{self.text_chunks}.js", None, {"prompts": self.prompts, "samples": self.texts},
                  call=f"SKYEVAL.text({json.dumps(self.key)}, {self.text_chunks}, ")
        self.text_chunks += 1
        self.texts, self.prompts = [], {}

    def close(self) -> dict[str, Any]:
        if self.rows or not self.list_chunks:
            self._flush_rows()
        if self.texts:
            self._flush_texts()
        correct, wrong, failed = self.outcomes
        return {"samples": self.samples, "list_chunks": self.list_chunks, "text_chunk_size": TEXT_CHUNK,
                "correct": correct, "wrong": wrong, "failed": failed}


def _write_js(path: Path, variable: str | None, value: Any, call: str = "") -> None:
    body = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    text = f"window.{variable} = {body};\n" if variable else f"{call}{body});\n"
    path.write_text(text, encoding="utf-8")


def _prompt_text(prompt: Any) -> str:
    """A prompt string, or chat messages as "role: content" blocks."""
    if isinstance(prompt, list):
        return "\n\n".join(f"[{m.get('role', '?')}]\n{m.get('content', '')}" if isinstance(m, dict) else str(m)
                           for m in prompt)
    return "" if prompt is None else str(prompt)


def _judge(record: dict[str, Any]) -> list | None:
    """A score record's judge part for the viewer: [decided (1: the judge's verdict is
    the score, 0: it was asked but did not answer), verdict, error, reply]; None when no
    judge was asked."""
    if "judge_verdict" not in record:
        return None
    return [int(record.get("graded_by") == "judge"), record.get("judge_verdict"), record.get("judge_error"),
            str(record.get("judge_reply") or "")[-2000:]]


def _short(value: Any, limit: int = 200) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + "…"
