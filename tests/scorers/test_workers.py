"""Worker processes never run the caller's main module (skyeval/scorers/workers.py).

Each case is a real Python process started the way users start one: a script without an
`if __name__ == "__main__":` guard, `python -c`, stdin, a thread inside a larger program,
a notebook. The scores are compared with the CLI's and with known right and wrong answers.
A scorer function or an env class the user defines there is sent to the workers by value."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_doc_snippets import run_in_notebook

REPO = Path(__file__).resolve().parents[2]
HANG_S = 600  # a bound on hangs only: these take seconds

REWARD = """\
print("module level")
from skyeval import reward
print("REWARD", reward.trl("math500")(["p", "p"], ["\\\\boxed{2}", "\\\\boxed{3}"], answer=["2", "2"]))
"""

# A custom scorer function of the user's main module, using one of its globals, on 2 workers.
CUSTOM_SCORER = """\
print("module level")
import os
from skyeval.curation.streams import map_chunks
from skyeval.scorers.pool import ScorerPool
TARGET = "42"
def exact(item):
    return float(item.strip() == TARGET), os.getpid()
with ScorerPool(exact, 2) as pool:
    scored = pool.map(["42", " 42", "41", "x"])
print("SCORES", [score for score, _ in scored], "in workers:", os.getpid() not in {pid for _, pid in scored})
print("CHUNKS", [n for _, n in map_chunks(lambda chunk: chunk.count(TARGET), [["42", "1"], ["42", "42"], []], workers=2)])
"""

# A custom env class of the user's main module (half credit), registered, then scored by
# `score_batch`, `Reward` (2 workers each) and a whole run (a worker per core).
CUSTOM_ENV = """\
print("module level")
from skyeval import MathEnv, SkyEnvBuilder
from skyeval.config import compose
from skyeval.reward import Reward
from skyeval.run.app import execute
CREDIT = 0.5
class HalfCredit(MathEnv):
    def score_item(self, item):
        result = super().score_item(item)
        return {**result, "score": result["score"] * CREDIT}
SkyEnvBuilder.register("half_credit", HalfCredit)
env = SkyEnvBuilder.build("half_credit")
items = [{"generation": "\\\\boxed{2}", "expected": "2"}, {"generation": "\\\\boxed{3}", "expected": "2"}]
print("BATCH", [r["score"] for r in env.score_batch(items, workers=2)])
env.close()
reward = Reward("half_credit", {"workers": 2})
print("REWARD", [r["reward"] for r in reward.score(["\\\\boxed{2}", "\\\\boxed{3}"], ["2", "2"])])
reward.env.close()
config = compose("+env={name: half_credit, local_files: math500/test.jsonl, limit: 3}", "sampling_params.n=2",
                 "logging.results_dir=runs")
summary = execute(config)
print("RUN", summary["metrics"]["accuracy"], summary["counts"]["scored"])
"""
SCORER_OUT = ("SCORES [1.0, 1.0, 0.0, 0.0] in workers: True", "CHUNKS [1, 2, 0]")
ENV_OUT = ("BATCH [0.5, 0.0]", "REWARD [0.5, 0.0]", "RUN 0.5 6")


def python(tmp_path: Path, *args: str, stdin: str | None = None, timeout: float = HANG_S
           ) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, *args], input=stdin, capture_output=True, text=True, cwd=tmp_path,
                          env=env, timeout=timeout)


def script(tmp_path: Path, text: str) -> str:
    path = tmp_path / "user_script.py"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("how", ["script", "-c", "stdin"])
def test_a_reward_returns_right_and_wrong_from_a_guardless_script_c_and_stdin(tmp_path, how):
    if how == "script":
        done = python(tmp_path, script(tmp_path, REWARD))
    elif how == "-c":
        done = python(tmp_path, "-c", REWARD)
    else:
        done = python(tmp_path, "-", stdin=REWARD)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "REWARD [1.0, 0.0]" in done.stdout
    assert done.stdout.count("module level") == 1  # no worker ran the user's code again
    assert "Traceback" not in done.stderr


def test_a_whole_run_from_a_guardless_script_scores_as_the_cli_does(tmp_path):
    run = """\
