"""A broken scoring pool is never a reward: workers that cannot start make `score_batch`
and the TRL adapter raise InfrastructureError, and the reward server answer 503 with one
line (a real server on 127.0.0.1)."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time

import pytest

from skyeval.envs.math import MathEnv
from skyeval.envs.registry import SkyEnvBuilder
from skyeval.errors import InfrastructureError
from skyeval.reward.scoring import Reward
from skyeval.reward.server import build_app
from skyeval.reward.trl import TRLReward


class UnloadableMath(MathEnv):
    """MATH-500 whose scoring workers cannot start: unpickling it in a worker fails."""

    def __setstate__(self, state):
        raise RuntimeError("the scorer's env cannot be loaded in a worker")


@pytest.fixture
def broken_env():
    env = SkyEnvBuilder.build("math500")
    env.__class__ = UnloadableMath
    yield env
    env.close()


def test_score_batch_and_the_trl_reward_raise_instead_of_scoring_zero(broken_env):
    items = [{"generation": "\\boxed{2}", "expected": "2"}, {"generation": "\\boxed{3}", "expected": "2"}]
    with pytest.raises(InfrastructureError, match="cannot be loaded in a worker"):
        broken_env.score_batch(items, workers=2)
    trl = TRLReward(Reward(broken_env, {"workers": 2}), "answer", "math")
    with pytest.raises(InfrastructureError):
        trl(["p", "p"], ["\\boxed{2}", "\\boxed{3}"], answer=["2", "2"])


def test_the_server_answers_503_with_one_line(broken_env):
    import uvicorn

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(build_app(Reward(broken_env, {"workers": 2})), host="127.0.0.1",
                                           port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 300
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        body = {"query": ["q \\boxed{2}", "q \\boxed{3}"], "prompts": ["q"] * 2, "labels": ["2", "2"]}
        conn.request("POST", "/get_reward", json.dumps(body), {"Content-Type": "application/json"})
        response = conn.getresponse()
        answer = json.loads(response.read())
        assert response.status == 503
        assert answer == {"error": answer["error"]} and "\n" not in answer["error"]
        assert answer["error"].startswith("scoring unavailable:") and "cannot be loaded" in answer["error"]
    finally:
        server.should_exit = True
        thread.join(60)
