"""Runs an environment: ``serve`` (feed the trajectory API), ``process`` (scored groups to JSONL
without the API), ``evaluate`` (the held-out evaluation alone) or ``trial`` (a few groups
against an endpoint, reported in full; see :mod:`hermes_rl_mcp.sdk.trial`).

``python env.py serve --config run.yaml [--env.FIELD v] [--openai.FIELD v]``; see
:mod:`hermes_rl_mcp.sdk.run_config` for how the configuration is merged.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from hermes_rl_mcp.metrics_log import MetricsLog
from hermes_rl_mcp.sdk.env_types import PROMPT_MASK, ScoredDataGroup
from hermes_rl_mcp.sdk.run_config import ConfigError, RunSettings, resolve
from hermes_rl_mcp.start_gate import wait_for_predecessor

if TYPE_CHECKING:  # annotations only: the environment class imports the runtime, not back
    from hermes_rl_mcp.sdk.base import BaseEnv

MODES = ("serve", "process", "evaluate", "trial")
STATUS_POLL_S = 0.1
GATE_POLL_S = 0.02
POLICY_POLL_S = 0.05
API_GRACE_S = 30.0  # how long the trajectory API may be unreachable before the env gives up
POLICY_GRACE_S = 60.0  # same for the policy endpoint
DEFAULT_WORKERS = 4  # groups generated at once; the policy server batches the n of each
PROCESS_ATTEMPTS_PER_GROUP = 10  # process mode gives up after this many items per wanted group


def log(message: str) -> None:
    print(f"[env] {message}", file=sys.stderr, flush=True)


def _equal_scores(scores: list[float]) -> bool:
    return len(scores) > 1 and max(scores) - min(scores) < 1e-9


STARVATION_STREAK = 48


class EqualScoreFilter:
    """Drops groups whose scores are all equal, as ``ensure_scores_are_not_same`` asks, but not
    forever: once ``limit`` such groups come in a row (the policy has mastered the items, or
    collapsed onto one answer), they are let through until a group with differing scores
    appears. Their advantages are zero, so they move the trainer's step counter without moving
    its weights; dropping them all would leave the trainer waiting and the run never finishing.
    """

    def __init__(self, limit: int = STARVATION_STREAK) -> None:
        self.limit = limit
        self.streak = 0

    def admit(self, scores: list[float]) -> bool:
        if not _equal_scores(scores):
            self.streak = 0
            return True
        self.streak += 1
        return self.streak > self.limit


class GroupStats:
    """What the runtime counts between metric records."""

    def __init__(self) -> None:
        self.sent = 0
        self.dropped_same_score = 0
        self.sent_same_score = 0
        self.dropped_too_long = 0
        self.failed = 0
        self._lengths: list[int] = []

    def record_lengths(self, group: ScoredDataGroup) -> None:
        for masks in group.get("masks", []):
            self._lengths.append(sum(1 for m in masks if m != PROMPT_MASK))

    def metrics(self) -> dict[str, float]:
        out: dict[str, float] = {
            "env/groups_sent": self.sent,
            "env/groups_dropped_same_score": self.dropped_same_score,
            "env/groups_sent_same_score": self.sent_same_score,
            "env/groups_dropped_too_long": self.dropped_too_long,
            "env/groups_failed": self.failed,
        }
        if self._lengths:
            out["train/completion_length"] = sum(self._lengths) / len(self._lengths)
            self._lengths = []
        return out


class EnvRuntime:
    def __init__(self, env_cls: type[BaseEnv], settings: RunSettings) -> None:
        from hermes_rl_mcp.sdk.policy_client import PolicyClient

        self.settings = settings
        self.config = settings.env
        self.env = env_cls(settings.env, settings.servers)
        self.env.policy = PolicyClient(settings.servers, temperature=settings.temperature)
        self.metrics_log = MetricsLog(
            settings.run_dir / "metrics.jsonl",
            use_wandb=self.config.use_wandb,
            wandb_dir=settings.run_dir / "wandb",
            wandb_name=self.config.wandb_name,
            component="env",
        )
        self.step = 0
        self.logged: dict[str, float] = {}
        self.env.metrics_sink = self._record  # type: ignore[attr-defined]
        self.stats = GroupStats()
        self.equal_scores = EqualScoreFilter()
        self.workers = self.config.max_num_workers if self.config.max_num_workers > 0 else DEFAULT_WORKERS
        self.last_policy_ok = time.monotonic()

    def _record(self, metrics: dict[str, float]) -> None:
        self.logged.update(metrics)
        self.metrics_log.log(self.step, metrics)

    async def log_train_metrics(self) -> None:
        await self.env.wandb_log(self.stats.metrics())

    def keep(self, group: ScoredDataGroup | None) -> bool:
        """Whether a collected group goes to the trainer; counts the ones that do not."""
        if not group or not group.get("tokens"):
            self.stats.failed += 1
            return False
        scores = list(group["scores"])
        if self.config.ensure_scores_are_not_same:
            if not self.equal_scores.admit(scores):
                self.stats.dropped_same_score += 1
                return False
            if _equal_scores(scores):
                self.stats.sent_same_score += 1
        longest = max(len(tokens) for tokens in group["tokens"])
        if longest > self.config.max_token_length:
            self.stats.dropped_too_long += 1
            dropped = self.stats.dropped_too_long
            if dropped & (dropped - 1) == 0:  # the 1st, 2nd, 4th, 8th...: said, without flooding the log
                log(f"dropped a group ({dropped} so far): a sequence has {longest} tokens, more than "
                    f"env.max_token_length {self.config.max_token_length}; raise it or ask for shorter completions")
            return False
        self.stats.record_lengths(group)
        return True

    async def collect(self) -> ScoredDataGroup | None:
        """One item's group, or None when the policy failed (counted, retried by the caller)."""
        from hermes_rl_mcp.sdk.policy_client import PolicyError

        item = await self.env.get_next_item()
        try:
            group, _backlog = await asyncio.wait_for(self.env.collect_trajectories(item), self.config.worker_timeout)
        except (PolicyError, TimeoutError) as exc:
            self.stats.failed += 1
            if time.monotonic() - self.last_policy_ok > POLICY_GRACE_S:
                raise RuntimeError(f"the policy endpoint has failed for over {POLICY_GRACE_S:.0f} s: {exc}") from exc
            log(f"group failed, retrying: {exc}")
            await asyncio.sleep(0.5)
            return None
        self.last_policy_ok = time.monotonic()
        return group

    async def evaluate_safely(self, final: bool = False) -> dict[str, float] | None:
        from hermes_rl_mcp.sdk.policy_client import PolicyError, evaluating

        started = time.monotonic()
        try:
            with evaluating():
                result = await self.env.evaluate()
        except PolicyError as exc:
            log(f"{'final ' if final else ''}evaluation at step {self.step} failed: {exc}")
            return None
        self.metrics_log.log(self.step, {"eval/duration_s": round(time.monotonic() - started, 3)})
        metrics = result if isinstance(result, dict) else {k: v for k, v in self.logged.items() if k.startswith("eval/")}
        log(f"evaluation at step {self.step}: {json.dumps(metrics)}")
        return metrics

    async def close(self) -> None:
        try:
            await self.env.policy.aclose()
        finally:  # a second signal while closing the policy still closes the metrics
            task = asyncio.current_task()
            # Cancelled means stopped by a signal: end within the supervisor's grace period.
            self.metrics_log.close(hurry=task is not None and task.cancelling() > 0)


