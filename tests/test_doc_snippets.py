"""Every Python snippet of README.md, docs/quickstart.md and docs/rl.md, extracted from the
docs and run as written: as a script without an `if __name__ == "__main__":` guard, from
stdin, and (when ipykernel and nbclient are installed: the dev extra) in a notebook.
Snippets that need a service this machine lacks are listed with the reason; a new
snippet must be one or the other."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = ("README.md", "docs/quickstart.md", "docs/rl.md")
NOT_RUNNABLE = {
    ("README.md", 1): "calls the OpenAI API (gpt-4o-mini): needs a key and the network",
    ("docs/quickstart.md", 1): "a sketch of setup's arguments with placeholders; test_documented_api.py runs each line",
    ("docs/rl.md", 1): "trains a model with TRL: needs trl and a model download (test_trl_grpo.py runs a tiny one)",
}
HANG_S = 600


def snippets() -> dict[tuple[str, int], str]:
    """(doc, 1-based block number) -> code, for every ```python / ```py block."""
    found = {}
    for doc in DOCS:
        text = (REPO / doc).read_text(encoding="utf-8")
        for number, match in enumerate(re.finditer(r"^```(?:python|py)\n(.*?)^```", text, re.M | re.S), start=1):
            found[(doc, number)] = match.group(1)
    return found


RUNNABLE = sorted(set(snippets()) - set(NOT_RUNNABLE))


def test_every_snippet_is_run_or_has_a_reason():
    assert set(NOT_RUNNABLE) <= set(snippets())
    assert len(RUNNABLE) >= 3


def run(tmp_path: Path, args: list[str], stdin: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, *args], input=stdin, capture_output=True, text=True, cwd=tmp_path,
                          env=env, timeout=HANG_S)


@pytest.mark.parametrize("how", ["script", "stdin"])
@pytest.mark.parametrize("doc, number", RUNNABLE)
def test_a_snippet_runs_as_written(tmp_path, data_dir, doc, number, how):
    code = snippets()[(doc, number)]
    if how == "script":
        path = tmp_path / "snippet.py"
        path.write_text(code)
        done = run(tmp_path, [str(path)])
    else:
        done = run(tmp_path, ["-"], stdin=code)
    assert done.returncode == 0, f"{doc} block {number} ({how}):\n{done.stderr[-3000:]}"
    assert "Traceback" not in done.stderr


def run_in_notebook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *cells: str) -> list[list]:
    """Run `cells` in a real Jupyter kernel (cwd `tmp_path`); each cell's outputs. A cell
    that fails raises CellExecutionError, with its traceback. Skipped without the dev extra."""
    nbclient = pytest.importorskip("nbclient")
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("ipykernel")
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell) for cell in cells])
    client = nbclient.NotebookClient(notebook, timeout=HANG_S, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    outputs = [cell.outputs for cell in notebook.cells]
    assert not [o for cell in outputs for o in cell if o.get("output_type") == "error"]
    return outputs


@pytest.mark.parametrize("doc, number", RUNNABLE)
def test_a_snippet_runs_in_a_notebook(tmp_path, data_dir, doc, number, monkeypatch):
    run_in_notebook(tmp_path, monkeypatch, snippets()[(doc, number)])
