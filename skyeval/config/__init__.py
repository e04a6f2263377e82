"""Configs: their schema (`RunConfig` and its sections), fingerprints, secret redaction."""

from skyeval.config.compose import compose
from skyeval.config.fingerprints import fingerprint, register_resolvers, safe_name
from skyeval.config.schema import LoggingConfig, RunConfig
from skyeval.config.secrets import REDACTED, is_secret_key, redact, redact_text
from skyeval.paths import CONF_DIR

__all__ = ["CONF_DIR", "REDACTED", "LoggingConfig", "RunConfig", "compose", "fingerprint", "is_secret_key", "redact",
           "redact_text", "register_resolvers", "safe_name"]
