"""The tinker backend's learner: LoRA training of an LLM through the Tinker API.

The engine is the hosted Tinker service or a self-hosted engine that speaks its API (SkyRL tx);
its address is the operator's ``TINKER_BASE_URL`` (unset: the hosted service) and its key
``TINKER_API_KEY``. Only SDK calls that work unchanged from tinker 0.16.1 to 0.38 are used.

Per step: the batch's groups become ``Datum``s (``datums``), one ``forward_backward`` with the
``importance_sampling`` loss (the rollouts' own logprobs are the sampling logprobs, so batches up
to ``max_batches_offpolicy`` behind are corrected), one ``optim_step``. Then new sampler weights
are saved and the policy endpoint switches to a sampling client on them. The SDK waits forever
on an engine that has gone away, so every call is bounded by ``trainer.request_timeout``, and a
watchdog polls the engine's health so that a vanished engine fails the run within seconds.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx

from hermes_rl_mcp.trainer.checkpoints import record_checkpoint
from hermes_rl_mcp.trainer.datums import importance_sampling_loss, training_sequences
from hermes_rl_mcp.trainer.seam import TrainerError
from hermes_rl_mcp.trainer.settings import ResumePoint, TinkerTrainerConfig
from hermes_rl_mcp.trainer.tinker_policy import TinkerPolicy, load_tokenizer

T = TypeVar("T")
HEALTH_PATH = "/api/v1/healthz"
WATCHDOG_SECONDS = 2.0
WATCHDOG_FAILURES = 3  # consecutive unanswered health checks before the engine counts as gone


class EngineError(TrainerError):
    """The engine refused, failed or stopped answering; the run fails with this message."""


def engine_address(environ: dict[str, str] | os._Environ[str] | None = None) -> tuple[str | None, str]:
    """(base URL, or None for the SDK's default: the hosted service; how to name it), from the
    operator's environment."""
    source = os.environ if environ is None else environ
    base = (source.get("TINKER_BASE_URL") or "").strip().rstrip("/") or None
    return base, base or "the hosted Tinker service"


class TinkerLearner:
    def __init__(
        self,
        config: TinkerTrainerConfig,
        run_dir: Path,
        *,
        max_tokens: int,
        log: Callable[[str], None],
        resume_from: ResumePoint | None = None,
    ) -> None:
        self.config = config
        self.resume_from = resume_from
        self.run_dir = run_dir
        self.max_tokens = max_tokens
        self.log = log
        self.base_url, self.shown_url = engine_address()
        self.service: Any = None
        self.training: Any = None
        self.policy: TinkerPolicy | None = None  # set by start()
        self.sampler_path: str | None = None
        self._published_step = 0  # the step whose sampler weights the policy endpoint serves
        self._pending_save: tuple[int, Any] | None = None  # (step, future) queued by step()

    # --- bounded engine calls -------------------------------------------------------------------

    async def _bounded(self, what: str, call: Callable[[], Awaitable[T]]) -> T:
        try:
            with anyio.fail_after(self.config.request_timeout):
                return await call()
        except TimeoutError:
            raise EngineError(
                f"the Tinker engine at {self.shown_url} did not finish {what} within {self.config.request_timeout:g} s"
            ) from None
        except EngineError:
            raise
        except Exception as exc:  # noqa: BLE001 - the SDK raises ValueError, APIError and more for a refusal
            raise EngineError(f"the Tinker engine at {self.shown_url} failed {what}: {exc}") from exc

    async def _in_thread(self, what: str, call: Callable[[], T]) -> T:
        """A blocking SDK call (sync futures, client construction) off the event loop, bounded."""
        return await self._bounded(what, lambda: anyio.to_thread.run_sync(call, abandon_on_cancel=True))

    # --- the seam -------------------------------------------------------------------------------

    async def start(self) -> None:
        import tinker

        cfg = self.config
        key = os.environ.get("TINKER_API_KEY", "")
        self.service = await self._in_thread(
            "opening a session", lambda: tinker.ServiceClient(base_url=self.base_url, api_key=key)
        )
        self.training = await self._bounded(
            f"creating a LoRA training client on {cfg.base_model} (rank {cfg.lora_rank})",
            lambda: self.service.create_lora_training_client_async(base_model=cfg.base_model, rank=cfg.lora_rank),
        )
        if self.resume_from is not None:
            await self._load_state(self.resume_from)
        tokenizer = await anyio.to_thread.run_sync(load_tokenizer, cfg.base_model)
        path = await self._save_sampler_weights(self.resume_from.step if self.resume_from is not None else 0)
        sampler = await self._in_thread("creating a sampling client", lambda: self.service.create_sampling_client(model_path=path))
        self.policy = TinkerPolicy(
            sampler, tokenizer, model_name=cfg.base_model, default_temperature=cfg.temperature, timeout=cfg.request_timeout
        )
        self.log(f"LoRA training client {self.model_id} on {cfg.base_model} (rank {cfg.lora_rank}) at {self.shown_url}")

    async def _load_state(self, point: ResumePoint) -> None:
        """Weights and Adam state of the parent run's saved training state, into the new adapter.

        ``load_state_with_optimizer`` works unchanged from SDK 0.16.1 to 0.38 (0.38 marks it
        deprecated in favour of creating the client from the state; the warning is silenced so
        it does not fill the log); ``load_state`` alone would reset the Adam moments.
        """

        def load() -> Any:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)
                return self.training.load_state_with_optimizer(point.checkpoint).result()

        await self._in_thread(f"load_state_with_optimizer of {point.checkpoint}", load)
        self.log(f"resumed from {point.checkpoint} (run {point.run_id}, step {point.step})")

    @property
    def model_id(self) -> str | None:
        return getattr(self.training, "model_id", None)

    async def step(self, groups: Sequence[dict[str, Any]]) -> dict[str, float]:
        from tinker import types

        cfg = self.config
        sequences = training_sequences(groups)
        data = [
            types.Datum(
                model_input=types.ModelInput.from_ints(s.input_tokens_T),
                loss_fn_inputs={
                    "target_tokens": s.target_tokens_T,
                    "logprobs": s.sampling_logprobs_T,
                    "advantages": s.advantages_T,
                },
            )
            for s in sequences
        ]
        adam = types.AdamParams(
            learning_rate=cfg.learning_rate, beta1=cfg.beta1, beta2=cfg.beta2, eps=cfg.eps,
            weight_decay=cfg.weight_decay, grad_clip_norm=cfg.max_grad_norm,
        )
        started = time.perf_counter()
        # The backward pass, the optimiser step and the saving of the new sampler weights are all
        # queued before any result is awaited: the engine runs them back to back (SkyRL tx in one
        # pass of its scheduling loop), with no round trip in between; publish() collects the save.
        step = self._published_step + 1
        backward_future, optim_future, save_future = await self._bounded("submitting the training step", lambda: self._submit(
            self.training.forward_backward_async(data, loss_fn="importance_sampling"),
            self.training.optim_step_async(adam),
            self.training.save_weights_for_sampler_async(name=f"step-{step}"),
        ))
        self._pending_save = (step, save_future)
        backward = await self._bounded("forward_backward", backward_future.result_async)
        backward_done = time.perf_counter()
        await self._bounded("optim_step", optim_future.result_async)
        optimised = time.perf_counter()
        new_logprobs = [output["logprobs"].tolist() for output in backward.loss_fn_outputs]
        loss, ratio = importance_sampling_loss(sequences, new_logprobs)
        tokens = sum(len(s.target_tokens_T) + 1 for s in sequences)
        trained = sum(sum(s.trained_T) for s in sequences)
        metrics = {
            "train/loss": loss,
            "train/ratio_mean": ratio,
            "reward/mean": sum(s.score for s in sequences) / max(len(sequences), 1),
            "advantages/mean": sum(s.advantage for s in sequences) / max(len(sequences), 1),
            "train/learning_rate": cfg.learning_rate,
            "train/num_sequences": float(len(sequences)),
            "train/num_tokens": float(tokens),
            "train/trained_tokens": float(trained),
            "time/forward_backward": backward_done - started,
            "time/optim_step": optimised - backward_done,
            "throughput/tokens_per_second": tokens / max(optimised - started, 1e-9),
        }
        missing = sum(s.missing_logprobs for s in sequences)
        if missing:
            metrics["train/missing_logprobs"] = float(missing)
        engine_loss = (getattr(backward, "metrics", None) or {}).get("loss:sum")
        if engine_loss is not None:
            metrics["train/engine_loss_sum"] = float(engine_loss)
        return metrics

    async def publish(self, step: int) -> dict[str, float]:
        started = time.perf_counter()
        pending, self._pending_save = self._pending_save, None
        if pending is not None and pending[0] == step:
            saved = await self._bounded("save_weights_for_sampler", pending[1].result_async)
            self.sampler_path = path = str(saved.path)
        else:  # no step was trained since the last publish (a malformed batch was skipped)
            path = await self._save_sampler_weights(step)
        sampler = await self._in_thread("creating a sampling client", lambda: self.service.create_sampling_client(model_path=path))
        self.policy.publish(sampler, step)  # requests arriving from now on sample the new weights
        self._published_step = step
        return {"time/weight_sync": time.perf_counter() - started}

    async def checkpoint(self, step: int, kind: str) -> str:
        state = await self._in_thread("save_state", lambda: self.training.save_state(name=f"state-{step}").result().path)
        record_checkpoint(self.run_dir, step, state, kind, sampler_path=self.sampler_path)
        return state

    async def close(self) -> None:
        """Release the LoRA adapter, so the engine's slot frees now rather than after a timeout,
        and end the session's heartbeat."""
        try:
            await self._release_adapter()
        finally:
            self._end_session()

    def _end_session(self) -> None:
        # The SDK keeps a session alive with a heartbeat from a background thread for as long as
        # the client object lives; it has no public close, so its holder's is called where present.
        holder = getattr(self.service, "holder", None)
        if holder is not None and callable(getattr(holder, "close", None)):
            holder.close()

    async def _release_adapter(self) -> None:
        model_id = self.model_id
        if model_id is None or self.base_url is None:
            return  # the hosted service frees a session's adapters itself
        try:
            with anyio.fail_after(10):
                async with httpx.AsyncClient(base_url=self.base_url, headers=self._headers(), timeout=10) as client:
                    answer = await client.post("/api/v1/unload_model", json={"model_id": model_id})
                    answer.raise_for_status()
                    request_id = answer.json().get("request_id")
                    for _ in range(40):
                        done = await client.post("/api/v1/retrieve_future", json={"request_id": request_id})
                        if done.status_code == 200 and done.json().get("status") == "unloaded":
                            self.log(f"released LoRA adapter {model_id}")
                            return
                        await anyio.sleep(0.25)
        except (httpx.HTTPError, TimeoutError, ValueError) as exc:
            self.log(f"could not release LoRA adapter {model_id}: {exc}")

    # --- pieces ---------------------------------------------------------------------------------

    @staticmethod
    async def _submit(*submissions: Awaitable[Any]) -> list[Any]:
        """The futures of requests submitted in order (each ``*_async`` call returns one)."""
        return [await submission for submission in submissions]

    async def _save_sampler_weights(self, step: int) -> str:
        path = await self._in_thread(
            "save_weights_for_sampler", lambda: self.training.save_weights_for_sampler(name=f"step-{step}").result().path
        )
        self.sampler_path = str(path)
        return self.sampler_path

    def _headers(self) -> dict[str, str]:
        return {"X-API-Key": os.environ.get("TINKER_API_KEY", "")}

    async def watch(self) -> None:
        """Return only by raising EngineError, once the engine has stopped answering health checks."""
        if self.base_url is None:
            await anyio.sleep_forever()
        failures = 0
        async with httpx.AsyncClient(base_url=self.base_url, timeout=WATCHDOG_SECONDS) as client:
            while True:
                try:
                    answer = await client.get(HEALTH_PATH)
                    failures = 0 if answer.status_code == 200 else failures + 1
                except httpx.HTTPError:
                    failures += 1
                if failures >= WATCHDOG_FAILURES:
                    raise EngineError(f"the Tinker engine at {self.shown_url} stopped answering ({HEALTH_PATH})")
                await anyio.sleep(WATCHDOG_SECONDS)
