"""Environments written by an agent: create one in the operator's writable directory, check any.

A new file is first written to a hidden staging directory inside the writable directory
(discovery skips hidden directories, so no listing sees it; one left by a killed server is
removed by the next create), checked there, and only when no problem was found linked into
place under its name, which fails rather than replaces a file that appeared meanwhile. A
refused source therefore leaves every directory as it was.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from hermes_rl_mcp import settings
from hermes_rl_mcp.core.check_models import EnvironmentCheck
from hermes_rl_mcp.core.control import ControlPlane
from hermes_rl_mcp.core.env_check import check_file
from hermes_rl_mcp.core.errors import ControlError, UnknownEnvironment, excerpt
from hermes_rl_mcp.runs.procs import read_stat

NAME_PATTERN = re.compile(r"[a-z][a-z0-9_]{0,63}")
MAX_SOURCE_CHARS = 200_000
# A staging directory is named after the server process writing it: one whose process is gone
# (a server killed mid-create) is removed by the next create.
STAGING_PREFIX = ".staging-"
_STAGING_NAME = re.compile(re.escape(STAGING_PREFIX) + r"([0-9]+)-")


class AuthoringDisabled(ControlError):
    """The operator has not named a writable environment directory."""


class InvalidEnvironmentName(ControlError):
    pass


class EnvironmentExists(ControlError):
    pass


class InvalidSource(ControlError):
    pass


class EnvironmentRejected(ControlError):
    """The source has problems; it was not written."""


def create_environment(control: ControlPlane, name: str, source: str) -> EnvironmentCheck:
    """Write ``<name>.py`` into the writable directory if it passes every check."""
    directory = settings.writable_environment_dir()
    if directory is None:
        raise AuthoringDisabled(
            "writing environments is not enabled: the operator enables it by naming a writable directory in "
            f"the server's environment, {settings.WRITABLE_ENV_DIR_VARIABLE}=/path/to/dir (for Hermes Agent, in the "
            "env: block of the server's entry in config.yaml); that directory is then also scanned for environments. "
            "rl_check_environment(name) checks any listed environment without it"
        )
    _check_name(name)
    if not isinstance(source, str) or not source.strip() or len(source) > MAX_SOURCE_CHARS:
        size = len(source) if isinstance(source, str) else type(source).__name__
        raise InvalidSource(f"source must be the Python text of the environment file, 1 to {MAX_SOURCE_CHARS} characters (got {size})")
    target = directory / f"{name}.py"
    if target.exists():
        raise EnvironmentExists(f"{target.name} already exists in the writable directory: choose another name (nothing was written)")
    listing = control.list_environments()
    taken = {env.name: env.file for env in listing.environments}
    if name in taken:
        raise EnvironmentExists(
            f"an environment named {name!r} already exists ({taken[name]}): choose another name (nothing was written)"
        )
    directory.mkdir(parents=True, exist_ok=True)
    _remove_abandoned_staging(directory)
    staging = Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{os.getpid()}-", dir=directory))
    try:
        staged = staging / target.name
        staged.write_text(source, encoding="utf-8")
        scanned = [Path(d) for d in listing.scanned_dirs]
        check = check_file(staged, [*scanned, staging], bound=settings.check_timeout())
        if not check.ok:
            listed = "; ".join(problem.shown() for problem in check.problems)
            raise EnvironmentRejected(
                f"{target.name} was not written; {len(check.problems)} problem(s) found: {listed} -- "
                "fix them and call rl_create_environment again"
            )
        try:
            os.link(staged, target)  # fails, rather than replaces, if the name was taken meanwhile
        except FileExistsError:
            raise EnvironmentExists(f"{target.name} appeared in the writable directory meanwhile: choose another name") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return check.model_copy(update={"file": str(target), "written": True})


def _remove_abandoned_staging(directory: Path) -> None:
    for entry in directory.glob(f"{STAGING_PREFIX}*"):
        owner = _STAGING_NAME.match(entry.name)
        if owner is not None and entry.is_dir() and read_stat(int(owner.group(1))) is None:
            shutil.rmtree(entry, ignore_errors=True)


def check_environment(control: ControlPlane, name: str) -> EnvironmentCheck:
    """The same checks on a listed environment, whichever directory it is in."""
    listing = control.list_environments()
    wanted = name.strip() if isinstance(name, str) else name
    env = next((e for e in listing.environments if e.name == wanted), None)
    directories = [Path(d) for d in listing.scanned_dirs]
    if env is None:
        # A file discovery could not read is checked by its name, so its problems show with their lines.
        broken = next((Path(p.file) for p in listing.problems if Path(p.file).suffix == ".py" and Path(p.file).stem == wanted), None)
        if broken is not None:
            return check_file(broken, directories, bound=settings.check_timeout())
        names = ", ".join(e.name for e in listing.environments) or "none found"
        raise UnknownEnvironment(f"no environment named {excerpt(name)}. Available: {names}.")
    return check_file(Path(env.file), directories, bound=settings.check_timeout())


def _check_name(name: object) -> None:
    if not isinstance(name, str) or NAME_PATTERN.fullmatch(name) is None:
        raise InvalidEnvironmentName(
            f"invalid environment name {excerpt(name)}: a name is 1 to 64 lowercase letters, digits and underscores, "
            "starting with a letter (it becomes <name>.py in the writable directory; no paths, dots or slashes)"
        )
