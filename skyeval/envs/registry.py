"""`SkyEnvBuilder`: envs by name; and each env class's knobs, as the schema its YAMLs extend.

Names come from `conf/env/<name>.yaml` or user registrations; a class's knobs are its
constructor's arguments."""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import typing
from functools import lru_cache
from typing import Any, Callable

from skyeval.backends.base import class_path
from skyeval.envs.base import Env
from skyeval.envs.choice import ChoiceEnv
from skyeval.envs.code import CodeEnv
from skyeval.envs.ifeval import IFEvalEnv
from skyeval.envs.math import MathEnv
from skyeval.envs import qwen_math  # noqa: F401 - its env classes (subclasses of the families) get schemas
from skyeval.errors import ConfigError, SkyevalError
from skyeval.paths import CONF_DIR

FAMILIES = (MathEnv, ChoiceEnv, CodeEnv, IFEvalEnv)  # the packaged env classes are these and their subclasses


class UnknownEnvError(SkyevalError, KeyError):
    """An env name that is neither a config file nor registered."""

    def __str__(self) -> str:
        return str(self.args[0])


class UnknownKnobError(SkyevalError, TypeError):
    """A knob (constructor argument) the env does not take."""


class SkyEnvBuilder:
    """Build envs by case-insensitive name: `SkyEnvBuilder.build("AIME24", {"limit": 5})`."""

    _registered: dict[str, Callable[..., Env]] = {}

    @classmethod
    def register(cls, name: str, env_cls: Callable[..., Env]) -> None:
        """Make `name` build `env_cls(**knobs)`; overrides a packaged env of that name."""
        cls._registered[name.lower()] = env_cls

    @classmethod
    def names(cls) -> list[str]:
        """Packaged env names as their config files spell them (`gaokao2024_I`), and registered ones."""
        packaged = {p.stem for p in (CONF_DIR / "env").glob("*.yaml")}
        registered = set(cls._registered) - {p.lower() for p in packaged}
        return sorted(packaged | registered, key=str.lower)

    @classmethod
    def config(cls, name: str) -> dict[str, Any]:
        """The packaged env config of `name`: `_target_` and every knob of its class, with
        the values `conf/env/<name>.yaml` sets over the class's defaults."""
        from omegaconf import OmegaConf

        return OmegaConf.to_container(_packaged(packaged_name(name)), resolve=True)

    @classmethod
    def build(cls, name: str, knobs: dict[str, Any] | None = None) -> Env:
        """The env named `name` (any case) with `knobs` over its defaults."""
        knobs = dict(knobs or {})
        key = name.lower()
        if key in cls._registered:
            env_cls = cls._registered[key]
            env = env_cls(**checked_knobs(env_cls, knobs, name))
            env.name = knobs.get("name") or key
            return env
        return build_from_config({**cls.config(key), **knobs})

    @classmethod
    def knobs(cls, name: str) -> list[str]:
        """The knobs `name` takes: its class's constructor arguments."""
        key = name.lower()
        env_cls = cls._registered.get(key) or _class_of(cls.config(key))
        return sorted(constructor_knobs(env_cls))

    @classmethod
    def _unknown(cls, name: str) -> UnknownEnvError:
        names = cls.names()
        close = difflib.get_close_matches(name.lower(), names, n=1, cutoff=0.5)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        return UnknownEnvError(f"unknown env {name!r}.{hint} Available: {', '.join(names)}")


def packaged_name(name: str) -> str:
    """The config file name (`conf/env/<it>.yaml`) of a packaged env named in any case
    (`gaokao2024_i` -> `gaokao2024_I`); the name lowercased when there is none."""
    wanted = name.lower()
    for path in (CONF_DIR / "env").glob("*.yaml"):
        if path.stem.lower() == wanted:
            return path.stem
    return wanted


def build_from_config(cfg: dict[str, Any]) -> Env:
    """The env of a config section holding `_target_` (a class path) and knobs, checked
    against the class (`checked_knobs`)."""
    cfg = dict(cfg)
    env_cls = _class_of(cfg)
    cfg.pop("_target_")
    return env_cls(**checked_knobs(env_cls, cfg, cfg.get("name")))


