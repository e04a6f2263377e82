"""`SkyEnvBuilder`: envs by name, from `conf/env/<name>.yaml` or user registrations."""

from __future__ import annotations

import difflib
import inspect
import re
from typing import Any, Callable

from skyeval.config import CONF_DIR
from skyeval.envs.base import Env
from skyeval.errors import SkyevalError


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
        packaged = {p.stem.lower() for p in (CONF_DIR / "env").glob("*.yaml")}
        return sorted(packaged | set(cls._registered))

    @classmethod
    def config(cls, name: str) -> dict[str, Any]:
        """The packaged env config (`_target_` and default knobs) for `name`."""
        from omegaconf import OmegaConf

        path = CONF_DIR / "env" / f"{name.lower()}.yaml"
        if not path.exists():
            raise cls._unknown(name)
        return OmegaConf.to_container(OmegaConf.load(path), resolve=True)

    @classmethod
    def build(cls, name: str, knobs: dict[str, Any] | None = None) -> Env:
        """The env named `name` (any case) with `knobs` over its defaults."""
        knobs = dict(knobs or {})
        key = name.lower()
        if key in cls._registered:
            try:
                env = cls._registered[key](**knobs)
            except TypeError as err:
                bad = re.search(r"unexpected keyword argument '(\w+)'", str(err))
                if bad is None:
                    raise
                known = sorted(constructor_knobs(cls._registered[key]))
                raise UnknownKnobError(unknown_knob_message(name, bad.group(1), known)) from None
            env.name = knobs.get("name") or key
            return env
        return build_from_config({**cls.config(key), **knobs})

    @classmethod
    def knobs(cls, name: str) -> list[str]:
        """The knobs `name` takes: its config's keys and its class's constructor arguments."""
        key = name.lower()
        if key in cls._registered:
            return sorted(constructor_knobs(cls._registered[key]))
        cfg = cls.config(key)
        from hydra.utils import get_class

        return sorted({k for k in cfg if k != "_target_"} | constructor_knobs(get_class(cfg["_target_"])))

    @classmethod
    def check_knob(cls, name: str, knob: str) -> None:
        """Raise UnknownKnobError (closest match, the valid knobs) unless `name` takes `knob`."""
        known = cls.knobs(name)
        if knob not in known:
            raise UnknownKnobError(unknown_knob_message(name, knob, known))

    @classmethod
    def _unknown(cls, name: str) -> UnknownEnvError:
        names = cls.names()
        close = difflib.get_close_matches(name.lower(), names, n=1, cutoff=0.5)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        return UnknownEnvError(f"unknown env {name!r}.{hint} Available: {', '.join(names)}")


def build_from_config(cfg: dict[str, Any]) -> Env:
    """Instantiate an env from a resolved config dict holding `_target_`."""
    from hydra.errors import InstantiationException
    from hydra.utils import instantiate

    try:
        return instantiate(cfg, _convert_="all")
    except InstantiationException as err:
        if isinstance(err.__cause__, (ValueError, SkyevalError)):  # a knob's bad value, a missing package: its own message
            raise err.__cause__ from None
        bad = re.search(r"unexpected keyword argument '(\w+)'", str(err))
        if bad is None:
            raise
        from hydra.utils import get_class

        known = sorted(constructor_knobs(get_class(cfg["_target_"])))
        raise UnknownKnobError(unknown_knob_message(cfg.get("name"), bad.group(1), known)) from None


def constructor_knobs(env_cls: Any) -> set[str]:
    """Keyword arguments an env class accepts, following `**kwargs` up its bases."""
    knobs: set[str] = set()
    for klass in getattr(env_cls, "__mro__", (env_cls,)):
        init = klass.__dict__.get("__init__") if isinstance(klass, type) else klass
        if init is None:
            continue
        params = inspect.signature(init).parameters.values()
        knobs |= {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != "self"}
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            break
    return knobs


def unknown_knob_message(env: Any, knob: str, known: list[str]) -> str:
    """`env 'aime24' has no knob 'limt'. Did you mean 'limit'? Its knobs: ...` (the typo is
    never listed among the valid knobs)."""
    known = [k for k in known if k != knob]
    close = difflib.get_close_matches(knob, known, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return f"env {env!r} has no knob {knob!r}.{hint} Its knobs: {', '.join(known)}"
