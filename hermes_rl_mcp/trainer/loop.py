"""The trainer process of every backend: one RL loop over a learner (see ``seam``).

Serve the policy, register with the trajectory API (once it answers), then per batch: pull it, one learner step,
publish the new policy to the policy endpoint, log metrics, checkpoint at the interval. One
asyncio loop runs both the policy endpoint (uvicorn) and the training loop; the learner's step
never blocks the loop, so completions for the next batches keep being served while it trains.
"""

from __future__ import annotations

import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import uvicorn

from hermes_rl_mcp import run_document
from hermes_rl_mcp.run_document import RunDocument
from hermes_rl_mcp.metrics_log import MetricsLog
from hermes_rl_mcp.trainer.grpo import BatchError
from hermes_rl_mcp.trainer.policy_server import build_app
from hermes_rl_mcp.trainer.seam import PolicyLearner, TrainerError
from hermes_rl_mcp.trainer.settings import TinkerTrainerConfig, TrainerConfig
from hermes_rl_mcp.start_gate import wait_for_predecessor

REGISTER_TIMEOUT = 30.0
POLL_INTERVAL = 0.05
IDLE_EXIT = 5.0  # after the final checkpoint, an idle policy server stops after this long


def load_run_file(path: Path) -> RunDocument:
    """The run document, validated; raises TrainerError saying what is wrong."""
    try:
        return run_document.load(path)
    except run_document.RunDocumentError as exc:
        raise TrainerError(str(exc)) from None