def checked_knobs(env_cls: Any, knobs: dict[str, Any], env: Any = None) -> dict[str, Any]:
    """`knobs` for `env_cls(**knobs)`: a knob it does not take is an UnknownKnobError naming
    the closest one, a value of the wrong type a ConfigError; values equal to the class's
    own defaults are left out (the class sets them). Classes whose constructor has no
    schema (a plain callable) get `knobs` as they are."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    schema = knob_schema(env_cls)
    if schema is None:
        return knobs
    known = {f.name for f in dataclasses.fields(schema)} - {"_target_"}
    for knob in knobs:
        if knob not in known:
            raise UnknownKnobError(unknown_knob_message(env or getattr(env_cls, "name", None), knob, sorted(known)))
    try:
        typed = OmegaConf.to_container(OmegaConf.merge(OmegaConf.structured(schema), knobs), resolve=True)
    except OmegaConfBaseException as err:
        try:
            env_cls(**knobs)  # a class that checks this value itself says best what it must be
        except ConfigError:
            raise
        except Exception:  # noqa: BLE001 - any other failure: the schema's words
            pass
        raise ConfigError(f"env.{err.full_key or ''}: {str(err).splitlines()[0]}") from None
    defaults = _defaults(schema)
    return {k: typed[k] for k in knobs if typed[k] != defaults.get(k, dataclasses.MISSING)}


def env_defaults(section: dict[str, Any]) -> dict[str, Any]:
    """The knob defaults of the class an env section builds (by `_target_` or by name)."""
    name = str(section.get("name") or "").lower()
    if section.get("_target_"):
        env_cls = _class_of(section)
    elif name in SkyEnvBuilder._registered:
        env_cls = SkyEnvBuilder._registered[name]
    else:
        env_cls = _class_of(SkyEnvBuilder.config(name))
    schema = knob_schema(env_cls)
    return {k: v for k, v in _defaults(schema).items()} if schema is not None else {}


def constructor_knobs(env_cls: Any) -> set[str]:
    """Keyword arguments an env class accepts, following `**kwargs` up its bases."""
    return set(_parameters(env_cls))


def unknown_knob_message(env: Any, knob: str, known: list[str]) -> str:
    """`env 'aime24' has no knob 'limt'. Did you mean 'limit'? Its knobs: ...` (the typo is
    never listed among the valid knobs)."""
    known = [k for k in known if k != knob]
    close = difflib.get_close_matches(knob, known, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return f"env {env!r} has no knob {knob!r}.{hint} Its knobs: {', '.join(known)}"


# ---- schemas -------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def knob_schema(env_cls: Any) -> type | None:
    """A dataclass of `env_cls`'s knobs (constructor arguments, with their defaults and
    types; `_target_` defaults to the class): the schema its YAML files extend. None for
    a factory that is not a class."""
    if not isinstance(env_cls, type):
        return None
    from omegaconf import MISSING

    specs: list[tuple[str, Any, Any]] = [("_target_", str, dataclasses.field(default=class_path(env_cls)))]
    for name, (param, hint) in _parameters(env_cls).items():
        default = MISSING if param.default is inspect.Parameter.empty else param.default
        value = dataclasses.field(default_factory=lambda d=default: _copy(d)) if isinstance(default, (list, dict)) \
            else dataclasses.field(default=default)
        specs.append((name, _storable(hint, default), value))
    return dataclasses.make_dataclass(env_cls.__name__, specs)


def register_schemas() -> None:
    """Store the schema of every packaged env class (`FAMILIES` and their subclasses) with
    Hydra's ConfigStore in group `env`, named after the class: `conf/env/aime24.yaml`
    begins `defaults: [MathEnv, _self_]` and gets every knob with its default. The nodes
    are open and untyped: a subclass chosen by `_target_` (an experiment's rejection env)
    may add knobs of its own, and every knob is checked against the class that is built
    (`checked_knobs`: unknown names and wrong types refused, in the class's own words where
    it checks a value itself), before any work."""
    from hydra.core.config_store import ConfigStore
    from omegaconf import OmegaConf

    store = ConfigStore.instance()
    classes = list(FAMILIES)
    while classes:
        env_cls = classes.pop()
        classes.extend(env_cls.__subclasses__())
        if env_cls.__module__.startswith("skyeval.envs."):
            node = OmegaConf.create(OmegaConf.to_container(OmegaConf.structured(knob_schema(env_cls))))
            OmegaConf.set_struct(node, False)
            store.store(group="env", name=env_cls.__name__, node=node)


def _packaged(name: str) -> Any:
    """`conf/env/<name>.yaml` composed over its defaults list (a class schema, or another
    env file it extends), as a DictConfig."""
    from omegaconf import OmegaConf

    path = CONF_DIR / "env" / f"{packaged_name(name)}.yaml"
    if not path.exists():
        raise SkyEnvBuilder._unknown(name)
    data = OmegaConf.load(path)
    parts = []
    for entry in data.pop("defaults", []) or []:
        if entry == "_self_":
            parts.append(data)
        elif (CONF_DIR / "env" / f"{entry}.yaml").exists():
            parts.append(_packaged(entry))
        else:
            parts.append(_schema_node(entry))
    if data not in parts:
        parts.append(data)
    return OmegaConf.merge(*parts)


def _schema_node(name: str) -> Any:
    from hydra.core.config_store import ConfigStore

    register_schemas()
    return ConfigStore.instance().load(f"env/{name}.yaml").node


def _class_of(cfg: dict[str, Any]) -> Any:
    from hydra.utils import get_class

    target = cfg.get("_target_")
    if not target:
        raise ConfigError("the env section needs `name` (a packaged or registered env) or `_target_`")
    try:
        return get_class(target)
    except Exception as err:  # noqa: BLE001 - a missing module or class is the same user error
        raise ConfigError(f"env._target_: cannot import {target!r} ({err})") from None


def _parameters(env_cls: Any) -> dict[str, tuple[inspect.Parameter, Any]]:
    """Keyword parameters of `env_cls` and its bases (following `**kwargs` up), with their
    type hints; the most derived class's declaration of a knob wins."""
    found: dict[str, tuple[inspect.Parameter, Any]] = {}
    for klass in getattr(env_cls, "__mro__", (env_cls,)):
        init = klass.__dict__.get("__init__") if isinstance(klass, type) else klass
        if init is None:
            continue
        try:
            hints = typing.get_type_hints(init)
        except Exception:  # noqa: BLE001 - an annotation that does not evaluate: untyped
            hints = {}
        params = inspect.signature(init).parameters.values()
        for p in params:
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != "self":
                found.setdefault(p.name, (p, hints.get(p.name, Any)))
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            break
    return found


@lru_cache(maxsize=None)
def _storable_hint(hint: Any) -> bool:
    from omegaconf import OmegaConf

    try:
        OmegaConf.structured(dataclasses.make_dataclass("Probe", [("x", hint, dataclasses.field(default=None))]))
        return True
    except Exception:  # noqa: BLE001 - OmegaConf refuses the type: store it untyped
        return False


def _storable(hint: Any, default: Any) -> Any:
    """`hint` when OmegaConf can type-check it (made Optional when the default is None),
    else Any (unions such as `str | list[str]`, Templates)."""
    if default is None and hint is not Any and type(None) not in typing.get_args(hint):
        hint = hint | None
    try:
        return hint if _storable_hint(hint) else Any
    except TypeError:  # unhashable hint
        return Any


def _defaults(schema: type) -> dict[str, Any]:
    return {f.name: f.default if f.default is not dataclasses.MISSING else f.default_factory()
            for f in dataclasses.fields(schema)
            if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING}


def _copy(value: Any) -> Any:
    import copy

    return copy.deepcopy(value)
