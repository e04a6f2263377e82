"""Run fingerprints: whether a run folder's work may be reused, and its name's hash.

A run's `Fingerprint` is computed once (`fingerprint`, in `skyeval.run.app.execute`, after
the env's data is read) and passed to what needs it: the folder's name, run.json, resuming,
shard states. It holds the env, template, model and sampling sections and the identity of
the data read (a content hash of the local files, or the hub dataset's fingerprint), so two
copies of a data set with different content make two folders. The folder name's hash is
filled in then: `${fingerprint_hash:}` in conf/ stands for it (`PLACEHOLDER`).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skyeval.config.schema import MODEL_CONFIGS, model_config_class
from skyeval.config.secrets import without_secrets

SECTIONS = {"env": "env", "template": "template", "model": "model_config", "sampling": "sampling_params"}
# Growing a run reuses its samples (each sample has its own index and seed): these don't count.
# The data folder's path doesn't either: the data's content does (`data`).
NOT_FINGERPRINTED = {"env": ("limit", "data_dir"), "sampling": ("n",)}
# A date window selects other problems: part of the fingerprint when set; left out when
# open, so undated runs keep the fingerprints (and folder names) they had before windows.
WINDOW = ("start_date", "end_date")
# Budget forcing and tools, likewise: part of it when on, left out when off.
FORCING = ("min_thinking_tokens", "max_waits")
PLACEHOLDER = "{fingerprint}"  # what `${fingerprint_hash:}` gives: the digest, filled in when the run starts
_ABSENT = object()
_NAMED = re.compile(r"^(.*)_[0-9a-f]{8}$")  # a folder name ending in a digest


@dataclass(frozen=True)
class Fingerprint:
    """What makes a run folder's work reusable by a run: `values` (kept in run.json) and
    `defaults` (the same for the sections' defaults: a key only one side has holds its
    default, so a folder written before a knob existed is still resumed)."""

    values: dict[str, Any]
    defaults: dict[str, Any]

    @property
    def digest(self) -> str:
        """8 hex digits: the end of a run folder's name."""
        return digest(self.values)

    def matches(self, previous: dict[str, Any]) -> bool:
        """Whether a folder's run.json (`previous`) describes this run's config, whatever
        data it read: its records are reused only where their problem's prompt and gold
        hashes still match (`skyeval.run.resume`)."""
        return previous == self.values or compatible(previous, self.values, self.defaults)

    def same_data(self, previous: dict[str, Any]) -> bool:
        """Whether a folder's run.json says it read this run's data (or predates data identities)."""
        return previous.get("data") in (None, self.values.get("data"))

    def folder(self, run_dir: str | Path, sweep: bool = False) -> Path:
        """`run_dir` with its name's `PLACEHOLDER` replaced by the digest. In a sweep, a
        name without it (an experiment name of the user's) gets `_<digest>` added, so that
        two sweep points never share a folder."""
        run_dir = Path(run_dir)
        name = run_dir.name
        if PLACEHOLDER in name:
            return run_dir.with_name(name.replace(PLACEHOLDER, self.digest))
        if sweep and not name.endswith(f"_{self.digest}"):
            return run_dir.with_name(f"{name}_{self.digest}")
        return run_dir

    def siblings(self, run_dir: Path) -> list[Path]:
        """Folders beside `run_dir` of the same readable name and another digest (an older
        skyeval's names for the same config)."""
        match = _NAMED.match(run_dir.name)
        if match is None:
            return []
        pattern = f"{_glob_escape(match[1])}_" + "[0-9a-f]" * 8
        return [path for path in sorted(run_dir.parent.glob(pattern)) if path != run_dir]


def fingerprint(config: Any, data: dict[str, Any] | None = None) -> Fingerprint:
    """The fingerprint of a RunConfig (or its sections as plain data) reading `data` (the
    env's `data_identity()`): the real values of the env, template, model and sampling
    sections, without secrets, operational model fields (`api_url`, `timeout_s` ...:
    `skyeval.backends.base.operational`), `env.limit`, `env.data_dir` or `sampling_params.n`;
    the env's date window (`start_date`, `end_date`) when it is set, budget forcing
    (`min_thinking_tokens`, `max_waits`) when it is on, the `tools` section (but `workers`)
    unless it is `tools=none`; and `data`."""
    sections = config.to_dict() if hasattr(config, "to_dict") else config
    model = getattr(config, "model_config", None)
    values = {**_values(sections), **({"data": data} if data is not None else {})}
    return Fingerprint(values, _values(_defaults(sections, type(model) if model is not None else None)))


def _values(sections: dict[str, Any]) -> dict[str, Any]:
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


def _defaults(sections: dict[str, Any], model_class: type | None) -> dict[str, Any]:
    """The sections as their classes' defaults (the env's knobs, the model config's fields
    (of `model_class`, else the section's `_target_`), a default template and sampling),
    for `compatible`."""
    import dataclasses

    from skyeval.backends.base import SamplingParams
    from skyeval.envs.registry import env_defaults
    from skyeval.templates import Template

    model_section = sections.get("model_config")
    target = model_section.get("_target_") if isinstance(model_section, dict) else None
    cls = model_class or model_config_class(target or MODEL_CONFIGS["reference"])
    model = {f.name: f.default if f.default is not dataclasses.MISSING else f.default_factory()
             for f in dataclasses.fields(cls)
             if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING}
    return {"env": env_defaults(sections.get("env") or {}), "template": dataclasses.asdict(Template()),
            "model_config": model, "sampling_params": dataclasses.asdict(SamplingParams())}


def _glob_escape(text: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", text)


def operational_keys(model_section: Any) -> set[str]:
    """Fields marked `operational` in the packaged model configs and the one `_target_` names."""
    import dataclasses

    targets = set(MODEL_CONFIGS.values())
    if isinstance(model_section, dict) and model_section.get("_target_"):
        targets.add(model_section["_target_"])
    return {f.name for target in targets for f in dataclasses.fields(model_config_class(target))
            if f.metadata.get("operational")}


def digest(values: dict[str, Any]) -> str:
    """8 hex digits of fingerprint values: the end of a run folder's name."""
    return hashlib.sha256(json.dumps(values, sort_keys=True, default=str).encode()).hexdigest()[:8]


def compatible(previous: dict[str, Any], current: dict[str, Any], defaults: dict[str, Any]) -> bool:
    """Whether a folder's fingerprint (`previous`) describes the same config as `current`:
    equal values, where a key that only one of them has holds its default (`defaults`, a
    fingerprint of the defaults). A folder written before a knob existed is still resumed."""
    for name in set(previous) | set(current):
        old, new, default = previous.get(name), current.get(name), defaults.get(name)
        if name == "data":  # the data may differ: each record is reused only for its problem's prompt and gold hashes
            continue
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


def fingerprint_hash() -> str:
    """Resolver: `PLACEHOLDER`, which the run replaces with its fingerprint's digest once it
    has read its data (`Fingerprint.folder`): `${fingerprint_hash:}` in conf/logging/default.yaml."""
    return PLACEHOLDER


def register_resolvers() -> None:
    """Resolvers used by conf/ (idempotent; call before composing configs)."""
    from omegaconf import OmegaConf

    if not OmegaConf.has_resolver("safe_name"):
        OmegaConf.register_new_resolver("safe_name", safe_name)
    if not OmegaConf.has_resolver("fingerprint_hash"):
        OmegaConf.register_new_resolver("fingerprint_hash", fingerprint_hash)
