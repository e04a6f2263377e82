"""A wheel install (not a clone) carries every config and runs the CLI."""

import json
import os
import shlex
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def build_warnings(stderr: str) -> list[str]:
    """The lines of pip's output that are a build backend's warnings (pip shows them for a
    local folder). This machine's pip config names missing index folders: not ours."""
    return [line for line in stderr.splitlines() if "Warning" in line and "Location 'file:" not in line]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out),
                            str(ROOT)], check=True, capture_output=True, text=True)
    assert build_warnings(built.stderr) == []  # package data declared as setuptools wants it
    return next(out.glob("skyeval-*.whl"))


def test_wheel_holds_every_module_config_and_viewer_file(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = {str(p.relative_to(ROOT)) for package in ("skyeval", "hydra_plugins") for p in (ROOT / package).rglob("*.py")}
    configs = {"skyeval/" + str(p.relative_to(ROOT)) for p in (ROOT / "conf").rglob("*.yaml")}
    assets = {str(p.relative_to(ROOT)) for p in (ROOT / "skyeval" / "report" / "assets").rglob("*") if p.is_file()}
    assert {"skyeval/report/assets/katex/katex.min.js", "skyeval/report/assets/katex/LICENSE"} <= assets
    data = {str(p.relative_to(ROOT)) for p in (ROOT / "skyeval" / "envs").rglob("*.json")}  # the Qwen harness's demonstrations
    assert modules - names == set() and configs - names == set() and assets - names == set() and data - names == set()


def test_the_makefiles_editable_install_prints_no_warning(tmp_path):
    """`make install` (which `make demo` runs first on a fresh clone) installs the package
    editable the way its EDITABLE line says: here into a throwaway prefix, without deps."""
    line = next(line for line in subprocess.run(["make", "-n", "-s", "-B", "install", f"VENV={tmp_path}/venv"],
                                                cwd=ROOT, check=True, capture_output=True, text=True).stdout.splitlines()
                if " -e " in line)
    words = shlex.split(line)
    env = dict(word.split("=", 1) for word in words[:words.index(next(w for w in words if "=" not in w))])
    assert env, line  # the notice is filtered through the environment
    # --ignore-installed: without it pip uninstalls this environment's skyeval first
    installed = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--ignore-installed", "--no-deps",
                                "--prefix", str(tmp_path / "prefix"), "-e", str(ROOT)], env={**os.environ, **env},
                               capture_output=True, text=True, timeout=600)
    assert installed.returncode == 0, installed.stderr
    assert build_warnings(installed.stderr) == []
    subprocess.run([sys.executable, "-c", "import skyeval.cli"], cwd=tmp_path, check=True)  # still installed here


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
