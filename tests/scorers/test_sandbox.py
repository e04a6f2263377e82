"""Hostile programs stay contained; the host and other samples are unaffected.

Every hostile program is bounded (a few hundred forks, a few GB, ~1 GB of output) so a
containment failure cannot take the machine down.
"""

import json
import os
import resource
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from skyeval.scorers import sandbox
from skyeval.scorers.code import score_code
from skyeval.scorers.sandbox import RunResult, SandboxLimits, SandboxSetupError, active_protections, run_program

PROTECTIONS = active_protections()
HOST = sandbox._host()  # this host's own probe (cached: the sandbox probes once per process)
needs_uid = pytest.mark.skipif(
    not PROTECTIONS["uid_drop"], reason="needs root + /usr/bin/python3: without a uid drop the program runs as us"
)
needs_netns = pytest.mark.skipif(not PROTECTIONS["netns"], reason="network namespaces unavailable on this host")

GOOD = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"
GOOD_TESTS = {"type": "stdin", "inputs": ["1 2\n", "40 2\n"], "outputs": ["3\n", "42\n"]}


@pytest.fixture(autouse=True)
def host_probe():
    """Each test starts with the cached probe of this host as it is, and leaves it so: a
    test that probes again under monkeypatching (`reprobe`) can't leak its result into
    the next (any order, e.g. `pytest -p randomly`)."""
    def restore() -> None:
        if sandbox._host.cache_info().currsize and sandbox._host() != HOST:
            sandbox._host.cache_clear()
        assert sandbox._host() == HOST  # probed again if need be: the host itself did not change

    restore()
    yield HOST
    restore()


def _good_passes() -> bool:
    return score_code(GOOD, GOOD_TESTS)["passed"]


def _alongside(hostile: Callable[[], RunResult]) -> RunResult:
    """Run `hostile` while a good sample is scored; check the good one passes during and after."""
    with ThreadPoolExecutor(2) as pool:
        result, good = pool.submit(hostile), pool.submit(_good_passes)
        assert good.result()
        outcome = result.result()
    assert _good_passes()
    return outcome


