"""`model_config=ray` on a real two-node Ray cluster on this machine, started with the
commands of docs/scaling.md ("A Ray cluster"), token authentication on: `ray get-auth-token
--generate`, then `RAY_AUTH_MODE=token ray start --head --node-ip-address=HEAD_IP
--port=6379` and `RAY_AUTH_MODE=token ray start --address=HEAD_IP:6379` with HEAD_IP
127.0.0.1 (plus test-only flags: 3 CPUs a node, room for a replica, a writer and the
render or finish task each; no dashboard). The nodes and the driver run in a private
network namespace (`unshare --net`, as root): all they open listens on its loopback
only, and the documented fixed ports clash with nothing on the machine. HOME (the token
file) and RAY_TMPDIR (Ray's session files) are the test's own.

One run shows it all: a driver holding another token is refused in one line (exit 2, no
run folder); the documented command runs, with a progress line while the replicas start;
the replicas and the writers land on both nodes, scores and part files are written by
the writers on the cluster, and a node killed mid-run loses no finished sample.
Which way the run goes depends on what the lost node was doing: its engine's blocks are
retried on the other replica (Ray restarts engines), so the run completes; but a writer
lost mid-block stops it (a retry would write samples twice), saying so and counting the
whole selection, and the same command on what is left completes it. Both end with every
sample once.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import pytest

from skyeval.results import iter_records, key_of

from .backends.conftest import CPU_ENGINE_KWARGS
from .conftest import make_tiny_model

pytestmark = [pytest.mark.slow, pytest.mark.vllm]

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs" / "scaling.md"
LIMIT = 400  # problems: enough that the kill comes mid-run
KILL_AFTER = 24  # scores written on the workers
HANG_S = 1800  # a hang bound: ~2 min quiet, 10 min seen at load 7-14 on 2 cores (never a speed check)
NODE_FLAGS = ["--num-cpus=3", "--disable-usage-stats"]  # test-only, beside the documented flags


def documented(start: str, containing: str = "") -> str:
    """The command of docs/scaling.md beginning with `start` (and holding `containing`),
    continuation lines joined."""
    for block in re.findall(r"^```bash\n(.*?)^```", DOCS.read_text(encoding="utf-8"), re.M | re.S):
        for line in block.replace("\\\n", " ").splitlines():
            if line.strip().startswith(start) and containing in line:
                return line.strip()
    raise AssertionError(f"docs/scaling.md has no command starting with {start!r} holding {containing!r}")


def as_run(command: str, *extra: str) -> tuple[dict[str, str], list[str]]:
    """A documented command as (its leading VAR=value settings, argv), HEAD_IP on loopback."""
    words = shlex.split(command.replace("HEAD_IP", "127.0.0.1"))
    settings = {}
    while "=" in words[0] and not words[0].startswith("-"):
        key, _, value = words.pop(0).partition("=")
        settings[key] = value
    return settings, [sys.executable if words[0] == "python" else words[0], *words[1:], *extra]


class Namespace:
    """A private network namespace, its loopback up, held open by a sleeping process;
    `argv` runs a command in it (`nsenter`); `close` kills every process in it."""

    def __init__(self) -> None:
        missing = [tool for tool in ("unshare", "nsenter", "ip") if shutil.which(tool) is None]
        if os.geteuid() != 0 or missing:
            pytest.fail(f"the two-node cluster runs in a private network namespace, which needs root and "
                        f"util-linux/iproute2 ({'not root' if os.geteuid() else 'missing ' + ', '.join(missing)}); "
                        "deselect it with -m 'not slow'", pytrace=False)
        self.holder = subprocess.Popen(["unshare", "--net", "sh", "-c", "ip link set lo up && exec sleep 100000"])
        self.ns = f"/proc/{self.holder.pid}/ns/net"
        deadline = time.monotonic() + 60
        while "UP" not in subprocess.run(self.argv(["ip", "-o", "link", "show", "lo"]), capture_output=True,
                                         text=True).stdout:
            assert time.monotonic() < deadline, "the namespace's loopback did not come up"
            time.sleep(0.1)

    def argv(self, argv: list[str]) -> list[str]:
        return ["nsenter", f"--net={self.ns}", "--", *argv]

    def close(self) -> None:
        """SIGKILL every process in the namespace (the nodes, the driver), then its holder."""
        mine = os.readlink(self.ns)
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                if int(pid) != self.holder.pid and os.readlink(f"/proc/{pid}/ns/net") == mine:
                    os.kill(int(pid), signal.SIGKILL)
            except (FileNotFoundError, ProcessLookupError, PermissionError):
                pass
        self.holder.kill()
        self.holder.wait()


def session_of(pid: int) -> list[int]:
    """The processes of `pid`'s session (a node started with `start_new_session`)."""
    sid = os.getsid(pid)
    found = []
    for other in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.getsid(int(other)) == sid:
                found.append(int(other))
        except ProcessLookupError:
            pass
    return found


