"""The Env Python API on real data with the reference backend."""

import pytest

from skyeval import SamplingParams, ScalingConfig, SkyEnvBuilder
from skyeval.backends.reference import ReferenceConfig
from skyeval.errors import DataNotFoundError
from skyeval.results import iter_records


@pytest.fixture(scope="module")
def env(data_dir, ray_session):
    env = SkyEnvBuilder.build("gsm8k", {"limit": 12})
    return env.setup(ReferenceConfig(), ScalingConfig(), sampling_params=SamplingParams(n=2))


def test_read_dataset_is_a_ray_dataset_users_can_query(env):
    ds = env.read_dataset()
    assert ds.count() == 12
    assert ds.limit(5).count() == 5
    assert ds.filter(lambda r: int(r["expected"]) > 10).count() < 12
    first = ds.take(1)[0]
    assert set(first) >= {"id", "question", "expected", "solution"}
    assert "<<" not in first["solution"]  # calculator notes removed


def test_apply_prompt_template_on_item(env):
    item = env.apply_prompt_template_on_item({"id": "0", "question": "What is 2+3?", "expected": "5"})
    assert item["prompt"][-1]["role"] == "user"
    assert item["prompt"][-1]["content"].startswith("What is 2+3?") and "\\boxed{}" in item["prompt"][-1]["content"]


def test_generate_score_groupby_and_save(env, tmp_path):
    generated = env.generate(env.read_dataset())
    assert generated.count() == 24  # 12 problems x n=2
    scored = env.score(generated)
    assert scored.mean(on="score") >= 0.99
    per_problem = scored.groupby("id").map_groups(lambda g: {"id": g["id"][:1], "best": [max(g["score"])]})
    assert per_problem.count() == 12
    path = env.save(scored, tmp_path / "gsm8k_run")
    rows = list(iter_records(path, "scores"))
    assert len(rows) == 24 and all(r["score"] == 1.0 for r in rows)
    assert len(list(iter_records(path, "generations"))) == 24 and list(iter_records(path, "failures")) == []


def test_score_item_is_a_reward_function(env):
    assert env.score_item({"generation": "... so \\boxed{18}", "expected": "18"})["score"] == 1.0
    assert env.score_item({"generation": "... so \\boxed{17}", "expected": "18"})["score"] == 0.0
    assert env.score({"generation": "no answer here", "expected": "18"})["score"] == 0.0


def test_missing_local_file_is_a_clear_error(tmp_path):
    env = SkyEnvBuilder.build("math500", {"data_dir": str(tmp_path)})
    with pytest.raises(DataNotFoundError, match="math500/test.jsonl"):
        env.load_problems()
    with pytest.raises(DataNotFoundError, match="math500/test.jsonl"):
        env.read_dataset()  # checked when the Dataset is built, not when it is consumed


def test_close_and_with_env_stop_the_backend_thread(data_dir):
    """`with env:` (and env.close()) stops what the backend started: the HTTP client's loop thread."""
    import threading

    from skyeval.backends.openai import HTTPConfig
    from tests.backends.fault_server import FaultServer

    with FaultServer() as server:
        with SkyEnvBuilder.build("aime24", {"limit": 1}) as env:
            env.setup(HTTPConfig(model_source="m", api_url=server.url, api_key_env=None))
            problem = env.apply_prompt_template_on_item(env.load_problems()[0])
            assert [r.ok for r in env.stream_generations([problem])] == [True]
            assert any(t.name == "skyeval-openai" for t in threading.enumerate())
        assert env.backend is None
        assert not any(t.name == "skyeval-openai" for t in threading.enumerate())
        env.close()  # twice is fine


def test_setup_again_closes_the_backend_it_replaces(data_dir):
    import threading

    from skyeval.backends.openai import HTTPConfig
    from tests.backends.fault_server import FaultServer

    with FaultServer() as server:
        env = SkyEnvBuilder.build("aime24", {"limit": 1})
        config = HTTPConfig(model_source="m", api_url=server.url, api_key_env=None)
        env.setup(config)
        problem = env.apply_prompt_template_on_item(env.load_problems()[0])
        list(env.stream_generations([problem]))
        env.setup(config)
        assert sum(t.name == "skyeval-openai" for t in threading.enumerate()) == 0
        env.close()