class Server:
    """``serve``: keep the trajectory API's queue fed until the trainer reaches total_steps."""

    def __init__(self, runtime: EnvRuntime) -> None:
        from hermes_rl_mcp.sdk.api_client import EnvStatus, TrajectoryAPIClient

        self.rt = runtime
        self.config = runtime.config
        self.api = TrajectoryAPIClient(self.config.rollout_server_url)
        self.status = EnvStatus()
        self.env_id = -1
        self.batch_size = max(self.config.batch_size, 1)
        self.inflight = 0
        self.posted = 0
        self.posted_at_status = 0
        self.paused = False
        self.active_limit = runtime.workers

    def queued_groups(self) -> int:
        return self.status.queue_size + (self.posted - self.posted_at_status)

    def can_start(self) -> bool:
        if self.paused or self.inflight >= self.active_limit:
            return False
        group = self.config.group_size
        ahead = (self.queued_groups() + self.inflight) * group
        if self.rt.step + ahead / self.batch_size >= self.config.total_steps:
            return False  # enough is queued or in flight to finish the run
        limit = max(1, self.config.max_batches_offpolicy * self.batch_size // group)
        return self.queued_groups() + self.inflight < limit

    async def worker(self) -> None:
        while True:
            while not self.can_start():
                await asyncio.sleep(GATE_POLL_S)
            self.inflight += 1  # until the group is posted or dropped, so the queue limit holds
            try:
                group = await self.rt.collect()
                if group is not None and self.rt.keep(group):
                    group["env_id"] = self.env_id
                    await self.api.send_group(group, patience_s=API_GRACE_S)
                    self.posted += 1
                    self.rt.stats.sent += 1
            finally:
                self.inflight -= 1

    async def register(self) -> None:
        from hermes_rl_mcp.sdk.api_client import TrajectoryAPIError

        registration = await self.api.register_env(
            {
                "max_token_length": self.config.max_token_length,
                "desired_name": self.rt.env.name or type(self.rt.env).__name__,
                "weight": self.config.inference_weight,
                "group_size": self.config.group_size,
                "min_batch_allocation": self.config.min_batch_allocation,
            },
            deadline_s=API_GRACE_S,
        )
        self.env_id = registration.env_id
        self.rt.step = registration.starting_step
        # The trainer's batch size wins (as in Atropos); it is known once a trainer registered.
        deadline = time.monotonic() + 10
        while True:
            try:
                trainer_batch = await self.api.batch_size()
            except TrajectoryAPIError:
                trainer_batch = -1
            if trainer_batch > 0 or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.05)
        if trainer_batch > 0:
            self.batch_size = trainer_batch
        elif self.config.batch_size > 0:
            self.batch_size = self.config.batch_size
        else:
            self.batch_size = int(self.rt.settings.document.trainer_value("batch_size", 64))
        log(
            f"registered as env {self.env_id} at {self.config.rollout_server_url}; batch_size {self.batch_size}, "
            f"group_size {self.config.group_size}, total_steps {self.config.total_steps}, starting at step {self.rt.step}"
        )

    async def poll_status(self, last_ok: float) -> float:
        from hermes_rl_mcp.sdk.api_client import TrajectoryAPIError

        posted_before = self.posted
        try:
            self.status = await self.api.status(self.env_id)
        except TrajectoryAPIError as exc:
            if time.monotonic() - last_ok > API_GRACE_S:
                raise RuntimeError(f"the trajectory API has been unreachable for over {API_GRACE_S:.0f} s: {exc}") from exc
            return last_ok
        self.posted_at_status = posted_before
        return time.monotonic()

    async def run(self) -> int:
        await set_up(self.rt)
        await self.register()
        steps_per_eval = self.config.steps_per_eval
        eval_bucket = self.rt.step // steps_per_eval
        last_eval_step = -1
        last_logged_step = self.rt.step
        last_ok = await self.poll_status(time.monotonic())
        tasks = [asyncio.create_task(self.worker()) for _ in range(self.rt.workers)]
        try:
            while True:
                for task in tasks:
                    if task.done() and task.exception():
                        raise task.exception()  # type: ignore[misc]
                last_ok = await self.poll_status(last_ok)
                step = self.status.current_step
                if step != self.rt.step:
                    self.rt.step = step
                    if step != last_logged_step:
                        last_logged_step = step
                        await self.rt.log_train_metrics()
                if step >= self.config.total_steps:
                    break
                if step // steps_per_eval > eval_bucket:
                    eval_bucket = step // steps_per_eval
                    await self.evaluate_during_training()
                    last_eval_step = step
                await asyncio.sleep(STATUS_POLL_S)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        await self.rt.log_train_metrics()
        if last_eval_step != self.rt.step:
            await self.policy_trained_on(self.rt.step)
            await self.rt.evaluate_safely(final=True)
        await self.api.disconnect(self.env_id)
        await self.api.aclose()
        log(f"done at step {self.rt.step}: {self.rt.stats.sent} groups sent, {self.rt.stats.dropped_same_score} dropped for equal scores")
        return 0

    async def evaluate_during_training(self) -> None:
        handling = self.config.eval_handling
        if handling == "STOP_TRAIN":
            self.paused = True
        elif handling == "LIMIT_TRAIN":
            self.active_limit = max(1, int(self.rt.workers * self.config.eval_limit_ratio))
        try:
            await self.policy_trained_on(self.rt.step)
            await self.rt.evaluate_safely()
        finally:
            self.paused = False
            self.active_limit = self.rt.workers

    async def policy_trained_on(self, step: int) -> None:
        """Wait until the policy endpoint serves the weights of ``step``.

        The API counts a step when the trainer takes its batch, before it has trained on it: an
        evaluation started at once would measure the policy of the step before. Endpoints that
        report no step are not waited for; the wait is bounded by ``worker_timeout``.
        """
        deadline = time.monotonic() + self.config.worker_timeout
        while time.monotonic() < deadline:
            served = await reported_policy_step(self.rt.settings)
            if served is None or served >= step:
                return
            await asyncio.sleep(POLICY_POLL_S)
        log(f"the policy endpoint still serves an earlier step than {step} after {self.config.worker_timeout:g} s; evaluating it")


