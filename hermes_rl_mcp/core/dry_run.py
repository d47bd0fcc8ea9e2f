"""A dry run of an environment: a few groups collected and scored, exactly as a run's environment
process collects them, against a policy endpoint; nothing is sent to a trajectory API.

Meant to run inside a sandboxed child process (``core.check_child``) since it executes the
environment's code. ``serve_initial_policy`` serves the local backend's policy as a fresh run
starts with it, so an environment can be tried before anything is trained; ``dry_run_groups``
takes any OpenAI-compatible policy URL, so the same loop can try an environment against other
endpoints too.
"""

from __future__ import annotations

import math
import socket
import tempfile
import time
import traceback
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from hermes_rl_mcp import yaml_text
from hermes_rl_mcp.sdk.base import BaseEnv
from hermes_rl_mcp.sdk.env_types import PROMPT_MASK

SHOWN_COMPLETIONS = 4  # completions shown per group; the scores cover all of them
SHOWN_CHARS = 200


@dataclass
class GroupOutcome:
    """One group of the dry run: what the environment scored, or where it failed."""

    index: int
    scores: list[float] = field(default_factory=list)
    completions: list[str] = field(default_factory=list)
    prompt: str = ""
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)
    error: BaseException | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "index": self.index, "scores": self.scores, "completions": self.completions, "prompt": self.prompt,
            "seconds": round(self.seconds, 3), "problems": self.problems,
        }


@asynccontextmanager
async def serve_initial_policy(seed: int = 0, hidden_size: int = 64) -> AsyncIterator[str]:
    """The local backend's initial policy on a loopback port, in this event loop; yields its /v1 URL."""
    import numpy as np
    import uvicorn

    from hermes_rl_mcp.trainer.model import PolicyModel
    from hermes_rl_mcp.trainer.policy_server import PolicyHolder, build_app
    from hermes_rl_mcp.trainer.tokenizer import CharTokenizer

    model = PolicyModel.initialise(CharTokenizer(), hidden_size=hidden_size, seed=seed)
    holder = PolicyHolder(model=model, rng=np.random.default_rng(seed + 1))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    sock.setblocking(False)
    server = uvicorn.Server(uvicorn.Config(build_app(holder), log_level="warning", access_log=False, lifespan="off"))
    server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(server.serve, [sock])
            while not server.started:
                await anyio.sleep(0.01)
            try:
                yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
            finally:
                server.should_exit = True
    finally:
        sock.close()


async def dry_run_groups(
    env_cls: type[BaseEnv],
    policy_url: str,
    groups: int,
    *,
    decode: Callable[[list[int]], str] | None = None,
    on_stage: Callable[[str], None] = lambda stage: None,
) -> list[GroupOutcome]:
    """``setup`` once, then ``groups`` times ``get_next_item`` and ``collect_trajectories``.

    An exception in ``setup`` ends the dry run with one outcome holding it; an exception in a
    group is recorded in that group's outcome and the next group is still tried.
    """
    from hermes_rl_mcp.sdk.run_config import resolve
    from hermes_rl_mcp.sdk.runtime import EnvRuntime

    with tempfile.TemporaryDirectory(prefix="hermes-rl-dry-run-") as run_dir:
        document = {
            "run": {"dir": run_dir, "policy_url": policy_url},
            "env": {"use_wandb": False, "data_path_to_save_groups": None},
        }
        config_path = Path(run_dir) / "dry-run.yaml"
        config_path.write_text(yaml_text.dump(document), encoding="utf-8")
        on_stage("settings")
        runtime = EnvRuntime(env_cls, resolve(env_cls, config_path, []))
        try:
            on_stage("setup")
            try:
                await runtime.env.setup()
            except Exception as exc:  # noqa: BLE001 - the environment's own failure is the finding
                return [GroupOutcome(index=0, problems=[f"setup() raised {_brief(exc)}"], error=exc)]
            outcomes = []
            for index in range(groups):
                on_stage(f"group {index}")
                outcomes.append(await _one_group(runtime.env, index, runtime.config.group_size, decode))
            return outcomes
        finally:
            await runtime.close()


