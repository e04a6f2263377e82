"""Config fingerprints: whether a run folder's work may be reused, and its name's hash.

The fingerprint is kept in run.json, its 8 hex digits end the folder's name; the
resolvers conf/ uses are here too."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from skyeval.config.schema import MODEL_CONFIGS, model_config_class
from skyeval.config.secrets import without_secrets

SECTIONS = {"env": "env", "template": "template", "model": "model_config", "sampling": "sampling_params"}
# Growing a run reuses its samples (each sample has its own index and seed): these don't count.
NOT_FINGERPRINTED = {"env": ("limit", "data_dir"), "sampling": ("n",)}
# A date window selects other problems: part of the fingerprint when set; left out when
# open, so undated runs keep the fingerprints (and folder names) they had before windows.
WINDOW = ("start_date", "end_date")
# Budget forcing and tools, likewise: part of it when on, left out when off.
FORCING = ("min_thinking_tokens", "max_waits")
_ABSENT = object()


def fingerprint(config: Any) -> dict[str, Any]:
    """The real values of the env, template, model and sampling sections (a RunConfig, or
    its sections as plain data), without secrets, operational model fields (`api_url`,
    `timeout_s` ...: `skyeval.backends.base.operational`), `env.limit`, `env.data_dir` or
    `sampling_params.n`; the env's date window (`start_date`, `end_date`) when it is set,
    budget forcing (`min_thinking_tokens`, `max_waits`) when it is on, and the `tools`
    section (but `workers`) unless it is `tools=none`."""
    sections = config.to_dict() if hasattr(config, "to_dict") else config
    skip = {"model": operational_keys(sections.get("model_config")), **NOT_FINGERPRINTED}
    out = {}
    for name, key in SECTIONS.items():
        section = sections.get(key)
        out[name] = {k: v for k, v in section.items() if k not in skip.get(name, ())
                     and not (name == "env" and k in WINDOW and v is None)} \
            if isinstance(section, dict) else section
    if isinstance(out.get("sampling"), dict) and out["sampling"].get("min_thinking_tokens") is None:
        out["sampling"] = {k: v for k, v in out["sampling"].items() if k not in FORCING}
    tools = sections.get("tools")
    if isinstance(tools, dict) and tools.get("name", "none") != "none":
        out["tools"] = {k: v for k, v in tools.items() if k != "workers"}
    return without_secrets(out)


def operational_keys(model_section: Any) -> set[str]:
    """Fields marked `operational` in the packaged model configs and the one `_target_` names."""
    import dataclasses

    targets = set(MODEL_CONFIGS.values())
    if isinstance(model_section, dict) and model_section.get("_target_"):
        targets.add(model_section["_target_"])
    return {f.name for target in targets for f in dataclasses.fields(model_config_class(target))
            if f.metadata.get("operational")}


def digest(fingerprint_: dict[str, Any]) -> str:
    """8 hex digits of a fingerprint: the end of a run folder's name."""
    return hashlib.sha256(json.dumps(fingerprint_, sort_keys=True, default=str).encode()).hexdigest()[:8]


def compatible(previous: dict[str, Any], current: dict[str, Any], defaults: dict[str, Any]) -> bool:
    """Whether a folder's fingerprint (`previous`) describes the same config as `current`:
    equal values, where a key that only one of them has holds its default (`defaults`, a
    fingerprint of the defaults). A folder written before a knob existed is still resumed."""
    for name in set(previous) | set(current):
        old, new, default = previous.get(name), current.get(name), defaults.get(name)
        if not (isinstance(old, dict) and isinstance(new, dict)):
            if old != new:
                return False
            continue
        for key in set(old) | set(new):
            a, b = old.get(key, _ABSENT), new.get(key, _ABSENT)
            if a is _ABSENT or b is _ABSENT:
                if (b if a is _ABSENT else a) != (default or {}).get(key, _ABSENT):
                    return False
            elif a != b:
                return False
    return True


def safe_name(value: Any) -> str:
    """A string usable as a folder name: `Qwen/Qwen2.5-7B` -> `Qwen_Qwen2.5-7B`."""
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", str(value)).strip("_") or "unnamed"


def fingerprint_hash(*, _root_: Any) -> str:
    """Resolver: the `digest` of the composed config's fingerprint, so that every sweep
    point gets its own run folder (`${fingerprint_hash:}` in conf/logging/default.yaml)."""
    from omegaconf import OmegaConf

    sections = {key: OmegaConf.to_container(_root_[key], resolve=True) for key in (*SECTIONS.values(), "tools")
                if key in _root_}
    return digest(fingerprint(sections))


def register_resolvers() -> None:
    """Resolvers used by conf/ (idempotent; call before composing configs)."""
    from omegaconf import OmegaConf

    if not OmegaConf.has_resolver("safe_name"):
        OmegaConf.register_new_resolver("safe_name", safe_name)
    if not OmegaConf.has_resolver("fingerprint_hash"):
        OmegaConf.register_new_resolver("fingerprint_hash", fingerprint_hash)
