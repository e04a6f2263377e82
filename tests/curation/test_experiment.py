"""conf/experiment/numina_rejection_sampling.yaml: what it composes to, and a CLI run on
the NuminaMath fixture."""

from __future__ import annotations

import shutil

import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException

from skyeval.config import CONF_DIR, register_resolvers
from tests.conftest import REPO, load_summary, read_jsonl, run_cli, run_folder

EXPERIMENT = "+experiment=numina_rejection_sampling"


def composed(*overrides: str):
    register_resolvers()
    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        return compose("config", overrides=list(overrides))


def test_experiment_is_a_delta_over_numina_and_default_sampling():
    cfg = composed(EXPERIMENT)
    assert cfg.env.name == "numina" and cfg.env._target_ == "skyeval.curation.rejection.NuminaRejectionEnv"
    assert cfg.env.source == "all" and cfg.env.min_readability == 0.5
    assert (cfg.sampling_params.n, cfg.sampling_params.temperature) == (8, 0.7)
    assert cfg.sampling_params.max_tokens == 32768  # from sampling_params/default.yaml
    assert cfg.logging.experiment_name == "rejection_sampling_numina_reference_{fingerprint}"  # the digest: filled in at run time


def test_swapping_the_env_uses_env_not_plus_env():
    cfg = composed(EXPERIMENT, "env=gsm8k", "env._target_=skyeval.curation.rejection.GSM8KRejectionEnv")
    assert cfg.env.name == "gsm8k" and cfg.sampling_params.n == 8
    with pytest.raises(ConfigCompositionException, match="Multiple values for env"):
        composed(EXPERIMENT, "+env=gsm8k")


def test_numina_rejection_sampling_from_the_cli(tmp_path, data_dir):
    data = tmp_path / "data" / "numina"
    data.mkdir(parents=True)
    shutil.copy(REPO / "tests" / "fixtures" / "numina.jsonl", data / "train.jsonl")
    run_cli("evaluate", EXPERIMENT, f"data_dir={tmp_path / 'data'}", "sampling_params.n=2", cwd=tmp_path)
    folder = run_folder(tmp_path / "outputs", "rejection_sampling_numina_reference")
    summary = load_summary(folder)
    assert summary["env"] == "numina" and summary["counts"]["samples"] == 14  # 7 boxed-answer rows x 2
    assert summary["metrics"]["accuracy"] == 1.0 and summary["config"]["sampling_params"]["temperature"] == 0.7
    scores = read_jsonl(folder / "scores")
    assert {s["source"] for s in scores} >= {"amc_aime", "math", "olympiads"}
    assert all(s["keep"] and s["correctness"] == 1 and s["readability"] >= 0.5 for s in scores)


@pytest.mark.parametrize("env, line", [
    ("+env=gsm8k", "+env=gsm8k: +experiment=numina_rejection_sampling already selects an env (numina); to use gsm8k "
                   "write env=gsm8k env._target_=skyeval.curation.rejection.GSM8KRejectionEnv (no +)"),
    ("env=math500", "env=math500: +experiment=numina_rejection_sampling scores with "
                    "skyeval.curation.rejection.NuminaRejectionEnv, made for numina; write env=math500 "
                    "env._target_=skyeval.curation.rejection.MathRejectionEnv"),
    ("env=humaneval", "define class YourEnv(RejectionSampling, HumanEvalEnv))"),
])
def test_an_env_after_an_experiment_is_one_line_saying_what_to_write(tmp_path, env, line):
    """Hydra's "Multiple values for env. To override a value use 'override env: gsm8k'" for
    +env, and a NuminaRejectionEnv reading another benchmark's file ("no problems") for env=."""
    proc = run_cli("generate", EXPERIMENT, env, "env.limit=2", cwd=tmp_path, check=False)
    (said,) = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and said.startswith(f"skyeval: error: {env}: ") and said.endswith(line)
    assert not (tmp_path / "outputs").exists()