async def _one_group(env: BaseEnv, index: int, group_size: int, decode: Callable[[list[int]], str] | None) -> GroupOutcome:
    outcome = GroupOutcome(index=index)
    started = time.monotonic()
    try:
        item = await env.get_next_item()
        group, _backlog = await env.collect_trajectories(item)
    except Exception as exc:  # noqa: BLE001
        outcome.problems.append(f"{_stage_of(exc)} raised {_brief(exc)}")
        outcome.error = exc
        return outcome
    finally:
        outcome.seconds = time.monotonic() - started
    outcome.problems.extend(group_problems(group, group_size))
    if isinstance(group, dict):
        scores = group.get("scores")
        if isinstance(scores, list):
            outcome.scores = [float(s) if _is_number(s) else float("nan") for s in scores]
        if decode is not None:
            outcome.prompt, outcome.completions = _texts(group, decode)
    return outcome


def group_problems(group: Any, group_size: int) -> list[str]:
    """What a trainer would reject in a scored group, in words."""
    if group is None:
        return ["collect_trajectories returned no group (None): a run would count it as failed and retry forever"]
    if not isinstance(group, dict):
        return [f"collect_trajectories must return (ScoredDataGroup, backlog), its group was a {type(group).__name__}"]
    problems = [f"the group has no list {key!r}" for key in ("tokens", "masks", "scores") if not isinstance(group.get(key), list)]
    if problems:
        return problems
    tokens, masks, scores = group["tokens"], group["masks"], group["scores"]
    if not len(tokens) == len(masks) == len(scores):
        problems.append(f"the group has {len(tokens)} token lists, {len(masks)} mask lists and {len(scores)} scores")
    if len(scores) != group_size:
        problems.append(f"the group has {len(scores)} completions but env.group_size is {group_size}")
    bad = [s for s in scores if not _is_number(s) or not math.isfinite(float(s))]
    if bad:
        problems.append(f"scores must be finite numbers; got {bad[:3]!r}")
    for position, (sequence, mask) in enumerate(zip(tokens, masks)):
        if not isinstance(sequence, list) or not isinstance(mask, list) or len(sequence) != len(mask):
            problems.append(f"sequence {position}: tokens and masks must be lists of the same length")
            break
    return problems


def error_lines(error: BaseException, file: Path) -> tuple[int | None, list[str]]:
    """The line of ``file`` where ``error`` was raised (deepest frame there) and its traceback's last lines."""
    frames = traceback.extract_tb(error.__traceback__)
    target = str(file.resolve())
    line = next((f.lineno for f in reversed(frames) if _same_file(f.filename, target)), None)
    if line is None and isinstance(error, SyntaxError) and _same_file(error.filename or "", target):
        line = error.lineno
    tail = "".join(traceback.format_exception(error)).rstrip().splitlines()[-6:]
    return line, tail


def _same_file(filename: str, target: str) -> bool:
    try:
        return str(Path(filename).resolve()) == target
    except (OSError, ValueError):
        return False


def _stage_of(error: BaseException) -> str:
    names = [f.name for f in traceback.extract_tb(error.__traceback__)]
    for method in ("collect_trajectories", "collect_trajectory", "get_next_item", "score"):
        if method in names:
            return f"{method}()"
    return "collecting the group"


def _brief(error: BaseException) -> str:
    text = str(error)
    return f"{type(error).__name__}: {text[:300]}" if text else type(error).__name__


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _texts(group: dict[str, Any], decode: Callable[[list[int]], str]) -> tuple[str, list[str]]:
    prompt = ""
    completions = []
    for sequence, mask in list(zip(group["tokens"], group["masks"]))[:SHOWN_COMPLETIONS]:
        if not isinstance(sequence, list) or not isinstance(mask, list):
            continue
        try:
            generated = [t for t, m in zip(sequence, mask) if m != PROMPT_MASK]
            prompt = prompt or decode([t for t, m in zip(sequence, mask) if m == PROMPT_MASK])[-SHOWN_CHARS:]
            completions.append(decode(generated)[:SHOWN_CHARS])
        except (IndexError, KeyError, TypeError):
            continue  # token ids of another tokenizer: the scores still stand
    return prompt, completions
