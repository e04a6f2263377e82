"""Where the Hydra configs live, the resolvers they use, and secret redaction."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

_PACKAGE = Path(__file__).resolve().parent
# A wheel carries the configs as skyeval/conf; a clone or editable install reads conf/ at the root.
CONF_DIR = _PACKAGE / "conf" if (_PACKAGE / "conf").is_dir() else _PACKAGE.parent / "conf"
REDACTED = "***REDACTED***"
_SECRET_KEY = re.compile(r"(api_?key|token|secret|password|authorization)", re.IGNORECASE)
_SECRET_ENV = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD)", re.IGNORECASE)


def safe_name(value: Any) -> str:
    """A string usable as a folder name: `Qwen/Qwen2.5-7B` -> `Qwen_Qwen2.5-7B`."""
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", str(value)).strip("_") or "unnamed"


def register_resolvers() -> None:
    """Resolvers used by conf/ (idempotent; call before composing configs)."""
    from omegaconf import OmegaConf

    if not OmegaConf.has_resolver("safe_name"):
        OmegaConf.register_new_resolver("safe_name", safe_name)


def secret_values() -> list[str]:
    """Values of environment variables that look like secrets (to scrub from text)."""
    return [v for k, v in os.environ.items() if _SECRET_ENV.search(k) and len(v) >= 8]


def redact(obj: Any, secrets: list[str] | None = None) -> Any:
    """A copy of a JSON-like object with secret-named keys and secret values blanked."""
    secrets = secret_values() if secrets is None else secrets
    if isinstance(obj, dict):
        return {k: REDACTED if _is_secret_key(k) and v else redact(v, secrets) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [redact(v, secrets) for v in obj]
    if isinstance(obj, str):
        return redact_text(obj, secrets)
    return obj


def _is_secret_key(key: Any) -> bool:
    """`api_key`, `hf_token`... but not `api_key_env`, which names a variable."""
    return bool(_SECRET_KEY.search(str(key))) and not str(key).endswith("_env")


def redact_text(text: str, secrets: list[str] | None = None) -> str:
    for secret in secret_values() if secrets is None else secrets:
        text = text.replace(secret, REDACTED)
    return re.sub(r"(\b[\w.]*(?:api_?key|token|secret|password)[\w.]*=)\S+", r"\1" + REDACTED, text, flags=re.IGNORECASE)
