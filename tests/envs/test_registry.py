import pytest

from skyeval import Env, SkyEnvBuilder
from skyeval.envs.math import MathEnv
from skyeval.envs.registry import UnknownEnvError


def test_names_are_case_insensitive():
    assert type(SkyEnvBuilder.build("AIME24")) is type(SkyEnvBuilder.build("aime24")) is MathEnv
    assert SkyEnvBuilder.build("AIME24").name == "aime24"


def test_unknown_env_lists_names_and_closest_match():
    with pytest.raises(UnknownEnvError) as err:
        SkyEnvBuilder.build("math50")
    message = str(err.value)
    assert "Did you mean 'math500'" in message and "gsm8k" in message and "aime24" in message


def test_knobs_override_defaults_and_unknown_knob_is_clear():
    env = SkyEnvBuilder.build("math500", {"limit": 3})
    assert env.limit == 3
    with pytest.raises(TypeError, match="no knob 'nope'"):
        SkyEnvBuilder.build("math500", {"nope": 1})


def test_register_a_user_env():
    class Tiny(Env):
        def load_rows(self):
            return [{"q": "1+1", "a": "2"}]

        def to_problem(self, row, index):
            return {"id": str(index), "question": row["q"], "expected": row["a"]}

    SkyEnvBuilder.register("TINY_ENV", Tiny)
    try:
        env = SkyEnvBuilder.build("tiny_env", {"limit": 1})
        assert isinstance(env, Tiny) and env.name == "tiny_env" and env.load_problems()[0]["expected"] == "2"
        assert "tiny_env" in SkyEnvBuilder.names()
    finally:
        SkyEnvBuilder._registered.pop("tiny_env")
