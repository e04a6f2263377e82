"""Run untrusted Python programs in a contained child process.

Each run gets its own process session, temp working dir, rlimits, a scrubbed
environment and wall-clock/output caps. As root it also gets a new network and mount
namespace (private /tmp) and a distinct unprivileged uid. See docs/sandbox.md.
"""

from __future__ import annotations

import functools
import logging
import math
import os
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skyeval.errors import SkyevalError

logger = logging.getLogger(__name__)

SYSTEM_PYTHON = "/usr/bin/python3"
PYTHON_ENV_VAR = "SKYEVAL_SANDBOX_PYTHON"  # the interpreter programs run under, if not the default
_KILL = "/bin/kill"
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000
_PRIVATE_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")
# PYTHONHASHSEED fixed: str/bytes hashes, hence the order of a set of strings, are the same in
# every run, so a program that depends on that order gets one verdict, run after run.
HASH_SEED = "0"
_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONHASHSEED": HASH_SEED}
_UID_BASE = 1_000_000_000
_PROBE_UID = _UID_BASE - 1
_SLOTS = 64
_CHUNK = 1 << 16
_EXIT_GRACE_S = 1.0
_MEMORY_SIGNS = ("MemoryError", "Cannot allocate memory", "std::bad_alloc")


@dataclass
class SandboxLimits:
    """Per-run limits: `cpu_s` of CPU time (RLIMIT_CPU, whole seconds, rounded up) and
    `timeout_s` of wall time. Give wall time a multiple of the CPU limit, so that a loaded
    machine does not turn a right program into a timeout. `max_processes` holds only when
    the sandbox can drop to its own uid."""

    timeout_s: float = 6.0
    cpu_s: float = 5.0
    memory_mb: int = 2048
    max_output_bytes: int = 8 << 20
    max_processes: int = 64
    network: bool = False


@dataclass
class RunResult:
    """Outcome of one run; `returncode` is None when the sandbox killed the program."""

    status: str  # "ok" | "runtime_error" | "timeout" | "memory" | "output_limit"
    returncode: int | None
    stdout: str
    stderr: str
    duration_s: float
    timeout: str | None = None  # which limit ended a "timeout": "cpu" (RLIMIT_CPU) or "wall"


@dataclass(frozen=True)
class _Host:
    python: str
    drop_uid: bool
    netns: bool
    mountns: bool


# Runs first in the sandboxed interpreter (as the scorer's user, before any program code):
# enter the namespaces, set rlimits, drop to the sandbox uid, write b"1" to the ready pipe
# (fd in argv[1]) and close it, then run main.py in this same interpreter. Doing this
# after exec rather than in a preexec_fn lets Popen vfork: a large scorer process (a Ray
# worker) is never copied per run.
_BOOTSTRAP = r"""
def _boot(net_flags, private_dirs, rlimits, uid):
    import os, resource, sys
    CLONE_NEWNS, MS_BIND, MS_REC, MS_PRIVATE = 0x20000, 0x1000, 0x4000, 0x40000
    if net_flags or private_dirs:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        def call(ret, what):
            if ret != 0:
                raise OSError(ctypes.get_errno(), what + " failed")
        if net_flags:
            call(libc.unshare(net_flags), "unshare")
        if private_dirs:
            call(libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
            call(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make / rprivate")
            for target in private_dirs:
                if os.path.isdir(target):  # each shows the work dir (the cwd)
                    call(libc.mount(b".", target.encode(), None, MS_BIND, None), "bind " + target)
            os.chdir(private_dirs[0])  # the work dir's old path is now hidden
    for name, soft, hard in rlimits:
        resource.setrlimit(name, (soft, hard))
    if uid is not None:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    ready = int(sys.argv[1])
    os.write(ready, b"1")
    os.close(ready)
    sys.argv[:] = ["main.py"]
    with open("main.py") as f:
        source = f.read()
    try:
        code = compile(source, "main.py", "exec")
    except (SyntaxError, ValueError) as exc:  # reported as `python main.py` would
        import traceback
        sys.stderr.write("".join(traceback.format_exception_only(exc)))
        sys.exit(1)
    del globals()["_boot"]
    globals()["__file__"] = "main.py"
    return code
"""


