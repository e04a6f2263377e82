"""The `grading:` section: whether and how a judge model grades what the rules leave open."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from skyeval.backends.base import ModelConfig, model_config_class
from skyeval.errors import ConfigError

MODES = ("off", "fallback", "always", "audit")
DEFAULT_JUDGE = "skyeval.backends.openai.HTTPConfig"


@dataclass
class GradingConfig:
    """How samples are graded beyond the rules (docs/grading.md, "A model as judge").

    - `mode`: `off` (rules only, the default); `fallback` (the judge grades the samples the
      rules could not decide: no extractable answer, or one they can neither prove equal
      nor different); `always` (the judge grades every sample it can see an answer of);
      `audit` (rules grade everything; the judge grades a random sample of `audit_n`
      rule-decided answers and the run reports how far the two agree).
    - `judge`: the judge's model config, of any backend (`HTTPConfig`, `VLLMConfig`,
      `RayConfig`), or its fields as a dict whose `_target_` names the class (default the
      openai backend). The CLI picks the backend with `grading/judge=openai|vllm|ray`.
    - `prompt`: a named template of `skyeval.grading.prompts.PROMPTS` (default
      `equivalence`), or a template text with `{problem}`, `{gold}` and `{answer}`.
    - `temperature`, `seed`, `max_tokens`: the judge's sampling (greedy and seeded).
    - `concurrency`: judge requests in flight; `batch_size`: samples judged together.
    - `final_chars`: where no answer was extracted, the judge sees this many characters
      of the end of the answer (after any reasoning).
    """

    mode: str = "off"
    judge: Any = None
    prompt: str = "equivalence"
    audit_n: int = 100
    temperature: float = 0.0
    seed: int = 1234
    max_tokens: int = 1024
    concurrency: int = 16
    batch_size: int = 64
    final_chars: int = 2000

    def __post_init__(self) -> None:
        from skyeval.grading.prompts import template_text

        if self.mode not in MODES:
            raise ConfigError(f"grading.mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        for name in ("audit_n", "max_tokens", "concurrency", "batch_size", "final_chars"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"grading.{name} must be an integer >= 1, got {value!r}")
        if isinstance(self.temperature, bool) or not isinstance(self.temperature, (int, float)) or self.temperature < 0:
            raise ConfigError(f"grading.temperature must be a number >= 0, got {self.temperature!r}")
        template_text(self.prompt)  # an unknown name fails here
        self.judge = judge_config(self.judge, required=self.mode != "off")

    @property
    def active(self) -> bool:
        return self.mode != "off"

    @property
    def changes_scores(self) -> bool:
        """Whether a judge's verdict can become a score (`fallback`, `always`; `audit` only looks)."""
        return self.mode in ("fallback", "always")

    def scores_hash(self) -> str | None:
        """What a score graded this way depends on beyond the rules, as a hash (a score
        record keeps it as `grading_hash`: a run with other grading grades it again); None
        when the rules' verdict is the score (`off`, `audit`). The judge's backend, model and
        generation fields count, its operational ones (address, timeout, price) and secrets not."""
        if not self.changes_scores:
            return None
        from skyeval.grading.prompts import prompt_id
        from skyeval.results import content_hash

        judge = {f.name: getattr(self.judge, f.name) for f in dataclasses.fields(self.judge)
                 if f.repr and not f.metadata.get("operational")}
        return content_hash({"mode": self.mode, "judge": [type(self.judge).__name__, judge],
                             "prompt": prompt_id(self.prompt), "temperature": self.temperature, "seed": self.seed,
                             "max_tokens": self.max_tokens, "final_chars": self.final_chars})

    def describe(self) -> str:
        """`fallback (judge gpt-4o-mini)`, or `off`."""
        model = getattr(self.judge, "model_source", None)
        return f"{self.mode} (judge {model})" if self.active and model else self.mode

    @classmethod
    def of(cls, config: "GradingConfig | dict[str, Any] | None") -> "GradingConfig":
        if isinstance(config, cls):
            return config
        return cls(**dict(config or {}))


def judge_config(judge: Any, *, required: bool, key: str = "grading.judge") -> Any:
    """The judge's `ModelConfig`: built from a dict (class from `_target_`, default
    `HTTPConfig`) once it names a model; left as data while it names none and no judge is
    needed (`mode: off`). Errors name the config section `key`."""
    if judge is None or isinstance(judge, ModelConfig):
        if judge is None and required:
            raise ConfigError("grading.judge.model_source is required when grading.mode is not off: "
                              "e.g. grading.judge.model_source=gpt-4o-mini")
        return judge
    fields = {k: v for k, v in dict(judge).items() if k != "_target_"}
    if not fields.get("model_source") and not fields.get("model"):
        if required:
            raise ConfigError("grading.judge.model_source is required when grading.mode is not off: "
                              "e.g. grading.judge.model_source=gpt-4o-mini")
        return dict(judge)
    cls = model_config_class(dict(judge).get("_target_") or DEFAULT_JUDGE, key)
    known = {f.name for f in dataclasses.fields(cls)} | {"model"}
    unknown = sorted(set(fields) - known)
    if unknown:
        import difflib

        close = difflib.get_close_matches(unknown[0], sorted(known), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"unknown key '{key}.{unknown[0]}'.{hint} Keys of {cls.__name__}: "
                          f"{', '.join(sorted(k for k in known if not k.startswith('_')))}")
    return cls(**fields)

