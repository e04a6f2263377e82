"""A `RunConfig` from Python, composed exactly as the CLI composes it."""

from __future__ import annotations

import shutil
from pathlib import Path

from skyeval.config.fingerprints import register_resolvers
from skyeval.config.overrides import from_skythought_flags, with_user_config
from skyeval.config.schema import RunConfig
from skyeval.errors import ConfigError
from skyeval.paths import CONF_DIR


def compose(*args: str, config_file: str | Path | None = None, stage: str = "evaluate") -> RunConfig:
    """The run config of `skyeval evaluate ARGS` (overrides such as `+env=aime24`,
    `env.limit=5`, SkyThought flags), over `config_file` when given:

        config = compose("+env=aime24", "model_config=openai", "model_config.model_source=gpt-4o-mini")
        summary = skyeval.run.app.execute(config)   # into outputs/<experiment name>/
    """
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.errors import ConfigCompositionException

    args = list(args) + (["--config", str(config_file)] if config_file is not None else [])
    temp_dirs: list[Path] = []
    try:
        overrides = with_user_config(from_skythought_flags(stage, args), temp_dirs)
        register_resolvers()
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            try:
                cfg = hydra_compose("config", overrides=[f"stage={stage}", *overrides])
            except ConfigCompositionException as err:
                raise ConfigError(f"config error: {str(err.__cause__ or err).splitlines()[0]}") from None
        return RunConfig.of(cfg)
    finally:
        for path in temp_dirs:
            shutil.rmtree(path, ignore_errors=True)
