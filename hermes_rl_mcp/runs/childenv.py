"""The minimal environment a supervisor and its components run with.

Only what a Python process needs to run (PATH, HOME, locale, TMPDIR, PYTHONPATH, the BLAS
settings), the project's own ``HERMES_RL_*`` settings, and the keys a backend names; no other
variable of the server's environment, so an unrelated ``*_KEY`` or ``*_TOKEN`` never reaches a
component.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from hermes_rl_mcp.runs.redact import is_secret_name

_BASE_NAMES = ("PATH", "HOME", "LANG", "TMPDIR", "PYTHONPATH", "TZ", "USER", "LOGNAME", "OMP_NUM_THREADS")
# How NumPy's BLAS runs on this machine (thread count, a core type set to avoid a faulty kernel):
# the operator's choice holds in every component too.
_BLAS_PREFIX = "OPENBLAS_"
# W&B mirrors are online exactly when this key is present.
WANDB_KEY = "WANDB_API_KEY"


def minimal_environment(extra_keys: Iterable[str] = (), source: Mapping[str, str] | None = None) -> dict[str, str]:
    environ = os.environ if source is None else source
    env: dict[str, str] = {}
    for name, value in environ.items():
        if name in _BASE_NAMES or name.startswith(("LC_", "HERMES_RL_")):
            env[name] = value
        elif name.startswith(_BLAS_PREFIX) and not is_secret_name(name):
            env[name] = value
    for name in extra_keys:
        if name in environ:
            env[name] = environ[name]
    env.setdefault("PATH", os.defpath)
    # Component output goes to log files: unbuffered so a crash leaves its last words there.
    env["PYTHONUNBUFFERED"] = "1"
    # A run's three components share the machine's cores, and the local policy's matrices are
    # small: BLAS worker threads only contend, and at import they spin for about 0.1 s of CPU in
    # each process, which the start of a run waits for. The operator's own setting wins.
    if "OMP_NUM_THREADS" not in env:
        env.setdefault("OPENBLAS_NUM_THREADS", "1")
    return env