def _bind(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as exc:
        sock.close()
        raise TrainerError(f"cannot listen on 127.0.0.1:{port} for the policy server: {exc.strerror}") from None
    sock.listen(128)
    sock.setblocking(False)
    return sock


def make_learner(config: RunDocument) -> PolicyLearner:
    """The learner of the run's backend; each imports only what it needs."""
    if isinstance(config.trainer, TinkerTrainerConfig):
        from hermes_rl_mcp.trainer.tinker_learner import TinkerLearner

        return TinkerLearner(
            config.trainer, config.run_dir, max_tokens=config.env.max_token_length, log=_stderr,
            resume_from=config.run.resumed_from,
        )
    if not isinstance(config.trainer, TrainerConfig):
        raise TrainerError(f"run.backend {config.run.backend!r} brings its own trainer; this one trains 'local' and 'tinker'")
    from hermes_rl_mcp.trainer.local_learner import LocalLearner

    return LocalLearner(config.trainer, config.run_dir, run_id=config.run.id, resume_from=config.run.resumed_from)


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Trainer:
    def __init__(self, config: RunDocument, *, log: Any = None, learner: PolicyLearner | None = None) -> None:
        self.config = config
        self.log = log or _stderr
        self.learner = learner or make_learner(config)
        self.run_dir = config.run_dir
        self.total_steps = config.env.total_steps
        # A resumed run counts on from its parent's checkpoint; the API and the environment learn
        # the step from the registration's starting_step.
        resumed = config.run.resumed_from
        self.step = resumed.step if resumed is not None else 0
        self.port: int | None = None
        self.stop_requested = False
        self.last_checkpoint_step = -1

    # -- pieces --------------------------------------------------------------------------------

    async def checkpoint(self, kind: str) -> str:
        path = await self.learner.checkpoint(self.step, kind)
        self.last_checkpoint_step = self.step
        return path

    async def register(self, client: httpx.AsyncClient) -> None:
        cfg = self.config
        payload = {
            "batch_size": cfg.trainer.batch_size,
            "max_token_len": cfg.env.max_token_length,
            "num_steps": self.total_steps,
            "checkpoint_dir": str((self.run_dir / "checkpoints").resolve()),
            "save_checkpoint_interval": cfg.trainer.checkpoint_interval,
            "starting_step": self.step,
            "wandb_group": cfg.run.id,
            "wandb_project": "hermes-rl",
        }
        deadline = time.monotonic() + REGISTER_TIMEOUT
        delay = 0.1
        last_error = ""
        while not self.stop_requested:
            try:
                response = await client.post("/register", json=payload)
                if response.status_code == 200:
                    return
                last_error = f"answered {response.status_code}: {response.text[:200]}"
                if 400 <= response.status_code < 500:
                    raise TrainerError(f"trajectory API at {cfg.run.api_url} refused registration: {last_error}")
            except httpx.HTTPError as exc:
                last_error = f"unreachable ({type(exc).__name__})"
            if time.monotonic() >= deadline:
                raise TrainerError(
                    f"trajectory API at {cfg.run.api_url} did not accept /register within {REGISTER_TIMEOUT:.0f} s: {last_error}"
                )
            await anyio.sleep(delay)
            delay = min(delay * 2, 2.0)

    async def next_batch(self, client: httpx.AsyncClient) -> list[dict[str, Any]] | None:
        try:
            response = await client.get("/batch")
        except httpx.HTTPError:
            return None  # the API may be restarting; keep polling
        if response.status_code != 200:
            return None
        try:
            batch = response.json().get("batch")
        except (ValueError, AttributeError):
            return None
        return batch if isinstance(batch, list) else None

    # -- the run ---------------------------------------------------------------------------------

    async def run(self) -> None:
        cfg = self.config
        self.run_dir.mkdir(parents=True, exist_ok=True)
        sock = _bind(cfg.trainer.port)
        self.port = sock.getsockname()[1]
        metrics = MetricsLog(
            self.run_dir / "metrics.jsonl",
            use_wandb=cfg.env.use_wandb,
            wandb_dir=self.run_dir / "wandb",
            wandb_name=(cfg.env.wandb_name or cfg.run.id or "local") + "-trainer",
            wandb_group=cfg.run.id,
            component="trainer",
        )
        try:
            # The policy endpoint answers /health only once there is a policy to serve.
            await self.learner.start()
            server = uvicorn.Server(
                uvicorn.Config(build_app(self.learner.policy), log_level="warning", access_log=False, lifespan="off")
            )
            server.install_signal_handlers = lambda: None  # type: ignore[method-assign]  # we handle SIGTERM
            async with anyio.create_task_group() as tg:
                tg.start_soon(server.serve, [sock])
                while not server.started:
                    if server.should_exit:
                        raise TrainerError("the policy server failed to start")
                    await anyio.sleep(0.01)
                self.log(f"policy server listening on http://127.0.0.1:{self.port}/v1")
                try:
                    async with anyio.create_task_group() as watching:
                        # The learner's watch raises if its engine goes away, which cancels training.
                        watching.start_soon(self.learner.watch)
                        await self._train(metrics)
                        watching.cancel_scope.cancel()
                finally:
                    server.should_exit = True
        finally:
            metrics.close(hurry=self.stop_requested)
            sock.close()
            await self.learner.close()

    async def _train(self, metrics: MetricsLog) -> None:
        cfg = self.config
        async with httpx.AsyncClient(base_url=cfg.run.api_url.rstrip("/"), timeout=30.0) as client:
            # Under a supervisor, the learner and the policy endpoint came up while the API was
            # starting; registering waits for it (the start gate).
            await anyio.to_thread.run_sync(wait_for_predecessor)
            await self.register(client)
            self.log(f"registered with the trajectory API at {cfg.run.api_url}; training {self.total_steps} steps")
            waited_since = time.monotonic()
            while self.step < self.total_steps and not self.stop_requested:
                batch = await self.next_batch(client)
                if batch is None:
                    await anyio.sleep(POLL_INTERVAL)
                    continue
                wait_time = time.monotonic() - waited_since
                step_started = time.perf_counter()
                try:
                    values = await self.learner.step(batch)
                except BatchError as exc:
                    self.log(f"skipped a malformed batch: {exc}")
                    values = {}
                self.step += 1
                published = await self.learner.publish(self.step)
                if values:
                    values.update(published)
                    values["train/batch_wait_time"] = wait_time
                    values["time/step"] = time.perf_counter() - step_started
                    metrics.log(self.step, values)
                if self.step % cfg.trainer.checkpoint_interval == 0 and self.step < self.total_steps:
                    await self.checkpoint("periodic")
                waited_since = time.monotonic()
        if self.last_checkpoint_step != self.step or self.step == 0:
            path = await self.checkpoint("final")
            self.log(f"final checkpoint at step {self.step}: {path}")
        # Finish the W&B mirror now: while the policy lingers for the final evaluation, the
        # supervisor may end this process tree, W&B's service process included.
        metrics.close(hurry=self.stop_requested)
        await self._serve_final_evaluation()

    async def _serve_final_evaluation(self) -> None:
        """Keep answering while the environment evaluates the final policy, then return."""
        linger = self.config.trainer.serve_after_final
        if self.stop_requested or linger <= 0:
            return
        finished = time.monotonic()
        while not self.stop_requested:
            now = time.monotonic()
            if now - finished >= linger or now - max(finished, self.learner.policy.last_request) >= IDLE_EXIT:
                return
            await anyio.sleep(0.1)


def run_trainer(config: RunDocument, *, log: Any = None) -> Trainer:
    """Run to completion (or until SIGTERM) in this thread; returns the finished trainer."""
    trainer = Trainer(config, log=log)

    def on_term(signum: int, frame: Any) -> None:
        trainer.stop_requested = True

    previous = signal.signal(signal.SIGTERM, on_term) if _main_thread() else None
    try:
        anyio.run(trainer.run)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    return trainer


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()