print("module level")
from skyeval.config import compose
from skyeval.run.app import execute
config = compose("+env=gsm8k", "env.limit=5", "sampling_params.n=2", "logging.results_dir=from_script")
summary = execute(config)
print("ACCURACY", summary["metrics"]["accuracy"])
"""
    done = python(tmp_path, script(tmp_path, run))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "ACCURACY 1.0" in done.stdout and done.stdout.count("module level") == 1
    assert "Traceback" not in done.stderr + done.stdout
    cli = python(tmp_path, "-m", "skyeval.cli", "evaluate", "+env=gsm8k", "env.limit=5", "sampling_params.n=2",
                 "logging.results_dir=from_cli")
    assert cli.returncode == 0, cli.stderr[-2000:]

    def scores(results_dir: str) -> list[tuple]:
        (folder,) = (tmp_path / results_dir).iterdir()
        summary = json.loads((folder / "summary.json").read_text())
        assert summary["counts"]["scored"] == 10 and summary["counts"]["failed"] == 0
        rows = [json.loads(line) for part in sorted((folder / "scores").glob("part-*.jsonl"))
                for line in part.read_text().splitlines()]
        return sorted((r["id"], r["sample_idx"], r["score"]) for r in rows)

    assert scores("from_script") == scores("from_cli")


def test_scoring_from_a_thread_of_a_program_read_from_stdin(tmp_path):
    program = """\
import threading
from skyeval import SkyEnvBuilder
env = SkyEnvBuilder.build("math500")
out = {}
def work():  # off the main thread: math-verify runs under a worker's time limit
    out["one"] = [env.score_item({"generation": g, "expected": "2"})["score"] for g in ("\\\\boxed{2}", "\\\\boxed{3}")]
    out["batch"] = [r["score"] for r in env.score_batch([{"generation": "\\\\boxed{1/2}", "expected": "0.5"},
                                                         {"generation": "\\\\boxed{7}", "expected": "8"}], workers=2)]
thread = threading.Thread(target=work)
thread.start()
thread.join()
env.close()
print("THREAD", out["one"], out["batch"])
"""
    done = python(tmp_path, "-", stdin=program)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "THREAD [1.0, 0.0] [1.0, 0.0]" in done.stdout


@pytest.mark.parametrize("how", ["script", "stdin"])
@pytest.mark.parametrize("program, expected", [(CUSTOM_SCORER, SCORER_OUT), (CUSTOM_ENV, ENV_OUT)],
                         ids=["custom_scorer", "custom_env"])
def test_a_scorer_or_env_class_of_a_guardless_script_or_stdin_scores_on_workers(tmp_path, data_dir, how, program,
                                                                                expected):
    done = python(tmp_path, script(tmp_path, program)) if how == "script" else python(tmp_path, "-", stdin=program)
    assert done.returncode == 0, done.stderr[-2000:]
    for line in expected:
        assert line in done.stdout, done.stdout
    assert done.stdout.count("module level") == 1  # sent by value: no worker ran the user's code again
    assert "Traceback" not in done.stderr


def test_a_scorer_and_an_env_class_of_notebook_cells_score_on_workers(tmp_path, data_dir, monkeypatch):
    outputs = run_in_notebook(tmp_path, monkeypatch, CUSTOM_SCORER, CUSTOM_ENV)
    printed = ["".join(o.get("text", "") for o in cell if o.get("name") == "stdout") for cell in outputs]
    assert all(line in printed[0] for line in SCORER_OUT), printed[0]
    assert all(line in printed[1] for line in ENV_OUT), printed[1]


def test_curation_chunk_map_from_stdin_and_an_unpicklable_function_is_a_clear_error(tmp_path):
    ok = python(tmp_path, "-", stdin="""\
from skyeval.curation.streams import map_chunks
print("CHUNKS", [out for _, out in map_chunks(len, [[1], [1, 2], [1, 2, 3], [], [5]], workers=2)])
""")
    assert ok.returncode == 0, ok.stderr[-2000:]
    assert "CHUNKS [1, 2, 3, 0, 1]" in ok.stdout  # in input order
    bad = python(tmp_path, script(tmp_path, """\
import threading
from skyeval.curation.streams import map_chunks
lock = threading.Lock()
def mine(chunk):
    with lock:
        return len(chunk)
print(list(map_chunks(mine, [[1], [2]], workers=2)))
"""))
    assert bad.returncode == 1
    last = bad.stderr.strip().splitlines()[-1]
    assert last.startswith("TypeError: skyeval-chunk-map: cannot send __main__.mine to a worker process: "
                           "cannot pickle '_thread.lock' object"), bad.stderr[-2000:]


def test_chunk_map_with_large_chunks_and_answers_both_ways_does_not_deadlock(tmp_path):
    """A worker sending a large answer while the parent sends it its next large chunk: each
    side fills the socket's buffer; the parent's chunks go from a thread of their own (the
    1M-row decontamination bench hung here, both processes waiting to send)."""
    done = python(tmp_path, "-", stdin="""\
from skyeval.curation.streams import map_chunks
chunks = ([("%d-" % i) * 2_000_000] for i in range(8))  # 4 MB a chunk, answered with itself
print("SIZES", sum(len(out[0]) for _, out in map_chunks(list, chunks, workers=2)))
""", timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "SIZES" in done.stdout and int(done.stdout.split()[-1]) == 8 * 4_000_000
