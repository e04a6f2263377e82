"""The reward server (`skyeval serve-reward`), started as users start it, on 127.0.0.1."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


SERVE = [sys.executable, "-m", "skyeval.cli", "serve-reward"]


@contextmanager
def reward_server(*args: str, command: list[str] = SERVE):
    """`python -m skyeval.cli serve-reward ARGS port=P` (or `command` ARGS port=P) until it
    answers /health; stopped with SIGTERM."""
    port = free_port()
    proc = subprocess.Popen([*command, *args, f"port={port}"], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                status, body = request(port, "GET", "/health")
                if status == 200:
                    break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"server did not start: {proc.stdout.read() if proc.poll() is not None else ''}")
            time.sleep(0.2)
        yield proc, port
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(120)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def request(port: int, method: str, path: str, body: bytes | None = None,
            conn: http.client.HTTPConnection | None = None) -> tuple[int, dict]:
    own = conn is None
    conn = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    try:
        conn.request(method, path, body=body, headers={"Content-Type": "application/json"} if body is not None else {})
        response = conn.getresponse()
        return response.status, json.loads(response.read() or b"null")
    finally:
        if own:
            conn.close()


def post(port: int, payload, conn=None) -> tuple[int, dict]:
    return request(port, "POST", "/get_reward", payload if isinstance(payload, bytes) else json.dumps(payload).encode(), conn)


@pytest.fixture(scope="module")
def math_server():
    with reward_server("+env=math500", "reward.weights.format=0.5", "reward.workers=2") as (proc, port):
        yield proc, port


def test_rewards_components_and_health(math_server):
    _, port = math_server
    prompts = ["Q: 2+2?\n", "Q: 2+2?\n", "<|assistant|><think>\n"]
    responses = ["<think>hmm \\boxed{5}</think> \\boxed{4}", "\\boxed{5}", "so \\boxed{4}"]  # the last: unclosed think
    status, body = post(port, {"query": [p + r for p, r in zip(prompts, responses)], "prompts": prompts,
                               "labels": ["4", "4", "4"]})
    assert status == 200
    assert body["rewards"] == body["scores"] == [1.5, 0.25, 0.0]
    assert body["extra_logs"] == {"correct": [1.0, 0.0, 0.0], "format": [1.0, 0.5, 0.0], "length": [0.0, 0.0, 0.0]}
    assert body["errors"] == [None, None, None]
    # without prompts the whole query is the response; a number label is a gold too
    assert post(port, {"query": ["\\boxed{12}"], "labels": [12]})[1]["extra_logs"]["correct"] == [1.0]
    # the prompt's own boxed example is never graded: the response follows the prompt
    assert post(port, {"query": ["Example: \\boxed{4}\nA: no idea"], "prompts": ["Example: \\boxed{4}\n"],
                       "labels": ["4"]})[1]["rewards"] == [0.0]
    status, health = request(port, "GET", "/health")
    assert status == 200 and health["env"] == "math500" and health["workers"] == 2


BAD_REQUESTS = [
    (b"{not json", 400, "body is not JSON"),
    (b"[1, 2]", 422, "JSON object"),
    (json.dumps({"query": ["a"]}).encode(), 422, "labels must be a list"),
    (json.dumps({"query": ["a", "b"], "labels": ["1"]}).encode(), 422, "1 labels for 2 queries"),
    (json.dumps({"query": "a", "labels": ["1"]}).encode(), 422, "query must be a list of strings"),
    (json.dumps({"query": [1], "labels": ["1"]}).encode(), 422, "query must be a list of strings"),
    (json.dumps({"query": ["a"], "labels": [None]}).encode(), 422, "labels[0] is null"),
    (json.dumps({"query": ["a"], "labels": ["1"], "prompts": ["zzz"]}).encode(), 422, "does not contain prompts[0]"),
    (json.dumps({"query": ["a"], "labels": ["1"], "prompts": "a"}).encode(), 422, "prompts must be a list"),
    (json.dumps({"query": ["a"], "label": ["1"]}).encode(), 422, "unknown field(s) ['label']"),
    (json.dumps({"query": ["a"] * 5000, "labels": ["1"] * 5000}).encode(), 413, "over the limit of 4096"),
    (b'{"query": ["' + b"x" * (65 << 20) + b'"], "labels": ["1"]}', 413, "over the limit"),
]


@pytest.mark.parametrize("body,status,reason", BAD_REQUESTS, ids=[r for _, _, r in BAD_REQUESTS])
def test_a_bad_request_gets_a_4xx_with_a_one_line_reason(math_server, body, status, reason):
    got, answer = post(math_server[1], body)
    assert got == status and reason in answer["error"] and "\n" not in answer["error"]
    assert "rewards" not in answer  # nothing silently zeroed


def test_wrong_methods_and_paths_are_4xx(math_server):
    assert request(math_server[1], "GET", "/get_reward")[0] == 405
    assert request(math_server[1], "POST", "/nothing", b"{}")[0] == 404


def test_a_misspelt_setting_fails_at_start_with_the_closest_key():
    proc = subprocess.run([sys.executable, "-m", "skyeval.cli", "serve-reward", "+env=math500", "prot=1"], cwd=REPO,
                          capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode != 0 and "Did you mean 'port'?" in proc.stderr


# `skyeval serve-reward ARGS` whose every request, once it reaches the scorer, touches
# argv[1] (the server reports it started) and waits until argv[2] exists (the test releases it).
HELD_SERVE = [sys.executable, "-c", """
import sys, time
from pathlib import Path
from skyeval.cli import main
from skyeval.reward.scoring import Reward