def _alive(pid: int) -> bool:
    """True if `pid` is a live (non-zombie) process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def test_protections_are_reported():
    assert set(PROTECTIONS) >= {"netns", "uid_drop", "rlimits", "pgroup"}
    assert PROTECTIONS["rlimits"] and PROTECTIONS["pgroup"]


def test_plain_run_and_cleanup():
    result = run_program("import os\nprint(input()[::-1], sorted(os.listdir('.')))", "abc\n",
                         files={"data/x.txt": "1"})
    assert result.status == "ok" and result.returncode == 0
    assert result.stdout.startswith("cba ['data', 'main.py']")


def test_program_runs_as_a_script():
    program = "import sys\nprint(__name__, sys.argv, sorted(k for k in globals() if not k.startswith('__')))"
    assert run_program(program).stdout.split("\n")[0] == "__main__ ['main.py'] ['sys']"


@needs_netns
def test_sandbox_that_cannot_be_set_up_is_an_error_not_a_verdict(monkeypatch, host_probe):
    assert host_probe.netns  # probed before the patch: the sandbox believes it can unshare
    monkeypatch.setattr(sandbox, "_CLONE_NEWNET", 0x1)  # unshare() refuses this flag (EINVAL)
    with pytest.raises(SandboxSetupError, match="unshare failed"):
        run_program("print('never runs')")
    with pytest.raises(SandboxSetupError):
        score_code(GOOD, GOOD_TESTS)


def test_files_cannot_escape_workdir():
    with pytest.raises(ValueError):
        run_program("pass", files={"../evil.py": "x"})


def test_infinite_loop_times_out_and_group_is_gone():
    program = (
        "import subprocess, sys\n"
        "child = subprocess.Popen([sys.executable, '-c', 'while True: pass'])\n"
        "print(child.pid, flush=True)\n"
        "while True: pass\n"
    )
    result = _alongside(lambda: run_program(program, limits=SandboxLimits(timeout_s=1.5)))
    assert result.status == "timeout" and result.returncode is None and result.timeout == "wall"
    assert not _alive(int(result.stdout.split()[0]))


def test_cpu_limit_ends_a_busy_program_and_says_so():
    """RLIMIT_CPU ends a busy program at its CPU limit, whatever the wall time allowed
    (60 s here: only bounds a hang); a sleeping one is ended by the wall limit."""
    busy = run_program("while True: pass", limits=SandboxLimits(timeout_s=60, cpu_s=1))
    assert (busy.status, busy.timeout) == ("timeout", "cpu")
    sleeping = run_program("import time\ntime.sleep(60)", limits=SandboxLimits(timeout_s=1, cpu_s=30))
    assert (sleeping.status, sleeping.timeout) == ("timeout", "wall")
    assert run_program("print(1)").timeout is None


def test_string_hashes_are_the_same_in_every_run():
    """PYTHONHASHSEED is fixed (sandbox.HASH_SEED): a set of strings iterates alike in every
    run, so a program that depends on it gets one verdict."""
    program = "print(hash('skyeval'), list({'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'}))"
    outputs = {run_program(program).stdout for _ in range(3)}
    assert len(outputs) == 1, outputs


@needs_uid
def test_child_that_leaves_the_group_is_killed_after_normal_exit():
    program = (
        "import subprocess, sys\n"
        "code = 'import time; time.sleep(30)'\n"
        "child = subprocess.Popen([sys.executable, '-c', code], start_new_session=True)\n"
        "print(child.pid)\n"
    )
    result = _alongside(lambda: run_program(program))
    assert result.status == "ok"
    assert not _alive(int(result.stdout))


def test_fork_bomb_is_capped():
    program = (
        "import os, time\n"
        "pids = []\n"
        "for _ in range(300):\n"
        "    try:\n"
        "        pid = os.fork()\n"
        "    except OSError:\n"
        "        break\n"
        "    if pid == 0:\n"
        "        time.sleep(20)\n"
        "        os._exit(0)\n"
        "    pids.append(pid)\n"
        "print(*pids)\n"
    )
    result = _alongside(lambda: run_program(program, limits=SandboxLimits(max_processes=32)))
    pids = [int(pid) for pid in result.stdout.split()]
    if PROTECTIONS["nproc_limit"]:
        assert len(pids) < 32
    assert not any(map(_alive, pids))


def test_memory_bomb_fails_with_memory_verdict():
    bomb = "```python\nblocks = [bytearray(1 << 30) for _ in range(4)]\nprint(len(blocks))\n```"
    tests = {"type": "stdin", "inputs": [""], "outputs": ["4"]}
    verdict = _alongside(lambda: score_code(bomb, tests, limits=SandboxLimits(memory_mb=512)))
    assert verdict["failure_kind"] in ("memory", "runtime_error") and not verdict["passed"]


def test_gigabyte_of_output_is_cut_off_with_bounded_memory():
    program = "import sys\nchunk = 'x' * (1 << 20)\nfor _ in range(1024):\n    sys.stdout.write(chunk)\n"
    limits = SandboxLimits(max_output_bytes=4 << 20)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = _alongside(lambda: run_program(program, limits=limits))
    assert result.status == "output_limit"
    assert len(result.stdout) <= limits.max_output_bytes + (1 << 16)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before < 200_000  # KiB


@needs_uid
def test_writes_outside_workdir_fail_or_stay_private(tmp_path):
    decoy = tmp_path / "decoy.txt"
    decoy.write_text("precious")
    escape = Path(f"/tmp/skyeval-escape-{secrets.token_hex(6)}")
    program = (
        "for path in [%r, %r, '/etc/skyeval-escape', '/var/tmp/skyeval-escape']:\n"
        "    try:\n"
        "        open(path, 'w').write('pwned')\n"
        "        print('wrote', path)\n"
        "    except OSError as exc:\n"
        "        print('blocked', path, type(exc).__name__)\n"
    ) % (str(decoy), str(escape))
    result = _alongside(lambda: run_program(program))
    assert result.status == "ok"
    assert f"blocked {decoy}" in result.stdout
    assert decoy.read_text() == "precious"
    assert not Path("/etc/skyeval-escape").exists()
    if PROTECTIONS["private_tmp"]:  # otherwise these land in the shared /tmp, as that uid
        assert not escape.exists() and not Path("/var/tmp/skyeval-escape").exists()


def test_environment_secrets_are_not_passed(monkeypatch):
    secret = "sk-fake-" + secrets.token_hex(8)
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    monkeypatch.setenv("HF_TOKEN", secret)
    result = _alongside(lambda: run_program("import os\nprint(dict(os.environ))"))
    assert result.status == "ok"
    assert secret not in result.stdout and "OPENAI_API_KEY" not in result.stdout


# Started with the secret in its environment (what /proc/<pid>/environ shows), runs a program
# in the sandbox that reads the environ of each of its ancestors, and reports as JSON.
_PARENT = r"""
import json, os, sys
from skyeval.scorers.sandbox import run_program

