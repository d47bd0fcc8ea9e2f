"""Tell subscribed clients when a run's log, config or metrics grow.

Two protocol eras, two delivery paths: 2026-07-28 clients listen with ``subscriptions/listen``
and receive what is published on the server's subscription bus (the bus filters by URI);
2025-11-25 clients send ``resources/subscribe`` and this module keeps their sessions itself.
One polling loop serves both: it stats the files behind the watched URIs (every resource of
the active runs, plus any URI a 2025-11-25 client subscribed to) and announces those that
changed. A stat per file per tick is all it costs.
"""

from __future__ import annotations

import logging
import re
import time
from pathlib import Path
from typing import Any

import anyio
from mcp.server.subscriptions import ResourceUpdated, SubscriptionBus

from hermes_rl_mcp import runs
from hermes_rl_mcp.core.control import ControlPlane
from hermes_rl_mcp.runs.layout import RunPaths
from hermes_rl_mcp.runs.states import LOG_COMPONENTS

log = logging.getLogger(__name__)

URI_PATTERN = re.compile(r"^rl://runs/(?P<run_id>[^/]+)/(?:logs/(?P<component>[a-z]+)|(?P<document>config|metrics))$")
POLL_SECONDS = 0.5
ACTIVE_REFRESH_SECONDS = 2.0


def resource_path(state: Path, uri: str) -> Path | None:
    """The file behind a run resource URI, or None when the URI names no run resource."""
    match = URI_PATTERN.match(uri)
    if not match:
        return None
    try:
        paths = RunPaths.of(state, match["run_id"])  # validates the id: no traversal
    except runs.RunError:
        return None
    if match["component"]:
        return paths.log(match["component"]) if match["component"] in LOG_COMPONENTS else None
    return paths.config if match["document"] == "config" else paths.metrics


def run_resource_uris(run_id: str) -> list[str]:
    return [f"rl://runs/{run_id}/logs/{c}" for c in LOG_COMPONENTS] + [
        f"rl://runs/{run_id}/config",
        f"rl://runs/{run_id}/metrics",
    ]


def _signature(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_size, stat.st_mtime_ns


class LogWatcher:
    def __init__(self, control: ControlPlane, bus: SubscriptionBus) -> None:
        self._control = control
        self._bus = bus
        self._legacy: dict[str, set[Any]] = {}  # uri -> sessions of 2025-11-25 subscribers
        self._seen: dict[str, tuple[int, int] | None] = {}
        self._active: list[str] = []
        self._active_at = 0.0

    # --- 2025-11-25 subscriptions --------------------------------------------------------------

    def subscribe(self, uri: str, session: Any) -> bool:
        path = resource_path(self._control.state_dir, uri)
        if path is None:
            return False
        self._legacy.setdefault(uri, set()).add(session)
        self._seen.setdefault(uri, _signature(path))
        return True

    def unsubscribe(self, uri: str, session: Any) -> None:
        sessions = self._legacy.get(uri)
        if sessions is not None:
            sessions.discard(session)
            if not sessions:
                del self._legacy[uri]

    # --- the loop ------------------------------------------------------------------------------

    async def run(self) -> None:
        while True:
            try:
                await self.tick()
            except Exception:  # noqa: BLE001 - a bad tick must not end notifications for good
                log.exception("log watcher tick failed")
            await anyio.sleep(POLL_SECONDS)

    async def _active_uris(self) -> list[str]:
        if time.monotonic() - self._active_at >= ACTIVE_REFRESH_SECONDS:
            listing = await anyio.to_thread.run_sync(lambda: runs.list_runs(state=self._control.state_dir))
            self._active = [
                uri
                for run in listing.runs
                if run.status in ("starting", "running", "stopping")
                for uri in run_resource_uris(run.run_id)
            ]
            self._active_at = time.monotonic()
        return self._active

    async def tick(self) -> None:
        state = self._control.state_dir
        watched = set(await self._active_uris()) | set(self._legacy)
        for uri in sorted(watched):
            path = resource_path(state, uri)
            if path is None:
                continue
            signature = _signature(path)
            first_sight = uri not in self._seen
            changed = self._seen.get(uri) != signature
            self._seen[uri] = signature
            if changed and not first_sight and signature is not None:
                await self._announce(uri)
        for uri in set(self._seen) - watched:
            del self._seen[uri]

    async def _announce(self, uri: str) -> None:
        await self._bus.publish(ResourceUpdated(uri=uri))
        for session in list(self._legacy.get(uri, ())):
            try:
                await session.send_resource_updated(uri)
            except Exception:  # noqa: BLE001 - the client went away: forget it
                self.unsubscribe(uri, session)
