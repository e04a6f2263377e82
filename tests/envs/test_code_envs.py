"""Code envs: loading the mirror and hub-shaped fixtures, knobs, test decoding, verdicts."""

import base64
import json
import os
import pickle
import zlib
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from skyeval import SkyEnvBuilder
from skyeval.config import CONF_DIR, register_resolvers
from skyeval.envs.code import (
    APPSEnv,
    LiveCodeBenchEnv,
    MBPPEnv,
    TACOEnv,
    decode_private_tests,
    split_check_call,
)
from skyeval.envs.registry import build_from_config

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "code"
CODE_ENVS = ["humaneval", "mbpp", "apps", "taco", "livecodebench", "codeforces", "code_contests", "leetcode"]
register_resolvers()


def fixture_env(name, **knobs):
    return SkyEnvBuilder.build(name, {"data_dir": str(FIXTURES), "local_files": f"{name}.jsonl", **knobs})


def fenced(code):
    return f"My solution:\n```python\n{code}\n```"


def encode_private(value) -> str:
    return base64.b64encode(zlib.compress(pickle.dumps(value))).decode()


@pytest.mark.parametrize("name", CODE_ENVS)
def test_config_has_hub_id_local_mapping_and_sandbox_knobs(name):
    cfg = SkyEnvBuilder.config(name)
    assert cfg["name"] == name and cfg["hf_id"] and cfg["split"]
    assert "local_files" in cfg and cfg["data_dir"] is None and cfg["limit"] is None
    assert cfg["timeout_s"] > 0 and cfg["memory_mb"] >= 256 and cfg["stop_at_first_failure"] is True
    assert (CONF_DIR / "env" / f"{name}.yaml").read_text().startswith("# ")


@pytest.mark.parametrize(("name", "count", "first_id", "kinds"), [
    ("humaneval", 164, "HumanEval/0", {"functional"}),
    ("mbpp", 500, "11", {"asserts"}),
    ("apps", 5, "0001", {"stdin", "call"}),
    ("codeforces", 408, "0", {"stdin"}),
    ("code_contests", 165, "0", {"stdin"}),
    ("leetcode", 200, "0", {"functional"}),
])
def test_local_mirror_rows_become_problems_with_json_tests(name, count, first_id, kinds, data_dir):
    problems = SkyEnvBuilder.build(name).load_problems()
    assert len(problems) == count and problems[0]["id"] == first_id
    assert {json.loads(p["tests_json"])["type"] for p in problems} == kinds
    assert all(p["question"] and "prompt" not in p for p in problems)


def test_humaneval_tests_are_check_entry_point_with_prompt_prelude(data_dir):
    env = SkyEnvBuilder.build("humaneval")
    problem = env.load_problems()[0]
    tests = json.loads(problem["tests_json"])
    assert tests["entry_point"] == "has_close_elements" and "def check(candidate)" in tests["test"]
    assert tests["prelude"].startswith("from typing import List")
    reference = env.reference_generation(problem)
    assert reference.startswith("```python\nfrom typing import List") and reference.endswith("return False\n```")
    prompt = env.apply_prompt_template_on_item(problem)["prompt"][-1]["content"]
    assert "def has_close_elements" in prompt and "```python code block" in prompt


def test_humaneval_accepts_a_bare_body_completion(data_dir):
    env = SkyEnvBuilder.build("humaneval", {"limit": 1})
    problem = env.load_problems()[0]
    body = "    return any(abs(a - b) < threshold for i, a in enumerate(numbers) for b in numbers[i + 1:])"
    assert env.score_item({**problem, "generation": fenced(body)})["passed"]