def _command(python: str, net_flags: int, private_tmp: bool, limits: SandboxLimits | None,
             uid: int | None) -> list[str]:
    """argv that sets up the sandbox in the new interpreter and runs ./main.py."""
    rlimits = []
    if limits is not None:
        cpu = max(1, math.ceil(limits.cpu_s))
        rlimits = [
            (resource.RLIMIT_CPU, cpu, cpu + 1),
            (resource.RLIMIT_AS, limits.memory_mb << 20, limits.memory_mb << 20),
            (resource.RLIMIT_FSIZE, limits.max_output_bytes, limits.max_output_bytes),
            (resource.RLIMIT_NPROC, limits.max_processes, limits.max_processes),
            (resource.RLIMIT_CORE, 0, 0),
        ]
    config = (net_flags, _PRIVATE_DIRS if private_tmp else (), rlimits, uid)
    # no -E: the environment is _ENV alone, and PYTHONHASHSEED must be read
    return [python, "-s", "-B", "-c", f"{_BOOTSTRAP}exec(_boot(*{config!r}))\n"]


class SandboxSetupError(SkyevalError, RuntimeError):
    """The sandbox could not be set up (so the program never ran)."""


def _spawn(argv: list[str], workdir: Path) -> tuple[subprocess.Popen, int]:
    """Start `argv` + [ready fd] in its own session; returns it and the ready pipe's read end."""
    ready_r, ready_w = os.pipe()
    try:
        proc = subprocess.Popen([*argv, str(ready_w)], cwd=workdir, env=_ENV, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                                pass_fds=(ready_w,))
    except BaseException:
        os.close(ready_r)
        raise
    finally:
        os.close(ready_w)
    return proc, ready_r


def _was_set_up(ready: int) -> bool:
    """Whether the exited bootstrap reported setup done (non-blocking: a process forked
    elsewhere in the scorer meanwhile may still hold the pipe's write end)."""
    os.set_blocking(ready, False)
    try:
        return os.read(ready, 1) == b"1"
    except BlockingIOError:
        return False


def _probe(python: str, net_flags: int = 0, private_tmp: bool = False, uid: int | None = None) -> bool:
    """Whether `python` starts with these settings and, under `uid`, still imports the stdlib."""
    workdir = Path(tempfile.mkdtemp(prefix="skyeval-probe-"))
    try:
        (workdir / "main.py").write_text("import json" if uid is not None else "")
        if uid is not None:
            os.chown(workdir, uid, uid)
        proc, ready = _spawn(_command(python, net_flags, private_tmp, None, uid), workdir)
        try:
            proc.communicate(timeout=30)
            return proc.returncode == 0 and _was_set_up(ready)
        finally:
            proc.kill()  # a no-op once it has exited
            os.close(ready)
    except (subprocess.SubprocessError, OSError):
        return False
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _chosen_python() -> str | None:
    """$SKYEVAL_SANDBOX_PYTHON, checked: an executable file outside the private dirs."""
    chosen = os.environ.get(PYTHON_ENV_VAR)
    if chosen and not (os.path.isfile(chosen) and os.access(chosen, os.X_OK)):
        raise SandboxSetupError(f"{PYTHON_ENV_VAR}={chosen} is not an executable file")
    paths = (os.path.abspath(chosen), os.path.realpath(chosen)) if chosen else ()
    if any(path.startswith(d + "/") for path in paths for d in _PRIVATE_DIRS):
        raise SandboxSetupError(f"{PYTHON_ENV_VAR}={chosen}: programs see {', '.join(_PRIVATE_DIRS)} as "
                                "their own work dir, so the interpreter must live elsewhere (e.g. /opt)")
    return chosen


