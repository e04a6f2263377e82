"""Settings checked before a run claims its folder: a bad one is one line and exit 2, with
nothing left on disk (the data's readability, the model's source; the API key and the
endpoint are checked when the backend is built, which also happens before the folder)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from skyeval.errors import ConfigError


def check_model_source(source: str, field: str = "model_config.model_source") -> None:
    """A local path must exist; a hub id must be in the Hugging Face cache or the hub must
    be reachable (the message names offline mode when it is on)."""
    path = Path(source).expanduser()
    if path.exists():
        return
    if _looks_local(source):
        raise ConfigError(f"{field}={source}: no such file or folder (a local model path must exist)")
    if _cached(source):
        return
    from skyeval.envs.data import hub_unreachable

    why = hub_unreachable()
    if why is None:
        _check_on_hub(source, field)
        return
    offline = " (offline mode: unset HF_HUB_OFFLINE to download it)" if why == "HF_HUB_OFFLINE is set" else ""
    raise ConfigError(f"{field}={source}: not a local path and not in the Hugging Face cache, and the hub cannot be "
                      f"reached: {why}{offline}. Download it where the hub is reachable, or point {field} at "
                      "a local model folder")


def check_model(model_config: Any) -> None:
    """The model sources a vLLM engine would load (`model_source`, a `tokenizer` in
    engine_kwargs); HTTP models are named by the server, not loaded here."""
    from skyeval.backends.base import EngineConfig

    if isinstance(model_config, EngineConfig):
        check_model_source(model_config.model_source)
        tokenizer = model_config.engine_kwargs.get("tokenizer")
        if isinstance(tokenizer, str):
            check_model_source(tokenizer, "model_config.engine_kwargs.tokenizer")


def _looks_local(source: str) -> bool:
    """A path, not a hub id (`org/name` or `name`)."""
    return source.startswith(("/", ".", "~")) or source.count("/") > 1 or os.sep != "/" and os.sep in source


def _cached(repo_id: str) -> bool:
    try:
        from huggingface_hub.constants import HF_HUB_CACHE
    except ImportError:
        return False
    snapshots = Path(HF_HUB_CACHE) / f"models--{repo_id.replace('/', '--')}" / "snapshots"
    return snapshots.is_dir() and any(snapshots.iterdir())


def _check_on_hub(repo_id: str, field: str) -> None:
    """A reachable hub that says the repository does not exist (other answers: left to the engine)."""
    try:
        from huggingface_hub import model_info
        from huggingface_hub.utils import RepositoryNotFoundError
    except ImportError:
        return
    try:
        model_info(repo_id, timeout=10)
    except RepositoryNotFoundError:
        raise ConfigError(f"{field}={repo_id}: no such model on the Hugging Face hub (or it is gated: log in "
                          "with `huggingface-cli login`)") from None
    except Exception:  # noqa: BLE001 - a slow or failing hub: the engine's own error will say
        return
