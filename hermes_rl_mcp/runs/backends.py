"""Backends decide which three processes a run spawns and how each is known to be ready.

``local`` runs the trajectory API, the NumPy trainer and the environment on this machine.
``tinker`` trains an LLM through the Tinker API (``tinker_backend``).
An operator may add backends without touching this package: ``HERMES_RL_BACKENDS`` holds
``name=module:attribute`` entries (separated by commas) naming objects with the same shape as
``LocalBackend``; only the operator's environment can set it, never a run's config.
"""

from __future__ import annotations

import importlib
import os
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from hermes_rl_mcp.backend_names import BUILTIN_BACKENDS, LOCAL, TINKER
from hermes_rl_mcp.runs.errors import BackendUnavailable

if TYPE_CHECKING:  # the supervisor imports this module and pays for no model it does not use
    from hermes_rl_mcp.run_document import RunDocument

PortRole = Literal["api", "policy"]
# The operator's W&B key, and the address of a self-hosted W&B server if there is one.
WANDB_VARIABLES = ("WANDB_API_KEY", "WANDB_BASE_URL")


@dataclass(frozen=True)
class Ports:
    api: int
    policy: int

    def of(self, role: PortRole) -> int:
        return self.api if role == "api" else self.policy


def free_port() -> int:
    """A port nobody listens on right now. Another process may take it before the component
    binds it; a component that then fails with "address in use" is restarted on a new port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def allocate_ports() -> Ports:
    ports = Ports(api=free_port(), policy=free_port())
    while ports.policy == ports.api:
        ports = Ports(api=ports.api, policy=free_port())
    return ports


@dataclass(frozen=True)
class ComponentSpec:
    """How to start one component and when it counts as ready.

    ``health_url``: ready once a GET answers 200. Without one, ready once the process is alive
    and a GET of ``ready_url`` (if given) answers 200, for components without an HTTP endpoint
    of their own (the environment is ready once the trajectory API knows it). Plain data: the
    server writes it into the run's launch plan (runs/launch.py).
    """

    name: str
    argv: list[str]
    port_role: PortRole | None = None
    health_url: str | None = None
    ready_timeout: float = 120.0
    extra_env_keys: tuple[str, ...] = ()
    ready_url: str | None = None
    stop_grace: float = 2.0  # seconds from SIGTERM to SIGKILL when the run ends
    finishes_run: bool = False  # its clean exit completes the run (an evaluation's environment)


class Backend(Protocol):
    name: str
    stop_grace: float  # the longest a component may take to end well after SIGTERM
    stall_after: float  # seconds without a new step before status shows the run as stalled
    stall_fail: float  # seconds without a new step before the run fails

    def check(self, config: RunDocument, environ: dict[str, str] | os._Environ[str]) -> None:
        """Raise ``BackendUnavailable`` when the run cannot start on this machine."""

    def components(self, config: RunDocument, config_path: Path, ports: Ports) -> list[ComponentSpec]:
        """The components in start order (api, trainer, env)."""

    def secret_keys(self) -> tuple[str, ...]:
        """Environment variables (keys) this backend's components need from the operator."""


class LocalBackend:
    name = LOCAL
    stop_grace = 2.0  # seconds from SIGTERM to SIGKILL for its components
    # A local step takes well under a second: no new step for this long is shown as a stall,
    # and fails the run after the longer limit (operator: HERMES_RL_STALL_AFTER_S / _FAIL_S).
    stall_after = 30.0
    stall_fail = 180.0

    def check(self, config: RunDocument, environ: Any) -> None:
        env_file = config.run.env_file
        if not env_file or not Path(env_file).is_file():
            raise BackendUnavailable(
                f"run.env_file {env_file!r} is not a file: the local backend runs the environment file with "
                "'python <env_file> serve'; select an environment so its file is known"
            )

    def components(self, config: RunDocument, config_path: Path, ports: Ports) -> list[ComponentSpec]:
        python = sys.executable
        env_file = str(Path(config.run.env_file or "").resolve())
        return [
            ComponentSpec(
                name="api",
                argv=[python, "-m", "hermes_rl_mcp", "api", "--port", str(ports.api)],
                port_role="api",
                health_url=f"http://127.0.0.1:{ports.api}/health",
                ready_timeout=60.0,
            ),
            ComponentSpec(
                name="trainer",
                argv=[python, "-m", "hermes_rl_mcp", "trainer", "--config", str(config_path)],
                port_role="policy",
                health_url=f"http://127.0.0.1:{ports.policy}/health",
                ready_timeout=180.0,
                extra_env_keys=WANDB_VARIABLES,
            ),
            ComponentSpec(
                name="env",
                argv=[python, env_file, "serve", "--config", str(config_path)],
                # The environment has no endpoint of its own: it is ready once the trajectory
                # API knows it (the run's only environment registers as env 0).
                ready_url=f"http://127.0.0.1:{ports.api}/status-env?env_id=0",
                ready_timeout=120.0,
                extra_env_keys=WANDB_VARIABLES,
            ),
        ]

    def secret_keys(self) -> tuple[str, ...]:
        return WANDB_VARIABLES


def _plugins(environ: Any) -> dict[str, str]:
    entries: dict[str, str] = {}
    for entry in environ.get("HERMES_RL_BACKENDS", "").split(","):
        name, sep, target = entry.strip().partition("=")
        if sep and name.strip() and target.strip():
            entries[name.strip()] = target.strip()
    return entries


def job_backend(document: RunDocument, environ: Any = None) -> Backend:
    """What spawns the components of this run document: its backend, or an evaluation on it."""
    backend = resolve_backend(document.run.backend, environ)
    if document.run.job == "evaluate":
        from hermes_rl_mcp.runs.evaluation import EvaluationJob

        return EvaluationJob(backend)
    return backend


def backend_names(environ: Any = None) -> list[str]:
    return [*BUILTIN_BACKENDS, *sorted(_plugins(os.environ if environ is None else environ))]


def resolve_backend(name: object, environ: Any = None) -> Backend:
    source = os.environ if environ is None else environ
    if name == LOCAL:
        return LocalBackend()
    if name == TINKER:
        from hermes_rl_mcp.runs.tinker_backend import TinkerBackend

        return TinkerBackend()
    target = _plugins(source).get(name) if isinstance(name, str) else None
    if target is None:
        raise BackendUnavailable(
            f"unknown backend {name!r}: valid backends are {', '.join(backend_names(source))}"
        )
    module_name, _, attribute = target.partition(":")
    try:
        found: Any = importlib.import_module(module_name)
        for part in attribute.split(".") if attribute else []:
            found = getattr(found, part)
    except (ImportError, AttributeError) as exc:
        raise BackendUnavailable(f"backend {name!r} ({target}) cannot be loaded: {exc}") from exc
    return found() if isinstance(found, type) else found
