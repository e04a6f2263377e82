"""Golds are checked at the door (issue 33 item 2): a malformed gold (None, empty, the wrong
type, an unparseable code test spec) is refused with an error naming the env, the field
and what it must be, by every entry (a problem read from data, score_item, score_batch,
the TRL and verl adapters, the reward server), never scored as a silent 0."""

from __future__ import annotations

import json

import pytest

from skyeval.envs.registry import SkyEnvBuilder
from skyeval.errors import GoldError
from skyeval.reward import trl, verl
from tests.reward.test_server import post, reward_server

PROGRAM = "```python\ndef has_close_elements(numbers, threshold):\n    return False\n```"
BAD_CODE_GOLDS = ["{}", 5, None, "", "not json", json.dumps({"type": "stdin", "inputs": [], "outputs": []}),
                  json.dumps({"type": "functional", "test": "def check(c): pass"})]


@pytest.mark.parametrize("gold", BAD_CODE_GOLDS, ids=[repr(g)[:30] for g in BAD_CODE_GOLDS])
def test_verl_refuses_a_malformed_humaneval_gold(data_dir, gold):
    with pytest.raises(GoldError, match=r"env 'humaneval': gold 'tests_json' of item 0 must be a JSON test spec"):
        verl.compute_score("humaneval", PROGRAM, gold)


@pytest.mark.parametrize("gold", [None, "", "   ", {}, [], True])
def test_trl_and_verl_refuse_a_malformed_math_gold(data_dir, gold):
    reward = trl("math500")
    try:
        with pytest.raises(GoldError, match="env 'math500': gold 'expected' of item 1 must be a non-empty answer"):
            reward(completions=["\\boxed{4}", "\\boxed{4}"], answer=["4", gold])
    finally:
        reward.reward.close()
    with pytest.raises(GoldError, match="gold 'expected'"):
        verl.compute_score("math500", "\\boxed{4}", gold)


def test_score_item_and_score_batch_refuse_a_malformed_gold(data_dir):
    env = SkyEnvBuilder.build("gpqa_diamond", {})
    problem = env.load_problems()[0]
    good = {**problem, "generation": f"\\boxed{{{problem['expected']}}}"}
    assert env.score_item(good)["score"] == 1.0
    for gold in ("Z", None, "", 1):
        with pytest.raises(GoldError, match=r"env 'gpqa_diamond': gold 'expected' must be one option letter \(A-D\)"):
            env.score_item({**good, "expected": gold})
    with pytest.raises(GoldError, match="of item 1"):
        env.score_batch([good, {**good, "expected": "E"}])
    env.close()


def test_a_data_row_with_a_malformed_gold_fails_when_read(tmp_path, data_dir):
    (tmp_path / "math500").mkdir()
    rows = [json.loads(line) for line in (data_dir / "math500" / "test.jsonl").read_text().splitlines()[:3]]
    rows[1]["answer"] = "  "
    (tmp_path / "math500" / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    env = SkyEnvBuilder.build("math500", {"data_dir": str(tmp_path)})
    errors = []
    problems = list(env.iter_problems(on_error=lambda index, err: errors.append((index, err))))
    assert len(problems) == 2 and [i for i, _ in errors] == [1]
    assert isinstance(errors[0][1], GoldError) and "gold 'expected' must be a non-empty answer" in str(errors[0][1])


def test_the_server_answers_422_for_a_malformed_code_label(data_dir):
    with reward_server("+env=humaneval", "reward.workers=1") as (proc, port):
        for label in ("{}", 5):
            status, answer = post(port, {"query": [PROGRAM], "labels": [label]})
            assert status == 422, answer
            assert "gold 'tests_json'" in answer["error"] and "\n" not in answer["error"] and "rewards" not in answer
