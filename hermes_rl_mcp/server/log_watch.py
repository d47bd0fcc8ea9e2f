"""Tell subscribed clients when a run's log, config or metrics change.

Two protocol eras, two ways in: 2025-11-25 clients send ``resources/subscribe`` and this
module keeps their sessions; 2026-07-28 clients open ``subscriptions/listen`` streams, which
this module wraps so that it learns their URIs too, and it publishes updates on the server's
subscription bus (the bus filters by URI). Either way a URI is watched from the moment it is
subscribed: its file's size and mtime are taken then, so every later change is announced,
including the first appearance of a file that did not exist yet. One polling loop stats the
watched files; a stat per file per tick is all it costs, and nothing is watched that nobody
subscribed to.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.subscriptions import ResourceUpdated, SubscriptionBus

from hermes_rl_mcp import runs
from hermes_rl_mcp.core.control import ControlPlane
from hermes_rl_mcp.runs.layout import RunPaths
from hermes_rl_mcp.runs.states import LOG_COMPONENTS

log = logging.getLogger(__name__)

URI_PATTERN = re.compile(r"^rl://runs/(?P<run_id>[^/]+)/(?:logs/(?P<component>[a-z]+)|(?P<document>config|metrics))$")
POLL_SECONDS = 0.5

Signature = tuple[int, int] | None


class _ListenStream:
    """Stands for one open subscriptions/listen stream; the bus, not this module, delivers to it."""


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


def _signature(path: Path) -> Signature:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_size, stat.st_mtime_ns


class LogWatcher:
    def __init__(self, control: ControlPlane, bus: SubscriptionBus) -> None:
        self._control = control
        self._bus = bus
        self._subscribers: dict[str, set[Any]] = {}  # uri -> 2025-11-25 sessions and _ListenStreams
        self._seen: dict[str, Signature] = {}  # uri -> signature when last looked at

    def watch(self, uri: str, subscriber: Any) -> bool:
        """Start announcing changes of ``uri`` to ``subscriber``; False when it is no run resource."""
        path = resource_path(self._control.state_dir, uri)
        if path is None:
            return False
        if uri not in self._subscribers:
            self._seen[uri] = _signature(path)  # the baseline: changes from now on are announced
        self._subscribers.setdefault(uri, set()).add(subscriber)
        return True

    def unwatch(self, uri: str, subscriber: Any) -> None:
        subscribers = self._subscribers.get(uri)
        if subscribers is None:
            return
        subscribers.discard(subscriber)
        if not subscribers:
            del self._subscribers[uri]
            self._seen.pop(uri, None)

    # --- 2025-11-25: resources/subscribe ---------------------------------------------------------

    def subscribe(self, uri: str, session: Any) -> bool:
        return self.watch(uri, session)

    def unsubscribe(self, uri: str, session: Any) -> None:
        self.unwatch(uri, session)

    # --- 2026-07-28: subscriptions/listen --------------------------------------------------------

    def wrap_listen(self, lowlevel: Server) -> None:
        """Wrap the server's listen handler so that each stream's URIs are watched while it is open."""
        entry = lowlevel.get_request_handler("subscriptions/listen")
        if entry is None:
            return
        serve_stream = entry.handler

        async def listen(ctx: Any, params: types.SubscriptionsListenRequestParams) -> Any:
            stream = _ListenStream()
            uris = [uri for uri in params.notifications.resource_subscriptions or () if self.watch(uri, stream)]
            try:
                return await serve_stream(ctx, params)
            finally:
                for uri in uris:
                    self.unwatch(uri, stream)

        lowlevel.add_request_handler("subscriptions/listen", entry.params_type, listen)

    # --- the loop --------------------------------------------------------------------------------

    async def run(self) -> None:
        failing: str | None = None  # the failure being repeated, logged once rather than every tick
        while True:
            try:
                await self.tick()
                if failing is not None:
                    log.warning("log watcher recovered after: %s", failing)
                    failing = None
            except Exception as exc:  # noqa: BLE001 - a bad tick must not end notifications for good
                if f"{type(exc).__name__}: {exc}" != failing:
                    failing = f"{type(exc).__name__}: {exc}"
                    log.warning("log watcher tick failed, retrying every %g s: %s", POLL_SECONDS, failing)
            await anyio.sleep(POLL_SECONDS)

    async def tick(self) -> None:
        state = self._control.state_dir
        for uri in sorted(self._subscribers):
            path = resource_path(state, uri)
            if path is None:
                continue
            signature = _signature(path)
            if signature != self._seen.get(uri) and signature is not None:
                self._seen[uri] = signature
                await self._announce(uri, list(self._subscribers.get(uri, ())))

    async def _announce(self, uri: str, subscribers: Iterable[Any]) -> None:
        await self._bus.publish(ResourceUpdated(uri=uri))
        for session in subscribers:
            if isinstance(session, _ListenStream):
                continue
            try:
                await session.send_resource_updated(uri)
            except Exception:  # noqa: BLE001 - the client went away: forget it
                self.unsubscribe(uri, session)
