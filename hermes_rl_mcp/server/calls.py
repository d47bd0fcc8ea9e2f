"""How tools call the core: off the event loop when slow, with expected failures as tool errors."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations

from hermes_rl_mcp.core.errors import ControlError
from hermes_rl_mcp.runs.errors import RunError

T = TypeVar("T")
EXPECTED = (ControlError, RunError)

# Tool annotations shared by the tool modules. None of the tools reaches outside this machine.
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
LOCAL_WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
STARTS = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
STOPS = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)


async def core_call(fn: Callable[..., T], *args: Any, offload: bool = True, **kwargs: Any) -> T:
    """Run a core call and turn its expected failures into tool errors carrying its message.

    ``offload=False`` runs it on the event loop: for calls known to take well under a
    millisecond, the hop to a worker thread costs more than the call.
    """
    try:
        if offload:
            return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))
        return fn(*args, **kwargs)
    except EXPECTED as exc:
        raise ToolError(str(exc)) from None