def _worker_parts(out: Path, kind: str) -> list[Path]:
    """Part files the cluster's writers made (`w<node>-<pid>-part-N.jsonl`)."""
    return sorted(out.glob(f"*/{kind}/w*-part-*.jsonl"))


def _lines(paths: list[Path]) -> int:
    return sum(path.read_bytes().count(b"\n") for path in paths)


ASK = ("import json, ray, time; from ray._private.state import actors; ray.init(address='auto', log_to_driver=False)\n"
       "deadline = time.monotonic() + 600\n"
       "while len([n for n in ray.nodes() if n['Alive']]) < 2 and time.monotonic() < deadline: time.sleep(0.5)\n"
       "nodes = {n['NodeID']: 'node:__internal_head__' in n['Resources'] for n in ray.nodes() if n['Alive']}\n"
       "print(json.dumps({'nodes': nodes, 'actors': [[a['ActorClassName'], a['Address']['NodeID']] "
       "for a in actors().values()]}))")


def test_the_documented_two_node_cluster_with_token_auth_runs_and_survives_a_lost_node(tmp_path):
    pytest.importorskip("vllm")
    model = make_tiny_model(tmp_path / "model")
    out, home = tmp_path / "out", tmp_path / "home"
    home.mkdir()
    ray_tmp = Path(tempfile.mkdtemp(prefix="r", dir="/tmp"))  # short: Ray's socket paths must fit 107 bytes
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("RAY_")}, "HOME": str(home),
           "RAY_TMPDIR": str(ray_tmp), "PYTHONPATH": str(REPO),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    kwargs = ", ".join(f"{k}: {json.dumps(v)}" for k, v in CPU_ENGINE_KWARGS.items())
    run_settings = [f"env.limit={LIMIT}", "model_config.use_cpu=true", f"+model_config.engine_kwargs={{{kwargs}}}",
                    "sampling_params.max_tokens=16", "scaling.batch_size=4", f"logging.results_dir={out}"]
    run_doc = documented("python -m skyeval.cli evaluate +env=gsm8k model_config=ray", "scaling.num_replicas=2")
    resume_doc = documented("python -m skyeval.cli evaluate +env=gsm8k model_config=ray", "scaling.num_replicas=1")
    namespace = Namespace()
    worker = None
    try:
        def start(command: str, *extra: str, **popen) -> subprocess.Popen:
            settings, argv = as_run(command, *extra)
            argv = [a.replace("Qwen/Qwen2.5-7B-Instruct", str(model)) for a in argv]
            return subprocess.Popen(namespace.argv(argv), env={**env, **settings}, cwd=REPO, text=True, **popen)

        def run(command: str, *extra: str, extra_env: dict | None = None) -> subprocess.CompletedProcess:
            settings, argv = as_run(command, *extra)
            argv = [a.replace("Qwen/Qwen2.5-7B-Instruct", str(model)) for a in argv]
            return subprocess.run(namespace.argv(argv), env={**env, **settings, **(extra_env or {})}, cwd=REPO,
                                  capture_output=True, text=True, timeout=HANG_S)

        for command, extra in [(documented("ray get-auth-token --generate"), []),
                               (documented("RAY_AUTH_MODE=token ray start --head"),
                                [*NODE_FLAGS, "--include-dashboard=false"])]:
            done = run(command, *extra)
            assert done.returncode == 0, f"{command}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        assert (home / ".ray" / "auth_token").stat().st_size > 0
        worker = start(documented("RAY_AUTH_MODE=token ray start --address="), *NODE_FLAGS, "--block",
                       start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        asked = run(f"python -c {shlex.quote(ASK)}")
        assert asked.returncode == 0, asked.stderr[-3000:]
        nodes = json.loads(asked.stdout.strip().splitlines()[-1])["nodes"]
        assert len(nodes) == 2, nodes
        head_id = next(node for node, head in nodes.items() if head)
        worker_id = next(node for node, head in nodes.items() if not head)

        # a driver holding another token: one line naming the fix, exit 2, no run folder
        refused = run(run_doc, *run_settings, extra_env={"RAY_AUTH_TOKEN": "not-the-cluster-token"})
        assert refused.returncode == 2, refused.stdout[-2000:] + refused.stderr[-3000:]
        assert refused.stderr.strip().splitlines()[-1].startswith("skyeval: error: the Ray cluster at ")
        assert "refused this driver's token (RAY_AUTH_TOKEN)" in refused.stderr and "ray get-auth-token" in refused.stderr
        assert "InvalidAuthToken" not in refused.stderr and not [p for p in out.glob("*") if p.is_dir()]

        # the documented command: skyeval finds the token in ~/.ray/auth_token
        driver = start(run_doc, *run_settings, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + HANG_S
        while _lines(_worker_parts(out, "scores")) < KILL_AFTER:
            assert driver.poll() is None, "the run ended before the node was killed:\n" + driver.stderr.read()[-3000:]
            assert time.monotonic() < deadline, f"no scores after {HANG_S:.0f} s"
            time.sleep(0.2)
        # watch, as documented: the run is running, with what the writers saved so far
        (folder,) = [p for p in out.iterdir() if (p / "generations").is_dir()]  # the run's folder
        _, watch = as_run(documented("python -m skyeval.cli status run_dir=").replace("RUN_DIR", str(folder)))
        shown = subprocess.run(watch, env=env, cwd=REPO, capture_output=True, text=True, timeout=HANG_S).stdout
        running = re.search(r"^running: ([0-9,]+) samples \(([0-9,]+) scored", shown, re.M)
        assert running and int(running[2].replace(",", "")) >= KILL_AFTER, shown
        asked = run(f"python -c {shlex.quote(ASK)}")
        placed: dict[str, set[str]] = {}
        for name, node in json.loads(asked.stdout.strip().splitlines()[-1])["actors"]:
            placed.setdefault(name, set()).add(node)
        assert placed["MapWorker(MapBatches(vLLMEngineStageUDF))"] == {head_id, worker_id}  # a replica on each node
        writers = placed["MapWorker(MapBatches(_Record))"]
        assert writers == {head_id, worker_id}  # a writer (one CPU each here) on each node
        # the scores so far come from those writers (one may not have had a block yet)
        assert {path.name[1:9] for path in _worker_parts(out, "scores")} <= {node[:8] for node in writers}

        before = {(path.name, line) for path in _worker_parts(out, "scores")
                  for line in path.read_text(encoding="utf-8").splitlines(keepends=True) if line.endswith("\n")}
        for pid in session_of(worker.pid):  # the worker node dies mid-run: every process of it at once
            os.kill(pid, signal.SIGKILL)
        worker.wait()
        stdout, stderr = driver.communicate(timeout=HANG_S)
        assert "progress: generated 0, scored 0, failed 0" in stderr and "waiting for the first results" in stderr
        # every score line written before the kill is still there
        after = {(path.name, line) for path in _worker_parts(out, "scores")
                 for line in path.read_text(encoding="utf-8").splitlines(keepends=True)}
        assert before <= after
        print(f"writers on {len(writers)} node(s); after the node was lost the run "
              f"{'stopped' if driver.returncode == 2 else 'completed'}")
        if driver.returncode == 2:  # a writer was lost mid-block: the run stopped, resumable
            assert "lost mid-run" in stderr and "re-run the same command" in stderr, stderr[-2000:]
            stopped = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
            assert stopped["status"] == "interrupted" and "lost mid-run" in stopped["stopped_by"]
            assert stopped["counts"]["problems"] == LIMIT  # the whole selection, not only what was read
            finished = {key_of(r) for r in iter_records(folder, "scores")}
            assert stopped["counts"]["scored"] <= len(finished) < LIMIT
            # the same command on the node that is left (one replica fits) completes the run
            done = run(resume_doc, *run_settings)
            assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
            assert json.loads((folder / "summary.json").read_text())["counts"]["resumed"] >= len(finished)
        else:  # the lost engine's blocks were retried on the other replica
            assert driver.returncode == 0, stdout[-2000:] + stderr[-3000:]
        summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
        counts = summary["counts"]
        assert summary["status"] in ("complete", "complete_with_failures")
        assert counts["samples"] == LIMIT and counts["missing"] == 0 and counts["scored"] + counts["failed"] == LIMIT
        # every sample is in exactly one of scores/ or failures/, and was generated once
        ended = Counter(key_of(r) for kind in ("scores", "failures") for r in iter_records(folder, kind))
        assert len(ended) == LIMIT and set(ended.values()) == {1}
        generated = Counter(key_of(r) for r in iter_records(folder, "generations"))
        assert set(generated.values()) == {1}
        assert not list(folder.glob("scores/per_problem-w*"))  # per-problem tallies are the driver's
    finally:
        namespace.close()
        if worker is not None and worker.poll() is None:
            worker.kill()
        shutil.rmtree(ray_tmp, ignore_errors=True)
