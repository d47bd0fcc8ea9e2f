"""Resource subscriptions announce every change made after the subscription, in both eras.

The watcher takes a subscribed file's size and mtime when the subscription arrives, so a
change that comes before its next poll, a file that appears only later, and a run the
registry does not list yet are all announced. No run is started: the files are written here.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest
from mcp.client import Client

from hermes_rl_mcp.server import build_server
from mcp_helpers import ERAS

RUN_ID = "r-20260101-0000-abcdef"


async def _updates_after(era: str, uri: str, change) -> set[str]:
    """Subscribe to ``uri``, make ``change``, and return the URIs announced within 5 s."""
    updates: list[str] = []

    async def on_message(message) -> None:
        params = getattr(getattr(message, "root", message), "params", None)
        if getattr(params, "uri", None):
            updates.append(str(params.uri))

    async with Client(build_server(), mode=era, message_handler=on_message) as client:
        with anyio.fail_after(5):
            if era == "legacy":
                await client.subscribe_resource(uri)
                change()
                while uri not in updates:
                    await anyio.sleep(0.05)
            else:
                async with client.listen(resource_subscriptions=[uri]) as subscription:
                    change()
                    async for event in subscription:
                        updates.append(str(event.uri))
                        break
    return set(updates)


@pytest.mark.filterwarnings("ignore:resources/subscribe is removed")
@pytest.mark.parametrize("era", ERAS)
def test_a_change_right_after_subscribing_is_announced(era: str, isolated_state: Path) -> None:
    log = isolated_state / "runs" / RUN_ID / "logs" / "trainer.log"
    log.parent.mkdir(parents=True)
    log.write_text("step 1\n")
    uri = f"rl://runs/{RUN_ID}/logs/trainer"

    def grow() -> None:
        with log.open("a") as handle:
            handle.write("step 2\n")
        # Same size class, same second: only the mtime in nanoseconds tells it apart.
        os.utime(log, ns=(log.stat().st_atime_ns, log.stat().st_mtime_ns + 1))

    assert anyio.run(_updates_after, era, uri, grow) == {uri}


@pytest.mark.filterwarnings("ignore:resources/subscribe is removed")
@pytest.mark.parametrize("era", ERAS)
def test_a_file_that_appears_after_subscribing_is_announced(era: str, isolated_state: Path) -> None:
    metrics = isolated_state / "runs" / RUN_ID / "metrics.jsonl"
    uri = f"rl://runs/{RUN_ID}/metrics"

    def appear() -> None:
        metrics.parent.mkdir(parents=True)
        metrics.write_text('{"step": 1}\n')

    assert anyio.run(_updates_after, era, uri, appear) == {uri}
