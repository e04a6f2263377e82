"""A wheel install (not a clone) carries every config and runs the CLI."""

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out),
                    str(ROOT)], check=True, capture_output=True)
    return next(out.glob("skyeval-*.whl"))


def test_wheel_holds_every_module_and_config(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = {str(p.relative_to(ROOT)) for package in ("skyeval", "hydra_plugins") for p in (ROOT / package).rglob("*.py")}
    configs = {"skyeval/" + str(p.relative_to(ROOT)) for p in (ROOT / "conf").rglob("*.yaml")}
    assert modules - names == set() and configs - names == set()


def test_cli_runs_from_an_unpacked_wheel_outside_the_repo(wheel, tmp_path, data_dir):
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    env = {**os.environ, "PYTHONPATH": str(site), "SKYHOME": str(tmp_path), "SKYEVAL_DATA_DIR": str(data_dir)}
    where = subprocess.run([sys.executable, "-c", "import skyeval.config as c; print(c.CONF_DIR)"], cwd=tmp_path,
                           env=env, check=True, capture_output=True, text=True).stdout.strip()
    assert where == str(site / "skyeval" / "conf")
    subprocess.run([sys.executable, "-m", "skyeval.cli", "evaluate", "+env=gsm8k", "model_config=reference",
                    "env.limit=3"], cwd=tmp_path, env=env, check=True, capture_output=True, timeout=600)
    summary = json.loads(next((tmp_path / "outputs").rglob("summary.json")).read_text())
    assert summary["status"] == "complete" and summary["metrics"]["accuracy"] == 1.0
