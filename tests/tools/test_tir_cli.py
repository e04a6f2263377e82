"""Tool-integrated reasoning from the CLI, as users run it: a loopback model that answers only
through code scores 1.0 with `tools=python`, in exactly the model requests its turns need,
the same command again sends nothing, and without tools it scores 0."""

from __future__ import annotations

from skyeval import SkyEnvBuilder
from skyeval.config.compose import compose
from skyeval.run.app import execute
from tests.backends.fault_server import FaultServer
from tests.conftest import load_summary, read_jsonl, run_cli, run_folder
from tests.tools.code_model import CodeModel


def test_a_model_that_answers_through_code_needs_the_tool(tmp_path, data_dir):
    problems = list(SkyEnvBuilder.build("gsm8k", {"limit": 10}).iter_problems())
    answers = {p["question"]: p["expected"] for p in problems}
    failing = {problems[3]["question"], problems[7]["question"]}  # their first program raises NameError
    with FaultServer(responder=CodeModel(answers, failing)) as server:
        common = ["evaluate", "+env=gsm8k", "env.limit=10", "model_config=openai", "model_config.model_source=coder",
                  f"model_config.api_url={server.url}", "model_config.api_key_env=null"]
        run_cli(*common, "tools=python", cwd=tmp_path)
        assert len(server.log) == 22  # 8 problems x (code, answer) + 2 x (code, fixed code, answer)
        folder = run_folder(tmp_path / "outputs", "gsm8k_coder_t0.0")
        summary = load_summary(folder)
        assert summary["metrics"]["accuracy"] == 1.0
        tools = summary["tools"]
        assert (tools["name"], tools["samples"], tools["tool_calls"], tools["tool_errors"], tools["model_turns"]) == \
            ("python", 10, 12, 2, 22)
        assert tools["stopped_by"] == {"reply": 10} and tools["sandbox"]["protections"]["rlimits"]
        generations = {g["id"]: g for g in read_jsonl(folder / "generations")}
        for problem in problems:
            record = generations[problem["id"]]
            assert f"```output\n{problem['expected']}\n```" in record["generation"]
            assert record["generation"].endswith(f"\\boxed{{{problem['expected']}}}.")
            assert "```output\n0" not in record["generation"]  # the output the model made up was cut by the stop
            roles = [turn["role"] for turn in record["transcript"]]
            failed_once = problem["question"] in failing
            assert roles == ["assistant", "tool"] * (2 if failed_once else 1) + ["assistant"]
            assert (record["tool_calls"], record["tool_errors"]) == ((2, 1) if failed_once else (1, 0))
            assert len(record["turn_tokens"]) == roles.count("assistant")
        error = generations[problems[3]["id"]]["transcript"][1]
        assert error["status"] == "error" and "NameError: name 'answr' is not defined" in error["content"]
        scores = read_jsonl(folder / "scores")
        assert all("transcript" not in s and s["tool_calls"] >= 1 for s in scores)

        run_cli(*common, "tools=python", cwd=tmp_path)  # everything is saved: nothing is sent again
        assert len(server.log) == 22
        again = load_summary(folder)
        assert again["metrics"]["accuracy"] == 1.0 and again["counts"]["resumed"] == 10
        assert again["tools"]["tool_calls"] == 12  # the totals count the saved samples

        plain = execute(compose(*common[1:], "tools=none"), tmp_path / "plain")  # as the CLI runs it, in-process
        assert len(server.log) == 32
        assert plain["metrics"]["accuracy"] == 0.0 and "tools" not in plain
        assert all("stop" not in entry["params"] for entry in server.log[22:])  # no stop marker without tools
        assert compose(*common[1:], "tools=none").logging.experiment_name != folder.name  # another fingerprint