def test_mbpp_split_and_sanitized_knobs(data_dir):
    test = SkyEnvBuilder.build("mbpp").load_problems()
    assert [p["task_id"] for p in test] == list(range(11, 511))
    assert "Your code should pass these tests:\n\nassert remove_Occ" in test[0]["question"]
    assert [p["task_id"] for p in SkyEnvBuilder.build("mbpp", {"split": "prompt"}).load_problems()] == list(range(1, 11))
    sanitized = SkyEnvBuilder.build("mbpp", {"sanitized": True}).load_problems()
    assert len(sanitized) == 257 and all(11 <= p["task_id"] <= 510 for p in sanitized)
    with pytest.raises(ValueError, match="Did you mean 'test'"):
        MBPPEnv(split="tset")


def test_mbpp_setup_code_runs_after_the_solution_and_imports_before(data_dir):
    env = SkyEnvBuilder.build("mbpp")
    problem = next(p for p in env.load_problems() if p["id"] == "367")  # its setup builds the solution's Node trees
    assert all(a.startswith("root = Node(1)") for a in json.loads(problem["tests_json"])["asserts"])
    assert env.score_item({**problem, "generation": env.reference_generation(problem)})["passed"]
    sanitized = SkyEnvBuilder.build("mbpp", {"sanitized": True})
    problem = next(p for p in sanitized.load_problems() if json.loads(p["tests_json"])["setup"])
    assert json.loads(problem["tests_json"])["setup"].startswith("import")
    assert sanitized.score_item({**problem, "generation": sanitized.reference_generation(problem)})["passed"]


def test_apps_original_layout_call_based_and_difficulty(data_dir):
    env = SkyEnvBuilder.build("apps")
    problems = {p["id"]: p for p in env.load_problems()}
    assert sorted(problems) == ["0001", "0111", "2287", "2404", "4184"]
    call = json.loads(problems["2404"]["tests_json"])
    assert call == {"type": "call", "fn_name": "findKthPositive", "inputs": [[[2, 3, 4, 7, 11], 5]], "outputs": [9],
                    "accept_unwrapped": True}
    assert problems["2404"]["starter_code"].startswith("class Solution:") and "Starter code" in problems["2404"]["question"]
    assert json.loads(problems["2287"]["tests_json"])["type"] == "stdin" and len(json.loads(problems["2287"]["tests_json"])["inputs"]) == 3
    assert [p["id"] for p in SkyEnvBuilder.build("apps", {"difficulty": "introductory"}).load_problems()] == ["2404", "4184"]
    with pytest.raises(ValueError, match="competition"):
        APPSEnv(difficulty="expert")


def test_taco_fixture_difficulty_and_skill_knobs():
    problems = fixture_env("taco").load_problems()
    assert [p["difficulty"] for p in problems] == ["easy", "medium", "hard"]
    assert json.loads(problems[1]["tests_json"])["type"] == "call" and problems[1]["skills"] == ["Dynamic programming"]
    assert [p["id"] for p in fixture_env("taco", difficulty="hard").load_problems()] == ["2"]
    assert [p["id"] for p in fixture_env("taco", skill="Data structures").load_problems()] == ["2"]
    assert fixture_env("taco", difficulty="easy", skill="Sorting").load_problems() == []
    with pytest.raises(ValueError, match="Dynamic programming"):
        TACOEnv(skill="Dynamic")


def test_taco_references_pass_and_starter_completion_runs():
    env = fixture_env("taco")
    problems = env.load_problems()
    assert all(env.score_item({**p, "generation": env.reference_generation(p)})["passed"] for p in problems)
    body = "\tbest = cur = arr[0]\n\tfor x in arr[1:]:\n\t\tcur = max(x, cur + x)\n\t\tbest = max(best, cur)\n\treturn best"
    assert env.score_item({**problems[1], "generation": fenced(body)})["passed"]


