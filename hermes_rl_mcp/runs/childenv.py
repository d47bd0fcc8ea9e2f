"""The minimal environment a supervisor and its components run with.

Only what a Python process needs to run (PATH, HOME, locale, TMPDIR, PYTHONPATH), the
project's own ``HERMES_RL_*`` settings, and the keys a backend names; no other variable of the
server's environment, so an unrelated ``*_KEY`` or ``*_TOKEN`` never reaches a component.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

_BASE_NAMES = ("PATH", "HOME", "LANG", "TMPDIR", "PYTHONPATH", "TZ", "USER", "LOGNAME")
# W&B mirrors are online exactly when this key is present.
WANDB_KEY = "WANDB_API_KEY"


def minimal_environment(extra_keys: Iterable[str] = (), source: Mapping[str, str] | None = None) -> dict[str, str]:
    environ = os.environ if source is None else source
    env: dict[str, str] = {}
    for name, value in environ.items():
        if name in _BASE_NAMES or name.startswith("LC_") or name.startswith("HERMES_RL_"):
            env[name] = value
    for name in extra_keys:
        if name in environ:
            env[name] = environ[name]
    env.setdefault("PATH", os.defpath)
    # Component output goes to log files: unbuffered so a crash leaves its last words there.
    env["PYTHONUNBUFFERED"] = "1"
    return env
