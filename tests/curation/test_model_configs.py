"""scripts/curate.py composes `--model NAME --set k=v` through Hydra like the CLI, so every
conf/model_config group works there."""

from __future__ import annotations

import importlib.util

import pytest

from skyeval.config import CONF_DIR
from skyeval.curation import compose_model_config
from skyeval.errors import ConfigError
from tests.conftest import REPO

GROUPS = sorted(p.stem for p in (CONF_DIR / "model_config").glob("*.yaml"))
EXPECTED = {"reference": "ReferenceConfig", "openai": "HTTPConfig", "openai_batch": "OpenAIBatchConfig",
            "vllm": "VLLMConfig", "ray": "RayConfig"}


def _curate():
    spec = importlib.util.spec_from_file_location("curate", REPO / "scripts" / "curate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("group", GROUPS)
def test_every_model_config_group_composes_in_curate(group):
    curate = _curate()
    sets = [] if group == "reference" else ["model_source=some/model"]
    args = curate._parser().parse_args(["rewrite", "run", "--model", group, *(f"--set={s}" for s in sets)])
    config = curate._model_config(args)
    assert type(config).__name__ == EXPECTED.get(group, type(config).__name__)
    if group == "ray":
        assert config.model_source == "some/model" and config.tensor_parallel_size == 1


def test_nested_fields_and_missing_values():
    config = compose_model_config("vllm", ["model_source=m", "engine_kwargs.max_model_len=64"])
    assert config.engine_kwargs == {"max_model_len": 64}
    with pytest.raises(ConfigError, match="needs model_source"):
        compose_model_config("vllm")
    with pytest.raises(ConfigError, match="no model config 'vlm'"):
        compose_model_config("vlm")
