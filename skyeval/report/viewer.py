"""The static per-sample viewer: `report/viewer.html` plus one folder of data files per run.

Pages opened from file:// cannot fetch() other files, so data travels as JavaScript files
that the page adds as `<script src>` when it needs them: `data/index.js` (the runs),
`data/rN/list-K.js` (compact rows: outcome, answers, short text, for filters and search)
of the samples the run's summary counts (`skyeval.results.Selection`)
and `data/rN/text-K.js` (full prompt, reasoning and answer, loaded when a sample is opened).
A run is read once, streamed, and written in chunks, so 100k samples stay usable.
The page typesets maths with KaTeX, copied from `assets/katex` beside it (no network).
"""

from __future__ import annotations

import json
import shutil
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from skyeval.report.runs import RunInfo

LIST_CHUNK = 5000  # rows per list file
TEXT_CHUNK = 200  # samples per full-text file
HEAD, TAIL = 160, 200  # characters of prompt start / answer end kept in list rows
SHORT, FULL = 200, 20000  # characters of an extracted or gold answer in list rows / in the full texts

CORRECT, WRONG, FAILED = 0, 1, 2


def write_viewer(runs: list[RunInfo], labels: list[str], out_dir: Path) -> Path:
    """Write viewer.html, its assets and the data files of `runs` under `out_dir`."""
    data = out_dir / "data"
    if data.exists():
        shutil.rmtree(data)
    data.mkdir(parents=True)
    _copy_assets(resources.files("skyeval.report") / "assets", out_dir)
    index = []
    for i, (run, label) in enumerate(zip(runs, labels)):
        entry = _write_run(run, data / f"r{i}", f"r{i}")
        index.append({"key": f"r{i}", "label": label, "env": run.env, "model": run.model,
                      "answers": "code" if _is_code(run) else "maths", "path": str(run.path), **entry})
    _write_js(data / "index.js", "SKYEVAL_INDEX", {"runs": index})
    return out_dir / "viewer.html"


def _copy_assets(source: Traversable, target: Path) -> None:
    """The page, its script and style, and KaTeX (katex/: script, style, fonts)."""
    target.mkdir(parents=True, exist_ok=True)
    for entry in source.iterdir():
        if entry.is_dir():
            if entry.name != "__pycache__":
                _copy_assets(entry, target / entry.name)
        else:
            (target / entry.name).write_bytes(entry.read_bytes())


def _is_code(run: RunInfo) -> bool:
    """Whether the run's extracted answers are programs (a code benchmark), shown as code, not maths."""
    return str((run.config.get("env") or {}).get("_target_", "")).startswith("skyeval.envs.code.")


def _write_run(run: RunInfo, folder: Path, key: str) -> dict[str, Any]:
    """Stream the samples of one run's selection into list and text chunks; returns counts for the index."""
    folder.mkdir(parents=True)
    selection = run.selection
    scores: dict[tuple[str, int], tuple] = {}
    for r in selection.records(run.path, "scores"):
        scores[(str(r["id"]), int(r["sample_idx"]))] = (
            float(r.get("score") or 0.0), r.get("extracted"), bool(r.get("parse_failed")), r.get("expected"),
            r.get("finish_reason"), _judge(r))
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
        value, extracted, parse_failed, gold, finish, judge = score or (0.0, None, False, None, None, None)
        finish = (gen or {}).get("finish_reason") or finish
        status = FAILED if error is not None or score is None else CORRECT if value >= 1 - 1e-9 else WRONG
        self.outcomes[status] += 1
        text_at, prompt_head, answer_tail = -1, "", ""
        if gen is not None:
            prompt = _prompt_text(gen.get("prompt"))
            answer = str(gen.get("generation") or "")
            prompt_head, answer_tail = prompt[:HEAD], answer[-TAIL:]
            self.prompts.setdefault(pid, prompt)
            self.texts.append([pid, str(gen.get("reasoning") or ""), answer, gen.get("usage"), gen.get("seed"),
                               answer_text(extracted, FULL), answer_text(gold, FULL)])
            text_at = self.text_chunks * TEXT_CHUNK + len(self.texts) - 1
            if len(self.texts) == TEXT_CHUNK:
                self._flush_texts()
        self.rows.append([pid, idx, status, int(finish == "length"), int(parse_failed), round(value, 4),
                          answer_text(extracted, SHORT), answer_text(gold, SHORT), finish, text_at, prompt_head,
                          answer_tail, error, judge])
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


def answer_text(value: Any, limit: int) -> str | list[str] | None:
    """An extracted or gold answer as the viewer shows it: its text (a number as written,
    never JSON-quoted), or for several golds the list of their texts; cut to about `limit`
    characters, a cut marked by a final "…"."""
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        texts, size = [], 0
        for item in value:
            text = answer_text(item, limit)
            if text is None:
                continue
            if size >= limit:
                texts.append("…")
                break
            texts.append(text if isinstance(text, str) else ", ".join(text))
            size += len(texts[-1])
        return texts
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False) if isinstance(value, dict) else str(value)
    return text if len(text) <= limit else text[:limit] + "…"
