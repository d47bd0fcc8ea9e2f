"""Where things live: the state directory and the environment directories.

Read from the process environment on each call so tests and operators can point a fresh
server at another state directory without any module-level state.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent


def _bundled_env_dir() -> Path:
    """The bundled environments: inside the package when installed from a wheel, beside it in a checkout."""
    installed = PACKAGE_DIR / "environments"
    return installed if installed.is_dir() else PACKAGE_DIR.parent / "environments"


BUNDLED_ENV_DIR = _bundled_env_dir()


def state_dir() -> Path:
    """``HERMES_RL_HOME``, else the per-user data directory. Created on first use."""
    explicit = os.environ.get("HERMES_RL_HOME")
    if explicit:
        path = Path(explicit).expanduser()
    elif sys.platform == "darwin":
        path = Path.home() / "Library" / "Application Support" / "hermes-rl-mcp"
    elif os.name == "nt":
        path = Path(os.environ.get("LOCALAPPDATA", Path.home())) / "hermes-rl-mcp"
    else:
        path = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "hermes-rl-mcp"
    # Every run tool asks for it: a stat when it exists costs a tenth of a refused mkdir.
    if not os.path.isdir(path):
        path.mkdir(parents=True, exist_ok=True)
    return path


def environment_dirs() -> list[Path]:
    """The bundled tree, every directory in ``HERMES_RL_ENV_DIRS`` (os.pathsep-separated), and the
    writable environment directory, if the operator named one."""
    dirs = [BUNDLED_ENV_DIR] if BUNDLED_ENV_DIR.is_dir() else []
    for entry in os.environ.get("HERMES_RL_ENV_DIRS", "").split(os.pathsep):
        if entry.strip():
            dirs.append(Path(entry.strip()).expanduser().resolve())
    writable = writable_environment_dir()
    if writable is not None and writable not in dirs:
        dirs.append(writable)
    return dirs


WRITABLE_ENV_DIR_VARIABLE = "HERMES_RL_WRITABLE_ENV_DIR"


def writable_environment_dir() -> Path | None:
    """Where agents may write environments (``HERMES_RL_WRITABLE_ENV_DIR``); None: writing is off.

    Created on first use, since naming it is the operator's permission; one that cannot be
    created is reported by discovery as a missing directory."""
    value = os.environ.get(WRITABLE_ENV_DIR_VARIABLE, "").strip()
    if not value:
        return None
    path = Path(value).expanduser().resolve()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        pass
    return path


CHECK_TIMEOUT_VARIABLE = "HERMES_RL_CHECK_TIMEOUT"
DEFAULT_CHECK_TIMEOUT_S = 30.0
CHECK_TIMEOUT_RANGE_S = (2.0, 120.0)


def check_timeout() -> float:
    """Seconds an environment check (import, config, dry run) may take: ``HERMES_RL_CHECK_TIMEOUT``,
    clamped to 2..120; a value that is not a number gives the default."""
    try:
        value = float(os.environ.get(CHECK_TIMEOUT_VARIABLE, "") or DEFAULT_CHECK_TIMEOUT_S)
    except ValueError:
        return DEFAULT_CHECK_TIMEOUT_S
    low, high = CHECK_TIMEOUT_RANGE_S
    return min(max(value, low), high)


def profile_override(backend: str) -> Path | None:
    """An operator's replacement for a backend's locked profile: ``HERMES_RL_PROFILE_<BACKEND>``."""
    value = os.environ.get(f"HERMES_RL_PROFILE_{backend.upper()}")
    return Path(value).expanduser() if value else None


def endpoints_file() -> Path | None:
    """The operator's named OpenAI-compatible endpoints: the YAML file ``HERMES_RL_ENDPOINTS``.

    Only the operator's environment sets it; an agent picks an endpoint by its name and never
    supplies an address, so a key goes only where the operator sent it.
    """
    value = os.environ.get("HERMES_RL_ENDPOINTS", "").strip()
    return Path(value).expanduser() if value else None
