"""A user's env module outside the package (tests/fixtures/my_env_plugin.py): subclass a
math env, add a scorer, register it, run it from Python and from the CLI."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import pytest

from skyeval.backends.reference import ReferenceConfig
from skyeval.envs.registry import SkyEnvBuilder
from tests.conftest import load_summary, read_jsonl, run_cli

PLUGIN_DIR = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture
def plugin(monkeypatch):
    """Import the user module as a user would; undo its registration afterwards."""
    monkeypatch.syspath_prepend(str(PLUGIN_DIR))
    monkeypatch.setattr(SkyEnvBuilder, "_registered", dict(SkyEnvBuilder._registered))
    import ray.cloudpickle

    module = importlib.import_module("my_env_plugin")
    ray.cloudpickle.register_pickle_by_value(module)  # Ray workers cannot import it by name
    yield module
    ray.cloudpickle.unregister_pickle_by_value(module)
    sys.modules.pop("my_env_plugin")

def test_registered_env_runs_from_python(plugin, data_dir, ray_session):
    env = SkyEnvBuilder.build("My_Env", {"limit": 6, "max_words": 40})
    assert isinstance(env, plugin.MyEnv) and env.name == "my_env"
    env.setup(ReferenceConfig())
    rows = {r["id"]: r for r in env.score(env.generate(env.read_dataset())).take_all()}
    assert len(rows) == 6
    for row in rows.values():
        concise = len(row["generation"].split()) <= 40
        assert row["correct"] == 1.0 and row["concise"] is concise
        assert row["score"] == (1.0 if concise else 0.5)
    assert {r["concise"] for r in rows.values()} == {True, False}


def test_registered_env_runs_from_the_cli_with_a_user_config(tmp_path, data_dir):
    (tmp_path / "my_env.yaml").write_text(
        "imports: [my_env_plugin]\n"
        "env:\n  name: MY_ENV\n  limit: 6\n  max_words: 40\n"
        "logging:\n  experiment_name: my_env_run\n"
    )
    run_cli("evaluate", "--config", "my_env.yaml", cwd=tmp_path, env={"PYTHONPATH": os.pathsep.join([str(PLUGIN_DIR), os.environ.get("PYTHONPATH", "")])})
    folder = tmp_path / "outputs" / "my_env_run"
    summary = load_summary(folder)
    scores = read_jsonl(folder / "scores")
    assert summary["env"] == "my_env" and summary["counts"]["scored"] == 6
    assert all(s["score"] == (1.0 if s["concise"] else 0.5) for s in scores)
    assert summary["metrics"]["accuracy"] == pytest.approx(sum(s["score"] for s in scores) / 6)


def test_missing_steps_give_clear_errors(tmp_path, data_dir):
    proc = run_cli("evaluate", "+imports=[my_env_plugin]", "+env=my_env", cwd=tmp_path, check=False,
                   env={"PYTHONPATH": os.pathsep.join([str(PLUGIN_DIR), os.environ.get("PYTHONPATH", "")])})
    assert proc.returncode == 2 and "unknown env 'my_env'" in proc.stderr  # +env= needs conf/env/my_env.yaml
    (tmp_path / "my_env.yaml").write_text("imports: [my_env_plugin]\nenv:\n  name: MY_ENV\n")
    proc = run_cli("evaluate", "--config", "my_env.yaml", cwd=tmp_path, check=False, env={"PYTHONPATH": os.environ.get("PYTHONPATH", "")})
    assert proc.returncode == 2 and "No module named 'my_env_plugin'" in proc.stderr