def inside_run_dir(run_dir: Path, relative: str) -> Path:
    """``relative`` under the run's directory; a path that leads out of it (by .., / or a link) is refused."""
    root = Path(run_dir).resolve()
    path = (root / relative).resolve()
    if not path.is_relative_to(root):
        raise ValueError(f"{relative!r} leads outside the run's directory {root}; give a path relative to it")
    return path


async def set_up(runtime: EnvRuntime) -> None:
    """The environment's ``setup()``, then, under a supervisor, the wait for the policy endpoint
    (its start gate): a slow setup overlaps with the start of the components before it."""
    await runtime.env.setup()
    await asyncio.to_thread(wait_for_predecessor)


async def process(runtime: EnvRuntime) -> int:
    """Collect ``total_steps`` kept groups and write them to JSONL, one group per line."""
    config = runtime.config
    await set_up(runtime)
    path = inside_run_dir(runtime.settings.run_dir, config.data_path_to_save_groups or f"{runtime.env.name or 'env'}_groups.jsonl")
    path.parent.mkdir(parents=True, exist_ok=True)
    wanted = config.total_steps
    budget = wanted * PROCESS_ATTEMPTS_PER_GROUP
    written = 0
    started = 0
    with open(path, "a", encoding="utf-8") as out:

        async def worker() -> None:
            nonlocal written, started
            while written < wanted and started < budget:
                started += 1
                group = await runtime.collect()
                if group is not None and runtime.keep(group) and written < wanted:
                    out.write(json.dumps(group, separators=(",", ":")) + "\n")
                    out.flush()
                    written += 1
                    runtime.stats.sent += 1
                    runtime.step = written

        await asyncio.gather(*(worker() for _ in range(runtime.workers)))
    await runtime.log_train_metrics()
    summary = {
        "path": str(path),
        "groups_written": written,
        "groups_dropped_same_score": runtime.stats.dropped_same_score,
        "groups_failed": runtime.stats.failed,
        "items_tried": started,
    }
    print(json.dumps(summary))
    if written < wanted:
        log(f"wrote {written} of {wanted} groups after {started} items (the rest had equal scores or failed)")
    return 0 if written > 0 else 1


