"""`SkyEnvBuilder`: envs by name, from `conf/env/<name>.yaml` or user registrations."""

from __future__ import annotations

import difflib
import re
from typing import Any, Callable

from skyeval.config import CONF_DIR
from skyeval.envs.base import Env
from skyeval.errors import SkyevalError


class UnknownEnvError(SkyevalError, KeyError):
    """An env name that is neither a config file nor registered."""

    def __str__(self) -> str:
        return str(self.args[0])


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
                raise TypeError(f"env {name!r} has no knob {bad.group(1)!r} ({cls._registered[key].__name__})") from None
            env.name = knobs.get("name") or key
            return env
        return build_from_config({**cls.config(key), **knobs})

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
        if isinstance(err.__cause__, ValueError):  # a knob with a bad value: the env's own message
            raise err.__cause__ from None
        bad = re.search(r"unexpected keyword argument '(\w+)'", str(err))
        if bad is None:
            raise
        known = ", ".join(sorted(k for k in cfg if k != "_target_"))
        raise TypeError(f"env {cfg.get('name')!r} has no knob {bad.group(1)!r}; its knobs include: {known}") from None
