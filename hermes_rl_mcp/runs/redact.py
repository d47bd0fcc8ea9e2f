"""Secret redaction for everything a run writes or serves: config files, log tails, results.

Two rules: a mapping value whose key names a secret (``api_key``, ``WANDB_API_KEY``,
``access_token``, ``client_secret``, ``password``...) is replaced, and any literal occurrence of
a secret value taken from the process environment is replaced in text. Keys such as
``max_token_length`` or ``tokenizer_name`` are not secrets: only the last word of a key decides,
except for ``secret`` and ``password`` which mark a secret anywhere in the name.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping
from typing import Any

REDACTED = "***redacted***"

_WORD_SPLIT = re.compile(r"[^0-9a-zA-Z]+|(?<=[a-z0-9])(?=[A-Z])")
_SECRET_LAST_WORDS = frozenset({"key", "keys", "apikey", "token", "secret", "secrets", "password", "passwd", "credentials"})
_SECRET_ANY_WORDS = frozenset({"secret", "password", "passwd"})
# Values this short occur everywhere by chance ("x", "1"); replacing them would garble logs.
_MIN_SECRET_VALUE_LENGTH = 6


@functools.lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    words = [w.lower() for w in _WORD_SPLIT.split(name) if w]
    if not words:
        return False
    return words[-1] in _SECRET_LAST_WORDS or any(w in _SECRET_ANY_WORDS for w in words)


def environment_secrets(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of secret-named variables, longest first so overlapping values redact fully."""
    if environ is None:
        return list(_process_secrets())
    values = {v for k, v in environ.items() if is_secret_name(k) and len(v) >= _MIN_SECRET_VALUE_LENGTH}
    return sorted(values, key=len, reverse=True)


_seen_environment: tuple[dict[Any, Any], list[str]] | None = None


def _process_secrets() -> list[str]:
    """The process environment's secrets, found again only when the environment changed.

    Every log read and status redacts; decoding every variable each time cost more than the
    read. ``os.environ`` keeps its variables in a plain dict (``_data``): comparing it with a
    copy is one C-level comparison that notices any variable set, changed or removed.
    """
    global _seen_environment
    raw = getattr(os.environ, "_data", None)
    seen = _seen_environment
    if isinstance(raw, dict) and seen is not None and seen[0] == raw:
        return seen[1]
    snapshot = dict(raw) if isinstance(raw, dict) else {}
    found = environment_secrets(dict(os.environ))
    if isinstance(raw, dict):
        _seen_environment = (snapshot, found)
    return found


def redact_text(text: str, secrets: list[str] | None = None) -> str:
    for value in environment_secrets() if secrets is None else secrets:
        if value in text:
            text = text.replace(value, REDACTED)
    return text


def redact_data(value: Any, secrets: list[str] | None = None) -> Any:
    """A copy of a JSON/YAML-like document with secret-named values and secret text replaced."""
    found = environment_secrets() if secrets is None else secrets
    return _redact(value, found)


def _redact(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        for key, item in value.items():
            if isinstance(key, str) and is_secret_name(key) and item not in (None, "") and not isinstance(item, (bool, Mapping, list)):
                out[key] = REDACTED
            else:
                out[key] = _redact(item, secrets)
        return out
    if isinstance(value, (list, tuple)):
        return [_redact(item, secrets) for item in value]
    if isinstance(value, str):
        return redact_text(value, secrets)
    return value