def test_livecodebench_fixture_decodes_public_and_private_tests():
    problems = {p["id"]: p for p in fixture_env("livecodebench").load_problems()}
    stdin = json.loads(problems["abc365_b"]["tests_json"])
    assert stdin["type"] == "stdin" and stdin["inputs"] == ["4\n8 2 5 1\n", "8\n1 2 3 4 5 10 9 11\n", "2\n1 2\n", "3\n5 9 7\n"]
    call = json.loads(problems["3044"]["tests_json"])
    assert call == {"type": "call", "fn_name": "minOperations", "inputs": [[[3, 1, 5, 4, 2], 2], [[3, 1, 5, 4, 2], 5],
                                                                               [[3, 2, 5, 3, 1], 3]], "outputs": [4, 5, 4]}
    assert "```python\nclass Solution:" in problems["3044"]["instruction"]
    assert problems["abc999_f"]["contest_date"] == "2025-01-18" and len(json.loads(problems["abc999_f"]["tests_json"])["inputs"]) == 2


def test_livecodebench_difficulty_and_date_knobs():
    assert [p["id"] for p in fixture_env("livecodebench", difficulty="hard").load_problems()] == ["abc999_f"]
    window = fixture_env("livecodebench", start_date="2024-08-01", end_date="2025-02-01").load_problems()
    assert [p["id"] for p in window] == ["abc365_b", "abc999_f"]
    with pytest.raises(ValueError, match="Did you mean 'medium'"):
        LiveCodeBenchEnv(difficulty="meduim")


def test_livecodebench_verdicts_on_stdin_and_functional_problems():
    env = fixture_env("livecodebench")
    problems = {p["id"]: p for p in env.load_problems()}
    second = "n = int(input())\na = list(map(int, input().split()))\nprint(a.index(sorted(a)[-2]) + 1)"
    assert env.score_item({**problems["abc365_b"], "generation": fenced(second)})["tests_passed"] == 4
    largest = second.replace("[-2]", "[-1]")
    assert env.score_item({**problems["abc365_b"], "generation": fenced(largest)})["failure_kind"] == "wrong_answer"
    solution = ("class Solution:\n    def minOperations(self, nums: List[int], k: int) -> int:\n"
                "        seen = set()\n        for i, x in enumerate(reversed(nums)):\n"
                "            if x <= k:\n                seen.add(x)\n            if len(seen) == k:\n                return i + 1\n")
    result = env.score_item({**problems["3044"], "generation": fenced(solution)})
    assert result["passed"] and result["tests_total"] == 3


def test_private_tests_decode_plain_json_and_encoded_pickles():
    cases = [{"input": "1\n", "output": "2\n", "testtype": "stdin"}]
    assert decode_private_tests(json.dumps(cases)) == cases
    assert decode_private_tests(encode_private(json.dumps(cases))) == cases
    assert decode_private_tests(encode_private(cases)) == cases
    assert decode_private_tests("") == [] and decode_private_tests(None) == []


class _Payload:
    def __reduce__(self):
        return (os.system, ("touch /tmp/skyeval-pwned",))


@pytest.mark.parametrize("payload", [_Payload(), [{"input": _Payload()}], Path("/etc/passwd")])
def test_private_tests_refuse_pickled_objects(payload, tmp_path):
    for protocol in (0, 2, pickle.HIGHEST_PROTOCOL):
        encoded = base64.b64encode(zlib.compress(pickle.dumps(payload, protocol=protocol))).decode()
        with pytest.raises(pickle.UnpicklingError, match="may not reference"):
            decode_private_tests(encoded)
    assert not Path("/tmp/skyeval-pwned").exists()


def test_leetcode_check_call_becomes_the_entry_point(data_dir):
    env = SkyEnvBuilder.build("leetcode", {"limit": 1})
    problem = env.load_problems()[0]
    tests = json.loads(problem["tests_json"])
    assert tests["entry_point"] == "Solution().minOperations" and "check(Solution()" not in tests["test"]
    assert "from collections import *" in tests["prelude"]
    assert env.score_item({**problem, "generation": env.reference_generation(problem)})["passed"]
    wrong = env.reference_generation(problem).replace("return n - i", "return n - i + 1")
    assert env.score_item({**problem, "generation": wrong})["failure_kind"] == "wrong_answer"
    with pytest.raises(ValueError, match="one top-level check"):
        split_check_call("def check(candidate):\n    assert candidate(1) == 1\n")