async def evaluate(runtime: EnvRuntime) -> int:
    await set_up(runtime)
    runtime.step = await reported_policy_step(runtime.settings) or 0
    metrics = await runtime.evaluate_safely()
    if metrics is None:
        return 1
    print(json.dumps({"step": runtime.step, **metrics}))
    return 0


async def reported_policy_step(settings: RunSettings) -> int | None:
    """The trainer step the policy server reports on /health; None when it does not say (an
    endpoint that is not this project's policy server) or cannot be reached."""
    import httpx

    base = str(settings.servers[0].base_url or "").rstrip("/")
    root = base[: -len("/v1")] if base.endswith("/v1") else base
    try:
        async with httpx.AsyncClient(timeout=5) as client:
            data = (await client.get(f"{root}/health")).json()
        return int(data["step"]) if isinstance(data, dict) and "step" in data else None
    except (httpx.HTTPError, ValueError, TypeError, KeyError):
        return None


def split_argv(argv: list[str]) -> tuple[list[str], list[str]]:
    """(own arguments, --env./--openai. overrides)."""
    own: list[str] = []
    overrides: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg.startswith(("--env.", "--openai.")):
            overrides.append(arg)
            if "=" not in arg and i + 1 < len(argv):
                overrides.append(argv[i + 1])
                i += 1
        else:
            own.append(arg)
        i += 1
    return own, overrides


