"""Policy endpoints an agent may use by name: the local policy at initialisation, a run's
checkpoint, or an OpenAI-compatible endpoint the operator named.

The operator names endpoints in the YAML file ``HERMES_RL_ENDPOINTS``::

    endpoints:
      my-model:
        base_url: http://127.0.0.1:9000/v1
        model: some-model
        api_key_env: MY_MODEL_KEY   # optional: the variable that holds its key

An agent never passes an address, so a key only ever goes where the operator sent it; the key
itself stays in the operator's environment and is handed on only to the process that calls
that endpoint. The local policy and checkpoints are served by ``hermes-rl-mcp policy`` on a
free loopback port for as long as they are used (:func:`serving`).
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hermes_rl_mcp import settings, yaml_text
from hermes_rl_mcp.backend_names import DEFAULT_BACKEND, TINKER
from hermes_rl_mcp.core.errors import EndpointUnavailable, NoCheckpoint, UnknownEndpoint, excerpt
from hermes_rl_mcp.run_document import LOCAL_API_KEY, LOCAL_MODEL_NAME, RunDocument
from hermes_rl_mcp.runs.childenv import minimal_environment
from hermes_rl_mcp.runs.probe import http_ok

LOCAL_ENDPOINT = "local"
START_TIMEOUT_S = 60.0
TINKER_START_TIMEOUT_S = 300.0
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
ENV_VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


class NamedEndpoint(BaseModel):
    """One entry of the operator's endpoints file."""

    model_config = ConfigDict(extra="forbid")

    base_url: str = Field(pattern=r"^https?://", description="OpenAI-compatible base URL, ending in /v1 as a rule.")
    model: str = Field(min_length=1, max_length=500)
    api_key_env: str | None = Field(None, pattern=ENV_VARIABLE.pattern)


class Endpoint(BaseModel):
    """A policy an agent may sample from, as tools show it (never a key)."""

    name: str = Field(description="'local', an operator endpoint's name, or 'run <run_id> step <n>'.")
    kind: Literal["local_init", "checkpoint", "openai"]
    model: str
    base_url: str | None = Field(None, description="Only for operator endpoints; served policies get a loopback port.")
    key_variable: str | None = Field(None, description="The variable holding the endpoint's key (its name, never its value).")
    run_id: str | None = None
    step: int | None = None
    backend: str = DEFAULT_BACKEND
    checkpoint: str | None = Field(None, description="The checkpoint archive or the tinker:// sampler weights served.")
    state: str | None = Field(
        None, description="For a tinker checkpoint: the run's saved training state, served instead when the engine no "
        "longer holds the sampler weights' adapter (a self-hosted engine, once the run ended).",
    )
    lora_rank: int | None = Field(None, description="For a tinker checkpoint: the run's LoRA rank.")
    seed: int | None = Field(None, description="The local policy's initialisation seed (trainer.seed), for 'local'.")
    hidden_size: int | None = Field(None, description="The local policy's width (trainer.hidden_size), for 'local'.")


@dataclass(frozen=True)
class Served:
    """An endpoint: where, which model, which variable holds its key; for a served policy, the
    health URL that answers once it is ready and the wait for that."""

    base_url: str
    model: str
    key_variable: str | None
    api_key: str
    health_url: str | None = None
    wait_ready: Callable[[], None] = lambda: None


def named_endpoints() -> dict[str, NamedEndpoint]:
    """The operator's endpoints; an unreadable file is reported, never half-read."""
    path = settings.endpoints_file()
    if path is None:
        return {}
    try:
        data = yaml_text.load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml_text.YAMLError) as exc:
        raise EndpointUnavailable(f"the operator's endpoints file (HERMES_RL_ENDPOINTS) cannot be read: {exc}") from None
    entries = data.get("endpoints") if isinstance(data, dict) else None
    if not isinstance(entries, dict):
        raise EndpointUnavailable("the operator's endpoints file (HERMES_RL_ENDPOINTS) needs a mapping 'endpoints: {name: {base_url, model, api_key_env}}'")
    found: dict[str, NamedEndpoint] = {}
    for name, entry in entries.items():
        if not isinstance(name, str) or not NAME_PATTERN.match(name) or name == LOCAL_ENDPOINT:
            raise EndpointUnavailable(f"the operator's endpoints file names an invalid endpoint {excerpt(name)}")
        try:
            found[name] = NamedEndpoint.model_validate(entry)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise EndpointUnavailable(f"endpoint {name!r} in the operator's endpoints file is invalid: {problems}") from None
    return found


def endpoint_names() -> list[str]:
    return [LOCAL_ENDPOINT, *sorted(named_endpoints())]


def resolve_named(name: str, document: RunDocument | None = None) -> Endpoint:
    """``local`` (the local policy as a run of ``document`` would start) or an operator's name."""
    wanted = name.strip()
    if wanted == LOCAL_ENDPOINT:
        document = document or RunDocument()
        return Endpoint(
            name=LOCAL_ENDPOINT, kind="local_init", model=LOCAL_MODEL_NAME,
            seed=int(document.trainer_value("seed", 0)), hidden_size=int(document.trainer_value("hidden_size", 64)),
        )
    named = named_endpoints()
    entry = named.get(wanted)
    if entry is None:
        valid = ", ".join(endpoint_names())
        raise UnknownEndpoint(
            f"no endpoint named {excerpt(name)}. Valid endpoints: {valid} (operators name more in the file "
            "HERMES_RL_ENDPOINTS); or pass run_id to use a run's checkpoint"
        )
    return Endpoint(name=wanted, kind="openai", model=entry.model, base_url=entry.base_url, key_variable=entry.api_key_env)