def test_codeforces_and_code_contests_have_no_reference_but_score(data_dir):
    for name in ("codeforces", "code_contests"):
        env = SkyEnvBuilder.build(name, {"limit": 1})
        problem = env.load_problems()[0]
        assert env.reference_generation(problem) is None
    cf = SkyEnvBuilder.build("codeforces", {"limit": 1})
    minmax = "for _ in range(int(input())):\n    x, y = map(int, input().split())\n    print(min(x, y), max(x, y))"
    assert cf.score_item({**cf.load_problems()[0], "generation": fenced(minmax)})["passed"]


def test_hostile_generation_is_contained_and_fails(data_dir, tmp_path):
    env = SkyEnvBuilder.build("humaneval", {"limit": 1, "timeout_s": 2.0})
    problem = env.load_problems()[0]
    decoy = tmp_path / "decoy.txt"
    decoy.write_text("keep")
    hostile = f"import os, shutil\nshutil.rmtree({str(tmp_path)!r}, ignore_errors=True)\nwhile True:\n    pass"
    result = env.score_item({**problem, "generation": fenced(hostile)})
    assert result["score"] == 0.0 and result["timed_out"] and decoy.read_text() == "keep"


def test_knobs_from_hydra_compose_and_python():
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=["+env=livecodebench", "env.difficulty=hard", "env.timeout_s=3",
                                           "env.stop_at_first_failure=false", "env.memory_mb=512"])
    env = build_from_config(dict(cfg.env))
    assert (env.difficulty, env.timeout_s, env.stop_at_first_failure, env.memory_mb) == ("hard", 3, False, 512)
    assert SkyEnvBuilder.build("mbpp", {"sanitized": True}).local_files == "mbpp/sanitized-mbpp.json"


def test_score_on_a_ray_dataset_uses_threads_per_block(data_dir, ray_session):
    env = SkyEnvBuilder.build("leetcode", {"limit": 12, "score_threads": 3})
    ds = env.read_dataset()
    assert all(isinstance(r["tests_json"], str) for r in ds.take_all())
    items = ds.map(lambda row: {**row, "generation": env.reference_generation(row), "sample_idx": 0})
    rows = sorted(env.score(items).take_all(), key=lambda r: int(r["id"]))
    assert [r["id"] for r in rows] == [str(i) for i in range(12)]
    assert all(r["score"] == 1.0 and r["passed"] and r["score_error"] is None for r in rows)


def test_sandbox_setup_failure_marks_the_sample_not_a_wrong_answer(data_dir, monkeypatch):
    from skyeval.envs.base import RowScorer
    from skyeval.scorers import sandbox

    if not sandbox.active_protections()["netns"]:
        pytest.skip("needs network namespaces to make unshare() fail on purpose")
    env = SkyEnvBuilder.build("humaneval", {"limit": 1})
    problem = env.load_problems()[0]
    monkeypatch.setattr(sandbox, "_CLONE_NEWNET", 0x1)  # unshare() refuses this flag (EINVAL)
    row = RowScorer(env)({**problem, "generation": env.reference_generation(problem)})
    assert row["score"] is None and row["score_error"].startswith("SandboxSetupError: sandbox setup failed")


def test_unusable_sandbox_python_stops_the_cli_before_any_work(tmp_path, data_dir):
    from tests.conftest import run_cli

    proc = run_cli("evaluate", "+env=humaneval", "model_config=reference", cwd=tmp_path, check=False,
                   env={"SKYEVAL_SANDBOX_PYTHON": str(tmp_path / "missing" / "python")})
    assert proc.returncode == 2 and "SKYEVAL_SANDBOX_PYTHON" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "outputs").exists() or not any((tmp_path / "outputs").rglob("*.jsonl"))