def build_parser(env_cls: type[BaseEnv]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=f"python {env_cls.name or env_cls.__name__}.py",
        description=(env_cls.__doc__ or "").strip().splitlines()[0] if env_cls.__doc__ else None,
        epilog="Override any field with --env.FIELD VALUE or --openai.FIELD VALUE (command line > YAML > config_init()).",
    )
    parser.add_argument("mode", choices=MODES, help="serve: feed the trajectory API; process: write scored groups to JSONL; evaluate: held-out evaluation only; "
                        "trial: a few groups against the endpoint, reported in full")
    parser.add_argument("--config", type=Path, default=None, help="run YAML (sections run, env, openai, trainer)")
    return parser


async def _run(env_cls: type[BaseEnv], mode: str, settings: RunSettings) -> int:
    runtime = EnvRuntime(env_cls, settings)
    try:
        if mode == "serve":
            return await Server(runtime).run()
        if mode == "process":
            return await process(runtime)
        if mode == "trial":
            from hermes_rl_mcp.sdk.trial import trial

            return await trial(runtime)
        return await evaluate(runtime)
    finally:
        await runtime.close()


async def _guarded(env_cls: type[BaseEnv], mode: str, settings: RunSettings) -> int:
    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    if task is not None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                loop.add_signal_handler(sig, task.cancel)
            except (NotImplementedError, RuntimeError):
                pass
    try:
        return await _run(env_cls, mode, settings)
    except asyncio.CancelledError:
        log("stopped by signal")
        return 143


def main(env_cls: type[BaseEnv], argv: list[str] | None = None) -> int:
    own, overrides = split_argv(list(sys.argv[1:] if argv is None else argv))
    try:
        args = build_parser(env_cls).parse_args(own)
    except SystemExit as exc:  # argparse has printed the usage and the reason
        return int(exc.code or 0)
    try:
        settings = resolve(env_cls, args.config, overrides)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        return asyncio.run(_guarded(env_cls, args.mode, settings))
    except Exception as exc:  # noqa: BLE001 - one clear line instead of a traceback for known failures
        from hermes_rl_mcp.sdk.api_client import TrajectoryAPIError
        from hermes_rl_mcp.sdk.policy_client import PolicyError

        if isinstance(exc, TrajectoryAPIError | PolicyError | RuntimeError):
            print(f"error: {exc}", file=sys.stderr)
            return 1
        raise