def resolve_checkpoint(results: Any, step: int | None = None) -> Endpoint:
    """A run's final checkpoint (else its latest), or the one at ``step``, from ``runs.get_results``."""
    usable = [c for c in results.checkpoints if c.exists is not False]
    if results.backend == TINKER:
        usable = [c for c in usable if c.sampler_path]
    if not usable:
        raise NoCheckpoint(
            f"run {results.run_id} ({results.status}) has no checkpoint to serve yet"
            + ("; tinker runs are served from their saved sampler weights" if results.backend == TINKER else "")
            + ". Checkpoints are written every trainer.checkpoint_interval steps and at the end; check again later or pick another run"
        )
    if step is None:
        finals = [c for c in usable if c.kind == "final"]
        chosen = (finals or usable)[-1]
    else:
        matching = [c for c in usable if c.step == step]
        if not matching:
            steps = ", ".join(str(c.step) for c in usable)
            raise NoCheckpoint(f"run {results.run_id} has no checkpoint at step {step}; its checkpoints are at steps {steps}")
        chosen = matching[-1]
    trainer = results.config.get("trainer") or {}
    if results.backend == TINKER:
        return Endpoint(
            name=f"run {results.run_id} step {chosen.step}", kind="checkpoint", model=str(trainer.get("base_model", "")),
            run_id=results.run_id, step=chosen.step, backend=TINKER, checkpoint=chosen.sampler_path,
            state=chosen.path, lora_rank=_int_or_none(trainer.get("lora_rank")),
        )
    return Endpoint(
        name=f"run {results.run_id} step {chosen.step}", kind="checkpoint", model=LOCAL_MODEL_NAME,
        run_id=results.run_id, step=chosen.step, backend=results.backend, checkpoint=chosen.path,
    )


def policy_command(endpoint: Endpoint, port: int) -> tuple[list[str], tuple[str, ...]]:
    """The command serving a local or checkpoint endpoint on ``port``, and the variables it needs."""
    from hermes_rl_mcp.runs.evaluation import policy_argv

    if endpoint.kind == "local_init":
        return policy_argv(port, seed=endpoint.seed or 0, hidden_size=endpoint.hidden_size or 64)
    if endpoint.kind != "checkpoint" or endpoint.checkpoint is None:
        raise ValueError(f"endpoint {endpoint.name!r} is not served by this machine")
    return policy_argv(port, checkpoint=endpoint.checkpoint, backend=endpoint.backend, base_model=endpoint.model,
                       state=endpoint.state, lora_rank=endpoint.lora_rank, step=endpoint.step or 0)


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _free_port() -> int:
    from hermes_rl_mcp.runs.backends import free_port

    return free_port()


@contextmanager
def serving(endpoint: Endpoint, work_dir: Path, *, ready: bool = True) -> Iterator[Served]:
    """The endpoint for the duration of the block; a served policy ends with it.

    With ``ready=False`` the block starts as soon as the policy server is spawned, so a caller
    can start what will use it meanwhile (behind a start gate on ``health_url``) and then call
    ``wait_ready()``: the two processes' imports overlap.
    """
    if endpoint.kind == "openai":
        assert endpoint.base_url is not None
        key = os.environ.get(endpoint.key_variable, "") if endpoint.key_variable else ""
        if endpoint.key_variable and not key:
            raise EndpointUnavailable(
                f"endpoint {endpoint.name!r} takes its key from {endpoint.key_variable}, which is not set in the "
                "server's environment; the operator sets it in the client's env block for this server"
            )
        yield Served(endpoint.base_url, endpoint.model, endpoint.key_variable, key or LOCAL_API_KEY)
        return
    from hermes_rl_mcp.runs.procs import start_time_of, terminate_trees

    port = _free_port()
    argv, variables = policy_command(endpoint, port)
    log_path = work_dir / "policy.log"
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=work_dir,
            env=minimal_environment(variables), start_new_session=True, close_fds=True,
        )
    started = start_time_of(process.pid)
    health_url = f"http://127.0.0.1:{port}/health"
    served = Served(f"http://127.0.0.1:{port}/v1", endpoint.model, None, LOCAL_API_KEY, health_url,
                    lambda: _wait_healthy(process, health_url, log_path, endpoint))
    try:
        if ready:
            served.wait_ready()
        yield served
    finally:
        terminate_trees([(process.pid, started)], grace=2.0, reap=process.poll)
        process.poll()


def _wait_healthy(process: subprocess.Popen[bytes], url: str, log_path: Path, endpoint: Endpoint) -> None:
    timeout = TINKER_START_TIMEOUT_S if endpoint.backend == TINKER else START_TIMEOUT_S
    deadline = time.monotonic() + timeout
    while not http_ok(url):
        code = process.poll()
        if code is not None or time.monotonic() > deadline:
            from hermes_rl_mcp.runs.redact import redact_text

            tail = redact_text(log_path.read_text(encoding="utf-8", errors="replace")[-1200:].strip())
            why = f"exited with code {code}" if code is not None else f"did not answer within {timeout:.0f} s"
            raise EndpointUnavailable(f"the policy server for {endpoint.name} {why}: {tail}")
        time.sleep(0.05)


def choose(name: str | None, run_id: str | None, step: int | None, *, state: Path, document: RunDocument | None = None) -> Endpoint:
    """The endpoint a tool call asks for: by name, or a run's checkpoint (``run_id``, ``step``)."""
    if run_id is not None:
        if name is not None:
            raise UnknownEndpoint("give either endpoint (a name) or run_id (a run's checkpoint), not both")
        from hermes_rl_mcp import runs

        return resolve_checkpoint(runs.get_results(run_id, state=state), step)
    if step is not None:
        raise NoCheckpoint("step chooses a checkpoint of a run: pass run_id with it")
    return resolve_named(name or LOCAL_ENDPOINT, document)