program = sys.argv[1].replace("PARENT_PID", str(os.getpid()))
with open("/proc/self/environ", "rb") as f:
    own = f.read().decode(errors="replace")
result = run_program(program)
print(json.dumps({"pid": os.getpid(), "secret_in_own_environ": os.environ["OPENAI_API_KEY"] in own,
                  "status": result.status, "stdout": result.stdout, "stderr": result.stderr}))
"""
_READ_ANCESTORS = (
    "import os\n"
    "pids, pid = [PARENT_PID], os.getppid()\n"
    "while pid > 1:  # every ancestor, whatever runs the sandbox\n"
    "    pids.append(pid)\n"
    "    pid = int(open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()[1])\n"
    "for pid in dict.fromkeys(pids):\n"
    "    try:\n"
    "        print('read', pid, open(f'/proc/{pid}/environ', 'rb').read().decode(errors='replace'))\n"
    "    except OSError as exc:\n"
    "        print('blocked', pid, type(exc).__name__)\n"
)


@needs_uid
def test_parent_environment_is_unreadable():
    secret = "sk-fake-" + secrets.token_hex(8)
    env = {**os.environ, "OPENAI_API_KEY": secret, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}

    def parent() -> dict:
        done = subprocess.run([sys.executable, "-c", _PARENT, _READ_ANCESTORS], env=env, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.splitlines()[-1])

    report = _alongside(parent)
    assert report["secret_in_own_environ"]  # the file the program reads would show it
    assert report["status"] == "ok", report["stderr"]
    assert secret not in report["stdout"]
    assert f"blocked {report['pid']} PermissionError" in report["stdout"]  # it tried the process holding it


@needs_netns
def test_loopback_listener_is_unreachable():
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.settimeout(0.1)
        port = server.getsockname()[1]
        program = (
            "import socket\n"
            "try:\n"
            f"    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
            "    print('connected')\n"
            "except OSError as exc:\n"
            "    print('blocked', exc)\n"
        )
        blocked = _alongside(lambda: run_program(program))
        assert blocked.stdout.startswith("blocked")
        with pytest.raises(TimeoutError):
            server.accept()
        allowed = run_program(program, limits=SandboxLimits(network=True))
        assert allowed.stdout.startswith("connected")  # the test can tell the two apart


@needs_uid
def test_killing_the_parent_fails():
    program = (
        "import os, signal\n"
        "for target in (lambda: os.kill(os.getppid(), signal.SIGKILL),\n"
        "               lambda: os.killpg(os.getpgid(os.getppid()), signal.SIGKILL),\n"
        "               lambda: os.kill(-1, signal.SIGKILL)):\n"
        "    try:\n"
        "        target()\n"
        "    except OSError as exc:\n"
        "        print(type(exc).__name__)\n"
    )
    result = _alongside(lambda: run_program(program))
    assert result.stdout.split()[:2] == ["PermissionError", "PermissionError"]


@needs_uid
def test_decoy_home_survives(tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("key")
    (home / "notes.txt").write_text("notes")
    monkeypatch.setenv("HOME", str(home))
    program = (
        "import os, shutil\n"
        f"for target in (os.path.expanduser('~'), {str(home)!r}, {str(home / 'notes.txt')!r}):\n"
        "    try:\n"
        "        shutil.rmtree(target) if os.path.isdir(target) else os.remove(target)\n"
        "    except OSError as exc:\n"
        "        print(type(exc).__name__)\n"
    )
    _alongside(lambda: run_program(program))
    assert (home / ".ssh" / "id_rsa").read_text() == "key"
    assert (home / "notes.txt").read_text() == "notes"


@pytest.fixture
def reprobe():
    """Probe the host again on the next run (after monkeypatching) and after the test."""
    sandbox._host.cache_clear()
    yield
    sandbox._host.cache_clear()


@pytest.fixture
def sandbox_python(monkeypatch, reprobe):
    """Set SKYEVAL_SANDBOX_PYTHON for one test."""
    return lambda path: monkeypatch.setenv(sandbox.PYTHON_ENV_VAR, path)


@needs_uid
def test_without_system_python_another_interpreter_others_can_run_is_used(monkeypatch, reprobe):
    monkeypatch.setattr(sandbox, "SYSTEM_PYTHON", "/nonexistent/python3")
    monkeypatch.setattr(sys, "executable", "/usr/bin/python3")  # e.g. /usr/local/bin/python3 in python images
    assert sandbox.describe()["python"] == "/usr/bin/python3" and active_protections()["uid_drop"]
    assert run_program("import os\nprint(os.getuid())").stdout.strip() != "0"


def test_without_any_usable_interpreter_programs_run_as_root_and_say_so(monkeypatch, reprobe):
    python = os.path.realpath(sys.executable)
    if os.geteuid() != 0 or not python.startswith("/root/"):
        pytest.skip("needs root and an interpreter under /root, which other users cannot enter")
    monkeypatch.setattr(sandbox, "SYSTEM_PYTHON", "/nonexistent/python3")
    monkeypatch.setattr(sys, "executable", python)
    assert not active_protections()["uid_drop"] and not active_protections()["nproc_limit"]
    assert run_program("print('ran')").stdout == "ran\n"  # as root (inside a user namespace: no caps outside)


@needs_uid
def test_chosen_interpreter_runs_programs_with_its_packages(sandbox_python):
    os.makedirs("/opt", exist_ok=True)  # not /tmp: programs see their work dir there
    root = Path(tempfile.mkdtemp(prefix="skyeval-test-venv-", dir="/opt"))
    try:
        root.chmod(0o755)  # the sandbox uid must reach the interpreter's files
        subprocess.run([sandbox.SYSTEM_PYTHON, "-m", "venv", "--without-pip", str(root)], check=True)
        (next(root.glob("lib/python3*/site-packages")) / "extra_pkg.py").write_text("ANSWER = 42\n")
        sandbox_python(str(root / "bin" / "python"))
        result = run_program("import sys, extra_pkg\nprint(extra_pkg.ANSWER, sys.prefix)")
        assert result.stdout.split() == ["42", str(root)]
        assert active_protections()["uid_drop"]
    finally:
        shutil.rmtree(root)


@needs_uid
def test_chosen_interpreter_the_sandbox_user_cannot_read_is_refused(sandbox_python):
    python = os.path.realpath(sys.executable)
    if not python.startswith("/root/"):
        pytest.skip("needs an interpreter under /root, which other users cannot enter")
    sandbox_python(python)
    with pytest.raises(SandboxSetupError, match="cannot run as an unprivileged user"):
        run_program("print(1)")


def test_chosen_interpreter_that_does_not_exist_is_refused(sandbox_python, tmp_path):
    sandbox_python(str(tmp_path / "no-python"))
    with pytest.raises(SandboxSetupError, match="is not an executable file"):
        score_code(GOOD, GOOD_TESTS)


def test_chosen_interpreter_under_tmp_is_refused(sandbox_python):
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        python = Path(tmp) / "python"
        python.symlink_to(sandbox.SYSTEM_PYTHON if os.path.exists(sandbox.SYSTEM_PYTHON) else sys.executable)
        sandbox_python(str(python))
        with pytest.raises(SandboxSetupError, match="must live elsewhere"):
            run_program("print(1)")
