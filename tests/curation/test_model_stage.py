"""The optional model stage of decontamination against a real OpenAI-compatible HTTP
server on 127.0.0.1: /v1/embeddings answers hashed bag-of-words vectors (deterministic),
/v1/chat/completions a judge that says True when both problems hold the same numbers."""

from __future__ import annotations

import hashlib
import json
import random
import re
import subprocess
import sys
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from skyeval.curation.decontaminate import BenchmarkIndex, decontaminate
from skyeval.curation.model_stage import ModelStage, ModelStageConfig
from tests.conftest import REPO

DIM = 256


def bag_of_words(text: str) -> list[float]:
    vector = [0.0] * DIM
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        vector[int(hashlib.sha1(word.encode()).hexdigest(), 16) % DIM] += 1.0
    return vector


class Server:
    """A tiny OpenAI-compatible server; `calls` counts requests per path."""

    def __init__(self) -> None:
        self.calls: Counter = Counter()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - stdlib name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.calls[self.path] += 1
                if self.path == "/v1/embeddings":
                    inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                    tokens = sum(len(t.split()) for t in inputs)
                    payload = {"object": "list", "model": body["model"],
                               "data": [{"object": "embedding", "index": i, "embedding": bag_of_words(t)}
                                        for i, t in enumerate(inputs)],
                               "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}
                elif self.path == "/v1/chat/completions":
                    prompt = body["messages"][-1]["content"]
                    a, b = prompt.split("Problem A:\n", 1)[1].split("\n\nProblem B:\n", 1)
                    same = set(re.findall(r"\d+", a)) == set(re.findall(r"\d+", b.split("\n\nAnswer with")[0]))
                    payload = {"id": "c", "object": "chat.completion", "created": 0, "model": body["model"],
                               "choices": [{"index": 0, "finish_reason": "stop",
                                            "message": {"role": "assistant", "content": str(same)}}],
                               "usage": {"prompt_tokens": len(prompt.split()), "completion_tokens": 1,
                                         "total_tokens": len(prompt.split()) + 1}}
                else:
                    self.send_error(404)
                    return
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> "Server":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    with Server() as s:
        yield s


PROBLEMS = [("bench", "p1", "Tom buys 3 apples for 2 dollars each and sells them for 5 dollars each. "
                            "What is his profit?"),
            ("bench", "p2", "A train travels 60 miles in 2 hours. How far does it travel in 7 hours at that speed?"),
            ("bench", "p3", "Write a function that returns the sum of the squares of a list of integers.")]


def shuffled(text: str, seed: int = 0) -> str:
    words = text.split()
    random.Random(seed).shuffle(words)
    return " ".join(words)


def test_model_stage_finds_confirmed_rows_and_a_rerun_pays_nothing(server, tmp_path):
    rows = [{"problem": shuffled(PROBLEMS[0][2])},  # same words, no n-gram left: embedding 1.0, judge True
            {"problem": shuffled(PROBLEMS[1][2].replace("60", "80"))},  # a near embedding, other numbers: False
            {"problem": "Explain photosynthesis in plants and the role of chlorophyll."}]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    index = BenchmarkIndex.build({"bench": [(pid, text) for _, pid, text in PROBLEMS]}, paraphrase=None)
    config = ModelStageConfig(server.url, "emb", judge_model="judge", api_key_env=None, top_k=2,
                              min_similarity=0.6, cache=str(tmp_path / "cache.sqlite"))

    stage = ModelStage(config, PROBLEMS)
    report = decontaminate(tmp_path / "in.jsonl", tmp_path / "out", index, workers=1, model=stage)
    stage.close()
    removed = [json.loads(line) for line in (tmp_path / "out" / "removed.jsonl").open()]
    assert [r["problem"] for r in removed] == [rows[0]["problem"]]
    (match,) = removed[0]["contamination"]
    assert (match["match"], match["problem_id"], match["benchmark"]) == ("model", "p1", "bench")
    assert match["score"] >= 0.99
    assert report["removed_by_benchmark_and_match"] == {"bench": {"model": 1}}
    cost = report["model_stage"]["cost"]
    assert cost["embedded"] == 6 and cost["embedding_requests"] == server.calls["/v1/embeddings"] == 2
    assert cost["judge_requests"] == server.calls["/v1/chat/completions"] == 2  # row 0 once, row 1 once
    assert cost["embedding_tokens"] > 0 and cost["judge_prompt_tokens"] > 0

    calls = dict(server.calls)
    stage = ModelStage(config, PROBLEMS)
    again = decontaminate(tmp_path / "in.jsonl", tmp_path / "out2", index, workers=1, model=stage)
    stage.close()
    assert dict(server.calls) == calls  # everything came from the cache
    cost = again["model_stage"]["cost"]
    assert (cost["embedding_requests"], cost["judge_requests"]) == (0, 0)
    assert cost["embeddings_cached"] == 6 and cost["verdicts_cached"] == 2
    assert again["removed"] == 1


def test_without_a_judge_the_nearest_problem_above_the_similarity_is_the_match(server, tmp_path):
    config = ModelStageConfig(server.url, "emb", api_key_env=None, min_similarity=0.9,
                              cache=str(tmp_path / "cache.sqlite"))
    stage = ModelStage(config, PROBLEMS)
    found = stage.check([shuffled(PROBLEMS[2][2]), PROBLEMS[1][2].replace("60", "80"), "Nothing alike at all."])
    stage.close()
    assert found[0].problem == 2 and not found[0].judged
    assert found[1] is not None and found[1].problem == 1  # no judge: a changed number still matches
    assert found[2] is None and server.calls["/v1/chat/completions"] == 0


def test_cli_model_stage_prints_its_cost(server, tmp_path, data_dir):
    problem = json.loads((data_dir / "gsm8k" / "test.jsonl").open().readline())["question"]
    rows = [{"problem": shuffled(problem)}, {"problem": "How many legs do three spiders have?"}]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    args = [sys.executable, str(REPO / "scripts" / "curate.py"), "decontaminate", str(tmp_path / "in.jsonl"),
            "--against", "gsm8k", "--no-paraphrase", "--workers", "1", "--embeddings-url", server.url,
            "--embedding-model", "emb", "--judge-model", "judge", "--api-key-env", "",
            "--model-cache", str(tmp_path / "cache.sqlite")]
    first = subprocess.run([*args, "--out", str(tmp_path / "a")], capture_output=True, text=True, timeout=600, cwd=REPO)
    assert first.returncode == 0, first.stderr
    assert "model stage: 1321 texts embedded" in first.stdout  # 1,319 problems + 2 rows
    report = json.loads((tmp_path / "a" / "report.json").read_text())
    assert report["removed_by_benchmark_and_match"] == {"gsm8k": {"model": 1}}
    second = subprocess.run([*args, "--report-only"], capture_output=True, text=True, timeout=600, cwd=REPO)
    assert second.returncode == 0, second.stderr
    assert "model stage: 0 texts embedded (0 tokens, 0 requests), 1321 from the cache" in second.stdout
    assert "judge 0 calls" in second.stdout
