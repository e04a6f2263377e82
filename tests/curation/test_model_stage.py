"""The optional model stage of decontamination against a real OpenAI-compatible HTTP
server on 127.0.0.1: /v1/embeddings answers hashed bag-of-words vectors (deterministic),
/v1/chat/completions a judge (asked through skyeval.grading's Judge, `same_problem`
prompt) that says `Verdict: equivalent` when both texts hold the same numbers."""

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

from skyeval.backends.openai import HTTPConfig
from skyeval.curation.decontaminate import BenchmarkIndex, decontaminate
from skyeval.curation.model_stage import ModelStage, ModelStageConfig
from skyeval.errors import ConfigError
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
        self.prompts: list[str] = []  # the judge's user messages
        self.reply: str | None = None  # the judge's reply to everything (None: compare the numbers)
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
                    server.prompts.append(prompt)
                    problem, row = (prompt.split(f"<{tag}>\n", 1)[1].split(f"\n</{tag}>", 1)[0]
                                    for tag in ("problem", "candidate"))
                    same = set(re.findall(r"\d+", problem)) == set(re.findall(r"\d+", row))
                    reply = server.reply or f"Both ask the same.\nVerdict: {'equivalent' if same else 'different'}"
                    payload = {"id": "c", "object": "chat.completion", "created": 0, "model": body["model"],
                               "choices": [{"index": 0, "finish_reason": "stop",
                                            "message": {"role": "assistant", "content": reply}}],
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


def judge_config(server, model: str = "judge") -> dict:
    """The judge as grading configures one: fields of a model config, `_target_` its class."""
    return {"_target_": "skyeval.backends.openai.HTTPConfig", "model_source": model, "api_url": server.url,
            "api_key_env": None, "max_retries": 0, "timeout_s": 30.0}


def test_model_stage_finds_confirmed_rows_and_a_rerun_pays_nothing(server, tmp_path, capsys):
    rows = [{"problem": shuffled(PROBLEMS[0][2])},  # same words, no n-gram left: embedding 1.0, judge equivalent
            {"problem": shuffled(PROBLEMS[1][2].replace("60", "80"))},  # a near embedding, other numbers: different
            {"problem": "Explain photosynthesis in plants and the role of chlorophyll."}]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    index = BenchmarkIndex.build({"bench": [(pid, text) for _, pid, text in PROBLEMS]}, paraphrase=None)
    config = ModelStageConfig(server.url, "emb", judge=judge_config(server), api_key_env=None, top_k=2,
                              min_similarity=0.6, cache=str(tmp_path / "cache"))

    stage = ModelStage(config, PROBLEMS)
    report = decontaminate(tmp_path / "in.jsonl", tmp_path / "out", index, workers=1, model=stage)
    stage.close()
    removed = [json.loads(line) for line in (tmp_path / "out" / "removed.jsonl").open()]
    assert [r["problem"] for r in removed] == [rows[0]["problem"]]
    (match,) = removed[0]["contamination"]
    assert (match["match"], match["problem_id"], match["benchmark"]) == ("model", "p1", "bench")
    assert match["score"] >= 0.99
    kept = [json.loads(line)["problem"] for line in (tmp_path / "out" / "kept.jsonl").open()]
    assert kept == [rows[1]["problem"], rows[2]["problem"]]  # the judge said different: kept
    assert report["removed_by_benchmark_and_match"] == {"bench": {"model": 1}}
    assert report["model_stage"]["judge"] == {"model": "judge", "backend": "HTTPConfig", "prompt": "same_problem"}
    # the judge saw the benchmark problem and the row, each quoted in its own markers
    assert sorted(p.split("<candidate>\n", 1)[1].split("\n</candidate>")[0] for p in server.prompts) == \
        sorted([rows[0]["problem"], rows[1]["problem"]])
    cost = report["model_stage"]["cost"]
    assert cost["embedded"] == 6 and cost["embedding_requests"] == server.calls["/v1/embeddings"] == 2
    judge = cost["judge"]
    assert judge["requests"] == server.calls["/v1/chat/completions"] == 2  # row 0 once, row 1 once
    assert judge["cached"] == 0 and cost["embedding_tokens"] > 0 and judge["tokens"]["prompt"] > 0
    print(stage.cost.line())
    assert "model stage: 6 texts embedded" in capsys.readouterr().out
    assert list((tmp_path / "cache").iterdir()) and next((tmp_path / "cache" / "judge").glob("cache*.jsonl"))

    calls = dict(server.calls)
    stage = ModelStage(config, PROBLEMS)
    again = decontaminate(tmp_path / "in.jsonl", tmp_path / "out2", index, workers=1, model=stage)
    stage.close()
    assert dict(server.calls) == calls  # everything came from the cache
    cost = again["model_stage"]["cost"]
    assert (cost["embedding_requests"], cost["judge"]["requests"]) == (0, 0)
    assert cost["embeddings_cached"] == 6 and cost["judge"]["cached"] == 2
    assert again["removed"] == 1
    assert stage.cost.line() == ("model stage: 0 texts embedded (0 tokens, 0 requests), 6 from the cache; "
                                 "judge 0 calls (0 prompt + 0 completion tokens), 2 verdicts from the cache")

    # another judge model is another question
    other = ModelStage(ModelStageConfig(server.url, "emb", judge=judge_config(server, "judge-2"), api_key_env=None,
                                        top_k=2, min_similarity=0.6, cache=str(tmp_path / "cache")), PROBLEMS)
    other.check([rows[0]["problem"]])
    other.close()
    assert server.calls["/v1/chat/completions"] == calls["/v1/chat/completions"] + 1


def test_a_rejected_candidate_leads_to_the_next_and_an_unparseable_reply_confirms_nothing(server, tmp_path):
    # p4 is p2 with other numbers and a sentence more: the row (p4 reworded) is nearer p2 (0.96) than p4 (0.91)
    problems = PROBLEMS + [("bench", "p4", PROBLEMS[1][2].replace("60", "80") + " Its carriages are painted blue.")]
    config = ModelStageConfig(server.url, "emb", judge=judge_config(server), api_key_env=None, top_k=3,
                              min_similarity=0.6, cache=str(tmp_path / "cache"))
    stage = ModelStage(config, problems)
    row = shuffled(PROBLEMS[1][2].replace("60", "80"), seed=1)
    [found] = stage.check([row])
    assert found is not None and stage.problems[found.problem][1] == "p4" and found.judged
    assert found.similarity == pytest.approx(0.9063, abs=1e-4)
    assert server.calls["/v1/chat/completions"] == 2  # p2 (different), then p4 (equivalent); p1, p3 too far
    assert [p.split("<problem>\n", 1)[1].split("\n</problem>")[0] for p in server.prompts] == \
        [problems[1][2], problems[3][2]]  # asked in rank order
    stage.close()

    mute = HTTPConfig("judge", server.url, api_key_env=None, max_retries=0)  # a ModelConfig, as well as a dict
    stage = ModelStage(ModelStageConfig(server.url, "emb", judge=mute, api_key_env=None, top_k=1,
                                        min_similarity=0.6, cache=str(tmp_path / "cache2")), PROBLEMS)
    server.reply = "Sure, same problem."  # no `Verdict:` line
    assert stage.check([shuffled(PROBLEMS[0][2])]) == [None]
    assert stage.cost.judge["parse_failed"] == 1 and "1 unparseable (not confirmed)" in stage.cost.line()
    stage.close()


def test_without_a_judge_the_nearest_problem_above_the_similarity_is_the_match(server, tmp_path):
    config = ModelStageConfig(server.url, "emb", api_key_env=None, min_similarity=0.9, cache=str(tmp_path / "cache"))
    stage = ModelStage(config, PROBLEMS)
    found = stage.check([shuffled(PROBLEMS[2][2]), PROBLEMS[1][2].replace("60", "80"), "Nothing alike at all."])
    stage.close()
    assert found[0].problem == 2 and not found[0].judged
    assert found[1] is not None and found[1].problem == 1  # no judge: a changed number still matches
    assert found[2] is None and server.calls["/v1/chat/completions"] == 0
    assert stage.cost.judge is None and stage.cost.line().endswith("; no judge")


def test_a_judge_that_names_no_model_is_refused():
    with pytest.raises(ConfigError, match="judge names no model"):
        ModelStageConfig("http://127.0.0.1:1/v1", "emb", judge={"api_url": "http://127.0.0.1:1/v1"})
    with pytest.raises(ConfigError, match="unknown key 'judge.api_urll'"):
        ModelStageConfig("http://127.0.0.1:1/v1", "emb", judge={"model_source": "j", "api_urll": "x"})


def test_cli_model_stage_prints_its_cost(server, tmp_path, data_dir):
    problem = json.loads((data_dir / "gsm8k" / "test.jsonl").open().readline())["question"]
    rows = [{"problem": shuffled(problem)}, {"problem": "How many legs do three spiders have?"}]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    args = [sys.executable, str(REPO / "scripts" / "curate.py"), "decontaminate", str(tmp_path / "in.jsonl"),
            "--against", "gsm8k", "--no-paraphrase", "--workers", "1", "--embeddings-url", server.url,
            "--embedding-model", "emb", "--judge-model", "judge", "--api-key-env", "",
            "--judge-set", "price={input:1.0,output:2.0}", "--model-cache", str(tmp_path / "cache")]
    first = subprocess.run([*args, "--out", str(tmp_path / "a")], capture_output=True, text=True, timeout=600, cwd=REPO)
    assert first.returncode == 0, first.stderr
    assert "model stage: 1321 texts embedded" in first.stdout  # 1,319 problems + 2 rows
    assert re.search(r"judge [1-9]\d* calls \(\d+ prompt \+ \d+ completion tokens\), 0 verdicts from the cache, "
                     r"\$0\.\d{4}", first.stdout)
    report = json.loads((tmp_path / "a" / "report.json").read_text())
    assert report["removed_by_benchmark_and_match"] == {"gsm8k": {"model": 1}}
    assert report["model_stage"]["cost"]["judge"]["cost"] > 0
    second = subprocess.run([*args, "--report-only"], capture_output=True, text=True, timeout=600, cwd=REPO)
    assert second.returncode == 0, second.stderr
    assert "model stage: 0 texts embedded (0 tokens, 0 requests), 1321 from the cache" in second.stdout
    assert "judge 0 calls" in second.stdout
    assert server.calls["/v1/chat/completions"] == report["model_stage"]["cost"]["judge"]["requests"]


def test_cli_judge_flags_need_a_judge_model(tmp_path):
    (tmp_path / "in.jsonl").write_text(json.dumps({"problem": "x"}) + "\n")
    run = subprocess.run([sys.executable, str(REPO / "scripts" / "curate.py"), "decontaminate",
                          str(tmp_path / "in.jsonl"), "--report-only", "--against", "gsm8k",
                          "--embeddings-url", "http://127.0.0.1:1/v1", "--embedding-model", "emb",
                          "--judge-backend", "vllm"], capture_output=True, text=True, timeout=600, cwd=REPO)
    assert run.returncode != 0 and "--judge-backend and --judge-set need --judge-model" in run.stderr
