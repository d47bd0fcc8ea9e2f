"""The environment side of the trajectory API (Atropos wire protocol)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict

from hermes_rl_mcp.errors import HermesRLError
from hermes_rl_mcp.sdk.env_types import ScoredDataGroup

REGISTER_POLL_MAX_S = 0.1  # the longest wait between two registration attempts


class TrajectoryAPIError(HermesRLError, RuntimeError):
    """The trajectory API is unreachable or refused a request (``refused``: it answered 4xx/5xx)."""

    def __init__(self, message: str, *, refused: bool = False) -> None:
        super().__init__(message)
        self.refused = refused


class EnvRegistration(BaseModel):
    model_config = ConfigDict(extra="allow")

    env_id: int
    starting_step: int = 0
    num_steps: int = -1
    wandb_name: str | None = None
    checkpoint_dir: str | None = None


class EnvStatus(BaseModel):
    model_config = ConfigDict(extra="allow")

    current_step: int = 0
    queue_size: int = 0  # in groups of this env's group_size
    self_queue_size: int = 0
    unallocated_fraction: float = 1.0
    max_group_size: int = 1


class TrajectoryAPIClient:
    def __init__(self, base_url: str, *, timeout: float = 30.0) -> None:
        self.base_url = base_url.rstrip("/")
        self._http = httpx.AsyncClient(base_url=self.base_url, timeout=timeout)

    async def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = await self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise TrajectoryAPIError(f"trajectory API at {self.base_url} unreachable ({path}): {exc!r}") from exc
        if response.status_code >= 400:
            raise TrajectoryAPIError(f"trajectory API {path} answered {response.status_code}: {response.text[:300]}", refused=True)
        try:
            return response.json()
        except ValueError as exc:
            raise TrajectoryAPIError(f"trajectory API {path} answered non-JSON") from exc

    async def register_env(self, payload: dict[str, Any], *, deadline_s: float = 30.0) -> EnvRegistration:
        """POST /register-env, retrying with backoff while the API is not up yet (``deadline_s``)
        or answers that no trainer has registered yet (four times as long: trainers load first)."""
        start = time.monotonic()
        delay = 0.02  # the trainer usually registers within a fraction of a second: look again soon
        answered = False
        while True:
            try:
                data = await self._request("POST", "/register-env", json=payload)
                if isinstance(data, dict) and "env_id" in data:
                    return EnvRegistration.model_validate(data)
                answered = True
                last = f"the API answered {str(data)[:200]}"
            except TrajectoryAPIError as exc:
                last = str(exc)
            waited = time.monotonic() - start
            if waited > (4 * deadline_s if answered else deadline_s):
                raise TrajectoryAPIError(
                    f"could not register with the trajectory API at {self.base_url} within {waited:.0f} s: {last}"
                )
            await asyncio.sleep(delay)
            # The components of a run start together, so the API or its trainer is usually a
            # moment away: a longer wait would only delay the run's start.
            delay = min(delay * 1.5, REGISTER_POLL_MAX_S)

    async def batch_size(self) -> int:
        """The trainer's batch size from GET /info; -1 until a trainer has registered."""
        data = await self._request("GET", "/info")
        return int(data.get("batch_size", -1)) if isinstance(data, dict) else -1

    async def status(self, env_id: int) -> EnvStatus:
        # The query parameter is the documented fix for Atropos's GET-with-body; the body keeps
        # an Atropos server working too.
        data = await self._request("GET", "/status-env", params={"env_id": env_id}, json={"env_id": env_id})
        return EnvStatus.model_validate(data)

    async def send_group(self, group: ScoredDataGroup, *, patience_s: float = 0.0) -> None:
        """POST /scored_data. Failing to reach the API (it is restarting, or a kept-alive
        connection was closed just as it was reused) is retried for up to ``patience_s``, so a
        moment's hiccup costs no group and no environment; a refusal is raised at once. A group
        whose reply was lost after the API queued it is sent twice: one group more in a batch
        is cheaper than an environment that exits."""
        deadline = time.monotonic() + patience_s
        delay = 0.05
        while True:
            try:
                await self._request("POST", "/scored_data", json=group)
                return
            except TrajectoryAPIError as exc:
                if exc.refused or time.monotonic() + delay > deadline:
                    raise
            await asyncio.sleep(delay)
            delay = min(2 * delay, 1.0)

    async def disconnect(self, env_id: int) -> None:
        try:
            await self._request("POST", "/disconnect-env", json={"env_id": env_id})
        except TrajectoryAPIError:
            pass  # leaving anyway

    async def aclose(self) -> None:
        await self._http.aclose()
