"""The Hydra config tree, composed the way the CLI composes it."""

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from skyeval.config import CONF_DIR, fingerprint, register_resolvers

register_resolvers()


def composed(*overrides, hydra=False):
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose("config", overrides=list(overrides), return_hydra_config=hydra)


def test_experiment_name_from_env_model_and_temperature(monkeypatch):
    monkeypatch.delenv("SKYHOME", raising=False)
    cfg = composed("+env=aime24", "model_config.model_source=Qwen/QwQ-32B", "sampling_params=default")
    # the digest is filled in by the run, once it has read its data (`Fingerprint.folder`)
    assert cfg.logging.experiment_name == "aime24_Qwen_QwQ-32B_t0.6_{fingerprint}"
    assert cfg.logging.results_dir == "./outputs"


def test_results_dir_under_skyhome(monkeypatch, tmp_path):
    monkeypatch.setenv("SKYHOME", str(tmp_path))
    assert composed("+env=gsm8k").logging.results_dir == f"{tmp_path}/outputs"


def test_every_env_config_composes_with_a_target():
    for path in sorted((CONF_DIR / "env").glob("*.yaml")):
        cfg = composed(f"+env={path.stem}")
        assert cfg.env.name == path.stem and "_target_" in cfg.env


def test_slurm_launcher_extends_submitit_with_knobs():
    cfg = composed("+env=aime24", "hydra/launcher=slurm", "hydra.launcher.partition=gpu", hydra=True)
    launcher = cfg.hydra.launcher
    assert launcher._target_.endswith("SlurmLauncher")
    assert launcher.partition == "gpu" and launcher.gpus_per_node == 0 and list(launcher.setup) == []
    assert launcher.timeout_min == 240 and launcher.max_num_timeout == 3


def test_fingerprint_ignores_limit_n_and_transport_but_not_model_or_template():
    base = OmegaConf.to_container(composed("+env=aime24"), resolve=True)
    grown = OmegaConf.to_container(composed("+env=aime24", "env.limit=3", "sampling_params.n=4"), resolve=True)
    assert fingerprint(base).values == fingerprint(grown).values
    hotter = OmegaConf.to_container(composed("+env=aime24", "sampling_params.temperature=0.7"), resolve=True)
    other_prompt = OmegaConf.to_container(composed("+env=aime24", "template.system_prompt_name=qwq"), resolve=True)
    assert fingerprint(base).values != fingerprint(hotter).values and fingerprint(base).values != fingerprint(other_prompt).values


def _cheap_model_config(cfg) -> None:
    from skyeval.backends.reference import ReferenceBackend, ReferenceConfig
    from skyeval.config.schema import RunConfig

    model = RunConfig.of(cfg).model_config
    assert type(model) is ReferenceConfig  # replays gold answers: no model, no network
    backend = model.build()
    try:
        assert isinstance(backend, ReferenceBackend)
    finally:
        backend.close()


def _cheap_sampling(cfg) -> None:
    assert cfg.sampling_params.n == 1 and cfg.sampling_params.temperature == 0  # one greedy sample


def _cheap_template(cfg) -> None:
    from skyeval.templates import Template

    assert OmegaConf.to_container(cfg.template) == OmegaConf.to_container(OmegaConf.structured(Template()))  # the env's own


def _cheap_logging(cfg) -> None:
    assert not cfg.logging.wandb and not cfg.logging.mlflow and cfg.logging.mlflow_tracking_uri is None  # nothing remote
    assert cfg.logging.results_dir == "./outputs" and cfg.logging.experiment_name.startswith("aime24_reference_t0.0_")


# Each config group's default option in conf/config.yaml's defaults list, and why it is cheap.
CHEAP_DEFAULTS = {"model_config": ("reference", _cheap_model_config), "template": ("default", _cheap_template),
                  "sampling_params": ("greedy", _cheap_sampling), "logging": ("default", _cheap_logging)}


@pytest.mark.parametrize("group", sorted(CHEAP_DEFAULTS))
def test_groups_have_a_cheap_default(group, monkeypatch):
    monkeypatch.delenv("SKYHOME", raising=False)
    option, is_cheap = CHEAP_DEFAULTS[group]
    choices = composed("+env=aime24", hydra=True).hydra.runtime.choices
    assert choices.get(group) == option  # chosen by the defaults list, not only filled in by the schema
    is_cheap(composed("+env=aime24"))