@functools.cache
def _host() -> _Host:
    root = os.geteuid() == 0
    chosen = _chosen_python()
    net_flags = _CLONE_NEWNET if root else _CLONE_NEWUSER | _CLONE_NEWNET
    netns = _probe(sys.executable, net_flags)
    mountns = root and _probe(sys.executable, private_tmp=True)
    python, drop_uid = chosen or sys.executable, False
    if root:  # the first interpreter that still works after dropping to an unprivileged uid
        candidates = [chosen] if chosen else [SYSTEM_PYTHON, sys.executable]
        usable = next((p for p in candidates if os.access(p, os.X_OK) and os.access(_KILL, os.X_OK)
                       and _probe(p, private_tmp=mountns, uid=_PROBE_UID)), None)
        if usable:
            python, drop_uid = usable, True
        elif chosen:
            raise SandboxSetupError(f"{PYTHON_ENV_VAR}={chosen} cannot run as an unprivileged user: it and its "
                                    "standard library must be readable and executable by all users")
        else:
            logger.warning("neither %s works as an unprivileged user: sandboxed programs run as root",
                           " nor ".join(candidates))
    host = _Host(python, drop_uid, netns, mountns)
    logger.info("sandbox protections on this host: %s", _protections(host))
    return host


def _protections(host: _Host) -> dict[str, bool]:
    return {
        "netns": host.netns,
        "private_tmp": host.mountns,
        "uid_drop": host.drop_uid,
        "nproc_limit": host.drop_uid,
        "rlimits": True,
        "pgroup": True,
        "scrubbed_env": True,
    }


def active_protections() -> dict[str, bool]:
    """Which protections hold on this host (probed once per process)."""
    return _protections(_host())


def describe() -> dict[str, Any]:
    """The interpreter programs run under, its version and the protections that hold."""
    host = _host()
    version = subprocess.run([host.python, "-E", "-s", "-c", "import platform; print(platform.python_version())"],
                             env=_ENV, capture_output=True, text=True, timeout=30).stdout.strip()
    return {"python": host.python, "python_version": version, "protections": _protections(host)}


class _UidPool:
    """Distinct uids per concurrent sandbox: unique per process (pid) and per slot."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._cond = threading.Condition()
        self._free = list(range(_SLOTS))

    def acquire(self) -> int:
        with self._cond:
            self._cond.wait_for(lambda: self._free)
            return _UID_BASE + os.getpid() * _SLOTS + self._free.pop()

    def release(self, uid: int) -> None:
        with self._cond:
            self._free.append((uid - _UID_BASE) % _SLOTS)
            self._cond.notify()


_uids = _UidPool()
os.register_at_fork(after_in_child=_uids.reset)


def _write_files(workdir: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        path = (workdir / name).resolve()
        if not path.is_relative_to(workdir.resolve()):
            raise ValueError(f"sandbox file outside the work dir: {name!r}")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())


def _exited(pid: int) -> bool:
    """True once `pid` has exited; the zombie is kept so its pgid stays reserved."""
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def _kill_all(pid: int, uid: int | None) -> None:
    """SIGKILL the run's process group, and every process of its uid when one was used."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    if uid is not None and _has_processes(uid, besides=pid):  # kill(-1) as that uid reaches children that left the group
        subprocess.run([_KILL, "-9", "-1"], user=uid, group=uid, extra_groups=[],
                       env=_ENV, capture_output=True, check=False)


def _has_processes(uid: int, besides: int) -> bool:
    """Whether a process other than `besides` (the run's own, perhaps not yet reaped)
    still runs as `uid` (a stat per /proc entry: ~1 ms)."""
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and int(entry.name) != besides:
            try:
                if entry.stat().st_uid == uid:
                    return True
            except FileNotFoundError:
                continue
    return False


