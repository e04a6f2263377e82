"""Hostile programs as tool code are contained: the reward-hack corpus (tests/scorers/hacks/)
and the sandbox's hostile programs (tests/scorers/test_sandbox.py: secrets, ancestors'
environments, signals, the network, fork and memory bombs, floods, writes outside), each
written by a loopback model as its program, run through the turn loop next to honest
samples. Every hostile program is bounded (a few hundred forks, a few GB, ~32 MB of
output), so a containment failure cannot take the machine down."""

from __future__ import annotations

import json
import secrets
import socket
from pathlib import Path

import pytest

from skyeval.backends.base import SamplingParams, ScalingConfig
from skyeval.backends.openai import HTTPConfig, OpenAIBackend
from skyeval.scorers.sandbox import active_protections
from skyeval.tools import ToolsConfig, TurnLoop
from tests.backends.fault_server import FaultServer
from tests.tools.code_model import CodeModel
from tests.tools.test_loop import chat

HACKS = Path(__file__).resolve().parents[1] / "scorers" / "hacks"
SECRET = "sk-tool-" + secrets.token_hex(8)
OUTPUT_CHARS = 400

READ_ANCESTORS = """import os
pid = os.getppid()
while pid > 1:
    try:
        print('read', pid, open(f'/proc/{pid}/environ', 'rb').read().decode(errors='replace'))
    except OSError as exc:
        print('blocked', pid, type(exc).__name__)
    pid = int(open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()[1])
"""
KILL_PARENT = """import os, signal
for target in (lambda: os.kill(os.getppid(), signal.SIGKILL), lambda: os.killpg(os.getpgid(os.getppid()), signal.SIGKILL),
               lambda: os.kill(-1, signal.SIGKILL)):
    try:
        target()
    except OSError as exc:
        print(type(exc).__name__)
"""
FORK_BOMB = """import os, time
pids = []
for _ in range(300):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(20)
        os._exit(0)
    pids.append(pid)
print(len(pids))
"""
SPAWN_AND_SPIN = """import subprocess, sys
subprocess.Popen([sys.executable, '-c', 'while True: pass'])
while True:
    pass
"""


def hostile_programs(port: int, decoy: Path) -> dict[str, str]:
    programs = {f"hack {p.stem}": p.read_text() for p in sorted(HACKS.glob("*.py")) if p.stem != "__init__"}
    programs.update({
        "environment": "import os\nprint(dict(os.environ))",
        "ancestors": READ_ANCESTORS,
        "kill parent": KILL_PARENT,
        "network": f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=5).sendall(b'POST /v1/x HTTP/1.1\\r\\n\\r\\n')\nprint('connected')",
        "fork bomb": FORK_BOMB,
        "memory bomb": "blocks = [bytearray(1 << 30) for _ in range(4)]\nprint(len(blocks))",
        "spin": SPAWN_AND_SPIN,
        "writes outside": (f"for path in [{str(decoy)!r}, '/etc/skyeval-tool-escape', '/root/skyeval-tool-escape']:\n"
                           "    try:\n        open(path, 'w').write('pwned')\n        print('wrote', path)\n"
                           "    except OSError as exc:\n        print('blocked', path, type(exc).__name__)\n"),
    })
    return programs


def test_hostile_programs_as_tool_code_are_contained(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)  # the loop's workers inherit it; programs must not see it
    monkeypatch.setenv("HF_TOKEN", SECRET)
    decoy = tmp_path / "decoy.txt"
    decoy.write_text("precious")
    honest = {"What is six times seven?": "42", "What is two plus two?": "4"}
    with FaultServer() as server, socket.create_server(("127.0.0.1", 0)) as listener:
        listener.settimeout(0.1)
        programs = hostile_programs(listener.getsockname()[1], decoy)
        answers = {**honest, **{f"Run the {name} program.": "7391" for name in programs}}
        server.configure(responder=CodeModel(answers, programs={f"Run the {n} program.": p for n, p in programs.items()}))
        config = HTTPConfig("coder", server.url, api_key_env=None, timeout_s=120.0)
        tools = ToolsConfig(name="python", max_calls=1, timeout_s=2, wall_multiple=3, memory_mb=512,
                            output_chars=OUTPUT_CHARS)
        loop = TurnLoop(OpenAIBackend(config, ScalingConfig(concurrency=8)), tools)
        try:
            done = {r.id: r for r in loop.generate([chat(q) for q in answers], SamplingParams(max_tokens=2000))}
        finally:
            loop.close()
        log = server.log
        with pytest.raises(TimeoutError):  # no program reached a listener on this machine's loopback
            listener.accept()
    assert sorted(done) == sorted(answers) and all(r.ok for r in done.values())
    for question, answer in honest.items():  # the honest samples beside them are untouched
        assert done[question].generation.endswith(f"\\boxed{{{answer}}}.")
    outputs = {q.removeprefix("Run the ").removesuffix(" program."): r.loop["transcript"][1]
               for q, r in done.items() if q not in honest}
    for name, turn in outputs.items():
        shown = turn["content"]
        assert "```" not in shown, name  # no fence survives: the transcript is the loop's own
        assert len(shown.replace("\\`", "`")) <= OUTPUT_CHARS + 2, name
    assert SECRET not in json.dumps([r.to_dict() for r in done.values()])
    assert all(e["path"] == "/v1/chat/completions" and e["params"].get("model") == "coder" for e in log)
    assert all(len(r.loop["turn_tokens"]) <= tools.max_calls + 1 for r in done.values())
    assert outputs["network"]["status"] == "error" and "connected" not in outputs["network"]["content"]
    assert "read" not in outputs["ancestors"]["content"].split() and "blocked" in outputs["ancestors"]["content"]
    protections = active_protections()
    if protections["uid_drop"]:
        assert outputs["kill parent"]["content"].split()[:2] == ["PermissionError", "PermissionError"]
        assert outputs["writes outside"]["content"].count("blocked") == 3
    assert decoy.read_text() == "precious" and not Path("/etc/skyeval-tool-escape").exists()
    assert outputs["memory bomb"]["status"] == "error" and outputs["memory bomb"]["content"].endswith("MemoryError")
    # ended by its time limit (its spawn may be refused instead while the processes an earlier program
    # left under the same sandbox uid are being reaped: the process limit holds)
    assert outputs["spin"]["status"] == "timeout" or "Error" in outputs["spin"]["content"]
    if protections["nproc_limit"]:
        assert int(outputs["fork bomb"]["content"]) < 300
    flood = outputs["hack huge_output"]
    assert flood["status"] == "error" and "characters cut" in flood["content"]


def test_programs_see_a_scrubbed_environment(monkeypatch):
    from skyeval.tools.python import Call, run_call

    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    outcome = run_call(Call.of("import os\nprint(sorted(os.environ))", (), ToolsConfig(name="python"), []))
    assert SECRET not in outcome.output and "OPENAI_API_KEY" not in outcome.output and "HOME" not in outcome.output
