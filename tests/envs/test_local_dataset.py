"""Small runs without Ray (skyeval/envs/local.py) and `env.save` to one file or a folder
(skyeval/envs/saving.py). The in-process Dataset and the Ray Dataset give the same rows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from skyeval import SkyEnvBuilder
from skyeval.backends.reference import ReferenceConfig
from skyeval.envs.local import LocalDataset
from skyeval.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]


def scored_run(engine: str, limit: int = 8, n: int = 2):
    env = SkyEnvBuilder.build("math500", {"limit": limit})
    env.setup(ReferenceConfig(), sampling_params={"n": n})
    return env, env.score(env.generate(env.read_dataset(engine)))


def key(row: dict) -> tuple:
    return row["id"], row["sample_idx"]


def test_local_and_ray_give_identical_scored_rows(ray_session):
    _, local = scored_run("local")
    _, on_ray = scored_run("ray")
    assert isinstance(local, LocalDataset) and not isinstance(on_ray, LocalDataset)
    local_rows, ray_rows = sorted(local.take_all(), key=key), sorted(on_ray.take_all(), key=key)
    assert len(local_rows) == 16 and local_rows == ray_rows
    assert local.mean(on="score") == on_ray.mean(on="score") == 1.0
    best = lambda ds: sorted(ds.groupby("id").max("score").take_all(), key=lambda r: r["id"])  # noqa: E731
    assert best(local) == best(on_ray)
    assert local.filter(lambda r: r["sample_idx"] == 0).count() == on_ray.filter(lambda r: r["sample_idx"] == 0).count() == 8


def test_a_small_run_from_python_never_imports_ray_and_engine_overrides_both_ways(tmp_path):
    program = """\
import os, sys
from skyeval import SkyEnvBuilder
from skyeval.backends.reference import ReferenceConfig
env = SkyEnvBuilder.build("math500", {"limit": 5})
env.setup(ReferenceConfig())
scored = env.score(env.generate(env.read_dataset()))
print("MEAN", scored.mean(on="score"), type(scored).__name__)
env.save(scored, "out.parquet")
print("RAY", "ray" in sys.modules)
os.environ["SKYEVAL_DATASET_ENGINE"] = "ray"
print("CHOSEN", type(env.read_dataset()).__name__, type(env.read_dataset("local")).__name__)
"""
    done = subprocess.run([sys.executable, "-"], input=program, capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "MEAN 1.0 LocalDataset" in done.stdout
    assert "RAY False" in done.stdout  # small local data: Ray is not even imported
    assert "CHOSEN Dataset LocalDataset" in done.stdout  # the variable picks Ray; engine= wins over it


@pytest.mark.parametrize("engine", ["local", "ray"])
def test_save_to_a_parquet_or_jsonl_path_writes_one_file_pandas_and_datasets_read(tmp_path, engine, request):
    import datasets
    import pandas as pd

    if engine == "ray":
        request.getfixturevalue("ray_session")
    env, scored = scored_run(engine, limit=6)
    rows = sorted(scored.take_all(), key=key)
    parquet = env.save(scored, tmp_path / "math500.parquet", format="parquet")
    assert parquet.is_file()
    frame = pd.read_parquet(parquet)
    assert sorted(zip(frame["id"], frame["sample_idx"], frame["score"])) == [(r["id"], r["sample_idx"], r["score"]) for r in rows]
    assert datasets.Dataset.from_parquet(str(parquet)).num_rows == 12
    jsonl = env.save(scored, tmp_path / "math500.jsonl")  # the suffix says the format
    assert jsonl.is_file()
    lines = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert sorted(lines, key=key) == json.loads(json.dumps(rows, default=str))
    assert len(pd.read_json(jsonl, lines=True)) == 12
    assert datasets.Dataset.from_json(str(jsonl)).num_rows == 12
    assert sorted(p.name for p in tmp_path.iterdir()) == ["math500.jsonl", "math500.parquet"]  # no leftovers


def test_save_to_a_folder_writes_the_run_folder_layout_in_process(tmp_path):
    env, scored = scored_run("local", limit=4)
    folder = env.save(scored, tmp_path / "run", format="parquet")
    assert sorted(p.name for p in folder.iterdir()) == ["failures", "generations", "logs.txt", "scores"]
    assert "scores/: 8 rows" in (folder / "logs.txt").read_text()
    import pandas as pd

    assert len(pd.concat(pd.read_parquet(p) for p in (folder / "scores").glob("*.parquet"))) == 8


@pytest.mark.parametrize("path, format", [("x.parquet", "jsonl"), ("x.jsonl", "parquet"), ("x.parquet", "json"),
                                          ("x.json", None), ("x.jsonl", "csv")])
def test_a_path_whose_suffix_contradicts_the_format_is_a_one_line_error(tmp_path, path, format):
    env = SkyEnvBuilder.build("math500", {"limit": 1})
    with pytest.raises(ConfigError) as err:
        env.save(LocalDataset.from_rows([{"id": "1"}]), tmp_path / path, format=format)
    assert "\n" not in str(err.value)
    assert list(tmp_path.iterdir()) == []


def test_a_small_run_shows_progress_bars_on_a_terminal_and_nothing_else(tmp_path):
    import pty

    program = """\
from skyeval import SkyEnvBuilder
from skyeval.backends.reference import ReferenceConfig
env = SkyEnvBuilder.build("math500", {"limit": 5})
env.setup(ReferenceConfig())
print("MEAN", env.score(env.generate(env.read_dataset())).mean(on="score"))
"""
    (tmp_path / "run.py").write_text(program)
    import fcntl
    import struct
    import termios

    controller, terminal = pty.openpty()  # stderr is a terminal, as in an interactive shell...
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))  # ...of 120 columns
    proc = subprocess.Popen([sys.executable, "run.py"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=terminal,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    os.close(terminal)
    shown = b""
    while True:
        try:
            chunk = os.read(controller, 4096)
        except OSError:  # the terminal closed: the program ended
            break
        if not chunk:
            break
        shown += chunk
    out = proc.communicate(timeout=600)[0].decode()
    os.close(controller)
    assert proc.returncode == 0 and "MEAN 1.0" in out
    text = shown.decode(errors="replace")
    assert "generate" in text and "score" in text and "5/5" in text  # a bar per step, like the CLI's
    assert "WARNING" not in text and "Traceback" not in text  # no Ray, no warnings
