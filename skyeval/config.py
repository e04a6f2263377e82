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
# Keys that hold secrets: whole words or suffixes (`api_key`, `hf_token`, `db_password`), never
# words that merely contain one (`max_tokens`, `tokenizer`, `tokens_per_minute`).
_SECRET_KEY = re.compile(
    r"^(?:.*[_.-])?(?:api_?key|access_?key|secret_?key|private_?key|secret|client_secret|password|passwd"
    r"|authorization|auth|credentials?|bearer|token|[a-z0-9]+_token)$"
)
# ... except a tokenizer's special tokens, which are configuration, not credentials.
_NOT_SECRET = re.compile(r"^(?:.*_)?(?:bos|eos|pad|unk|sep|cls|mask|start|end|additional_special|special)_token$")


def safe_name(value: Any) -> str:
    """A string usable as a folder name: `Qwen/Qwen2.5-7B` -> `Qwen_Qwen2.5-7B`."""
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", str(value)).strip("_") or "unnamed"


# Model-config keys that change how requests are sent, not what is generated.
OPERATIONAL_KEYS = {"api_url", "api_key_env", "timeout_s", "max_retries", "requests_per_minute",
                    "tokens_per_minute", "ray_address", "use_cpu", "segment_samples", "backoff_base_s",
                    "backoff_max_s", "price"}


def fingerprint(resolved: dict[str, Any]) -> dict[str, Any]:
    """What decides whether saved generations may be reused: the real values of the env,
    template, model and sampling sections, secrets left out. `limit` and `n` are not in it:
    growing a run reuses its samples, since each sample has its own index and seed."""
    env = {k: v for k, v in (resolved.get("env") or {}).items() if k not in ("limit", "data_dir")}
    model = {k: v for k, v in (resolved.get("model_config") or {}).items() if k not in OPERATIONAL_KEYS}
    sampling = {k: v for k, v in (resolved.get("sampling_params") or {}).items() if k != "n"}
    return without_secrets({"env": env, "template": resolved.get("template"), "model": model, "sampling": sampling})


def fingerprint_hash(*, _root_: Any) -> str:
    """Resolver: 8 hex digits of the config's fingerprint, so that every sweep point gets
    its own run folder (`${fingerprint_hash:}` in conf/logging/default.yaml)."""
    import hashlib
    import json

    from omegaconf import OmegaConf

    sections = {k: OmegaConf.to_container(_root_[k], resolve=True) for k in
                ("env", "template", "model_config", "sampling_params") if k in _root_}
    text = json.dumps(fingerprint(sections), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def register_resolvers() -> None:
    """Resolvers used by conf/ (idempotent; call before composing configs)."""
    from omegaconf import OmegaConf

    if not OmegaConf.has_resolver("safe_name"):
        OmegaConf.register_new_resolver("safe_name", safe_name)
    if not OmegaConf.has_resolver("fingerprint_hash"):
        OmegaConf.register_new_resolver("fingerprint_hash", fingerprint_hash)


def is_secret_key(key: Any) -> bool:
    """`api_key`, `hf_token`, `OPENAI_API_KEY`... but not `max_tokens`, `tokenizer`, `pad_token`
    or `api_key_env` (which names a variable)."""
    name = str(key).lower().replace("-", "_")
    return bool(_SECRET_KEY.match(name)) and not _NOT_SECRET.match(name) and not name.endswith("_env")


def secret_values() -> list[str]:
    """Values of environment variables with secret names (to scrub from text)."""
    return [v for k, v in os.environ.items() if is_secret_key(k) and len(v) >= 8]


def redact(obj: Any, secrets: list[str] | None = None) -> Any:
    """A copy of a JSON-like object with secret-named keys and secret values blanked."""
    secrets = secret_values() if secrets is None else secrets
    if isinstance(obj, dict):
        return {k: REDACTED if is_secret_key(k) and v else redact(v, secrets) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [redact(v, secrets) for v in obj]
    if isinstance(obj, str):
        return redact_text(obj, secrets)
    return obj


def without_secrets(obj: Any) -> Any:
    """A copy of a JSON-like object with secret-named keys left out (for fingerprints:
    real values everywhere else, and no secret hashed in)."""
    if isinstance(obj, dict):
        return {k: without_secrets(v) for k, v in obj.items() if not is_secret_key(k)}
    if isinstance(obj, (list, tuple)):
        return [without_secrets(v) for v in obj]
    return obj


def redact_text(text: str, secrets: list[str] | None = None) -> str:
    for secret in secret_values() if secrets is None else secrets:
        text = text.replace(secret, REDACTED)
    return _ASSIGNMENT.sub(lambda m: m[1] + REDACTED if is_secret_key(m[2]) else m[0], text)


_ASSIGNMENT = re.compile(r"((?<![\w.-])(?:[\w-]+\.)*([\w-]+)=)(\S+)")