started, release, score = Path(sys.argv[1]), Path(sys.argv[2]), Reward.score

def held(self, *args, **kwargs):
    started.touch()
    while not release.exists():
        time.sleep(0.01)
    return score(self, *args, **kwargs)

Reward.score = held
main(["serve-reward", *sys.argv[3:]])
"""]


def wait_until(condition, what: str, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout  # a hang bound
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(0.05)


def refuses_connections(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def test_sigterm_finishes_requests_in_flight_then_stops_the_workers(tmp_path):
    import psutil

    started, release = tmp_path / "started", tmp_path / "release"
    command = [*HELD_SERVE, str(started), str(release)]
    with reward_server("+env=math500", "reward.workers=2", command=command) as (proc, port):
        wait_until(lambda: len(psutil.Process(proc.pid).children(recursive=True)) >= 2, "2 scoring workers")
        workers = psutil.Process(proc.pid).children(recursive=True)
        answers = []
        payload = {"query": ["\\boxed{4}"] * 200, "labels": ["4"] * 200}
        client = threading.Thread(target=lambda: answers.append(post(port, payload)))
        client.start()
        wait_until(started.exists, "the request reached the scorer")  # in flight, held there
        proc.send_signal(signal.SIGTERM)
        wait_until(lambda: refuses_connections(port), "the server stopped listening")  # shutting down
        assert proc.poll() is None and all(w.is_running() for w in workers) and not answers  # still held
        release.touch()
        client.join(300)
        assert proc.wait(300) == 128 + signal.SIGTERM  # uvicorn re-raises the signal once it has shut down
        assert proc.stdout.read().splitlines()[-1] == "stopped (SIGTERM)."  # the CLI's line (no run folder to resume)
        assert answers and answers[0][0] == 200 and answers[0][1]["rewards"] == [1.0] * 200
        psutil.wait_procs(workers, timeout=60)
        assert not [w for w in workers if w.is_running() and w.status() != psutil.STATUS_ZOMBIE]


RIGHT = "<think>Let me see: maybe \\boxed{{7}}.</think> Adding, the answer is \\boxed{{{gold}}}."
WRONG = "<think>careful</think> The answer is \\boxed{{{wrong}}}."
HOSTILE = [
    "```python\nimport os\nos.system('rm -rf /')\nwhile True: os.fork()\n```",
    "\\boxed{" * 20_000,
    "}" * 50_000 + "\\boxed{\\frac{\\frac{\\frac{1}{2}}{3}}{" + "(" * 500 + "}",
    "<think>" * 1000 + "\\boxed{4}",
    "x" * 400_000,
    "\\boxed{" + "9" * 5000 + "^" + "9" * 5000 + "}",
]
MALFORMED = [b"{", b"null", json.dumps({"query": ["a"], "labels": []}).encode(),
             json.dumps({"query": ["a"], "labels": ["1"], "prompts": ["b"]}).encode()]


@pytest.mark.slow
def test_load_64_clients_10000_requests_all_answered_no_5xx_memory_flat(math_server):
    """Mixed right, wrong, malformed and hostile requests from 64 concurrent clients."""
    import psutil

    proc, port = math_server
    server = psutil.Process(proc.pid)

    def rss() -> int:
        return sum(p.memory_info().rss for p in [server, *server.children(recursive=True)])

    def one(i: int, conn) -> tuple[int, dict, str, list]:
        kind = ("right", "wrong", "hostile", "right", "malformed", "wrong", "right", "hostile")[i % 8]
        gold = str(i % 97)
        if kind == "malformed":
            return (*post(port, MALFORMED[i % len(MALFORMED)], conn), kind, [])
        size = 1 + i % 3
        texts = {"right": RIGHT.format(gold=gold), "wrong": WRONG.format(wrong=int(gold) + 1),
                 "hostile": HOSTILE[i % len(HOSTILE)]}
        prompt = f"Problem {i}: what is {gold}?\n"
        payload = {"query": [prompt + texts[kind]] * size, "prompts": [prompt] * size, "labels": [gold] * size}
        return (*post(port, payload, conn), kind, [1.0 if kind == "right" else 0.0] * size)

    total, clients = 10_000, 64
    counter = iter(range(total))
    lock = threading.Lock()
    outcomes: list[tuple[int, str, bool]] = []
    memory: dict[str, int] = {}

    def client() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        while True:
            with lock:
                i = next(counter, None)
                if i == 2000:
                    memory["warm"] = rss()
            if i is None:
                break
            try:
                status, body, kind, expected = one(i, conn)
            except (OSError, http.client.HTTPException) as err:
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
                status, body, kind, expected = -1, {"error": repr(err)}, "lost", []
            ok = (400 <= status < 500 and "error" in body) if kind == "malformed" else \
                (status == 200 and body["extra_logs"]["correct"] == expected and body["errors"] == [None] * len(expected))
            with lock:
                outcomes.append((status, kind, ok))
        conn.close()

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(3600)
    memory["end"] = rss()
    assert len(outcomes) == total  # every request answered
    assert not [o for o in outcomes if o[0] >= 500 or o[0] < 0]  # no 5xx, no dropped connection
    assert [o for o in outcomes if not o[2]] == []  # right ones 1.0, wrong and hostile 0.0, malformed 4xx
    growth = memory["end"] - memory["warm"]
    print(f"RSS server+workers: {memory['warm'] / 2**20:.1f} MiB after 2,000 requests, "
          f"{memory['end'] / 2**20:.1f} MiB after 10,000 ({growth / 2**20:+.1f} MiB)")
    assert growth < 64 * 2**20


HOSTILE_CODE = {
    "loop": "```python\ndef has_close_elements(numbers, threshold):\n    while True:\n        pass\n```",
    "fork": "```python\nimport os\nfor _ in range(200):\n    try:\n        os.fork()\n    except OSError:\n        break\n"
            "def has_close_elements(numbers, threshold):\n    return True\n```",
    "memory": "```python\nblocks = [bytearray(1 << 30) for _ in range(4)]\n"
              "def has_close_elements(numbers, threshold):\n    return True\n```",
    "output": "```python\nimport sys\nfor _ in range(1024):\n    sys.stdout.write('x' * (1 << 20))\n```",
    "cheat": "```python\nimport sys\nprint('ALL TESTS PASSED')\nsys.exit(0)\n```",
}


@pytest.mark.slow
def test_code_rewards_under_concurrent_clients_with_hostile_programs(data_dir):
    """A humaneval server: right, wrong, hostile and malformed requests from 64 clients at once."""
    from skyeval.envs.registry import SkyEnvBuilder

    env = SkyEnvBuilder.build("humaneval", {"limit": 1})
    problem = env.load_problems()[0]
    right = env.reference_generation(problem)
    kinds = ["right", "wrong", *HOSTILE_CODE, "malformed"]
    texts = {"right": right, "wrong": right.replace("distance < threshold", "distance > threshold"), **HOSTILE_CODE}
    with reward_server("+env=humaneval", "env.timeout_s=3", "reward.workers=4", "reward.item_timeout_s=120") as (_, port):
        answers: list = [None] * (8 * len(kinds))  # 64 clients at once

        def client(i: int) -> None:
            kind = kinds[i % len(kinds)]
            if kind == "malformed":
                answers[i] = (kind, *post(port, {"query": [right], "labels": [None]}))
            else:
                answers[i] = (kind, *post(port, {"query": [texts[kind]], "labels": [json.loads(problem["tests_json"])]}))

        threads = [threading.Thread(target=client, args=(i,)) for i in range(len(answers))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(1800)
        assert all(a is not None for a in answers)  # every request answered
        for kind, status, body in answers:
            if kind == "malformed":
                assert status == 422
            else:
                assert status == 200 and body["errors"] == [None], (kind, body)
                assert body["rewards"] == [1.0 if kind == "right" else 0.0], kind
        status, health = request(port, "GET", "/health")
        assert status == 200 and health["workers_replaced"] == 0  # the sandbox contained them, no worker was lost