class _Pump:
    """Feed stdin and collect stdout/stderr without blocking, up to a byte cap."""

    def __init__(self, proc: subprocess.Popen, stdin: bytes, cap: int) -> None:
        self.proc, self.cap, self.total = proc, cap, 0
        self.out, self.err = bytearray(), bytearray()
        self.pending = memoryview(stdin)
        self.sel = selectors.DefaultSelector()
        self.sel.register(proc.stdout, selectors.EVENT_READ, self.out)
        self.sel.register(proc.stderr, selectors.EVENT_READ, self.err)
        if stdin:
            os.set_blocking(proc.stdin.fileno(), False)
            self.sel.register(proc.stdin, selectors.EVENT_WRITE)
        else:
            proc.stdin.close()

    @property
    def open(self) -> bool:
        return bool(self.sel.get_map())

    def step(self, timeout: float) -> bool:
        """Move data for up to `timeout` seconds; False once output exceeds the cap."""
        for key, _ in self.sel.select(timeout):
            if key.data is None:
                self._write(key.fileobj)
            elif not self._read(key.fileobj, key.data):
                return False
        return True

    def _write(self, pipe) -> None:
        try:
            self.pending = self.pending[os.write(pipe.fileno(), self.pending[:_CHUNK]):]
        except BrokenPipeError:
            self.pending = self.pending[:0]
        if not self.pending:
            self._close(pipe)

    def _read(self, pipe, buf: bytearray) -> bool:
        chunk = os.read(pipe.fileno(), _CHUNK)
        if not chunk:
            self._close(pipe)
        buf += chunk
        self.total += len(chunk)
        return self.total <= self.cap

    def _close(self, pipe) -> None:
        self.sel.unregister(pipe)
        pipe.close()

    def close(self) -> None:
        for key in list(self.sel.get_map().values()):
            self._close(key.fileobj)
        self.sel.close()


def _supervise(proc: subprocess.Popen, pump: _Pump, limits: SandboxLimits, uid: int | None) -> str | None:
    """Drive the run to its end and kill all it started; return "timeout"/"output_limit" if cut short."""
    start = time.monotonic()
    exited_at: float | None = None
    try:
        while pump.open or exited_at is None:
            now = time.monotonic()
            if exited_at is None and now - start > limits.timeout_s:
                return "timeout"
            if exited_at is not None and now - exited_at > _EXIT_GRACE_S:
                return None  # a process out of our reach still holds the pipes
            if not pump.open:
                time.sleep(0.005)
            elif not pump.step(0.05):
                return "output_limit"
            if exited_at is None and _exited(proc.pid):
                exited_at = time.monotonic()
                _kill_all(proc.pid, uid)  # no stray children; lets the pipes reach EOF
        return None
    finally:
        if exited_at is None:
            _kill_all(proc.pid, uid)


def _status(killed: str | None, returncode: int, stderr: str) -> str:
    if killed:
        return killed
    if returncode == 0:
        return "ok"
    if returncode == -signal.SIGXCPU:
        return "timeout"
    if any(sign in stderr for sign in _MEMORY_SIGNS):
        return "memory"
    return "runtime_error"


def _execute(workdir: Path, stdin: str, limits: SandboxLimits, host: _Host, uid: int | None) -> RunResult:
    net_flags = _CLONE_NEWNET if host.netns and not limits.network else 0
    if net_flags and not host.drop_uid:
        net_flags |= _CLONE_NEWUSER
    start = time.monotonic()
    proc, ready = _spawn(_command(host.python, net_flags, host.mountns, limits, uid), workdir)
    try:
        pump = _Pump(proc, stdin.encode(), limits.max_output_bytes)
        try:
            killed = _supervise(proc, pump, limits, uid)
        finally:
            pump.close()
            returncode = proc.wait()
        set_up = _was_set_up(ready)
    finally:
        os.close(ready)
    stderr = pump.err.decode(errors="replace")
    if not set_up:
        raise SandboxSetupError(f"sandbox setup failed (exit {returncode}): {stderr.strip()[-500:]}")
    status = _status(killed, returncode, stderr)
    return RunResult(
        status=status,
        returncode=None if killed else returncode,
        stdout=pump.out.decode(errors="replace"),
        stderr=stderr,
        duration_s=time.monotonic() - start,
        timeout=("wall" if killed == "timeout" else "cpu") if status == "timeout" else None,
    )


def run_program(source: str, stdin: str = "", *, limits: SandboxLimits = SandboxLimits(),
                files: dict[str, str | bytes] | None = None) -> RunResult:
    """Run `source` as main.py in a fresh sandbox, with `files` beside it, feeding `stdin`."""
    host = _host()
    uid = _uids.acquire() if host.drop_uid else None
    workdir = Path(tempfile.mkdtemp(prefix="skyeval-sandbox-"))
    try:
        _write_files(workdir, {**(files or {}), "main.py": source})
        if uid is not None:
            os.chown(workdir, uid, uid)
        return _execute(workdir, stdin, limits, host, uid)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        if uid is not None:
            _uids.release(uid)
