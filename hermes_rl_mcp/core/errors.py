"""Expected failures of the control plane. Each message says what was wrong and what is valid."""

from __future__ import annotations

import json
from typing import Any

from hermes_rl_mcp.errors import HermesRLError

EXCERPT_CHARS = 60  # how much of a rejected value a message repeats


def excerpt(value: Any) -> str:
    """A rejected value as a message shows it: a short prefix and its size, never the whole input."""
    text = json.dumps(value, default=repr, ensure_ascii=False)
    if len(text) <= EXCERPT_CHARS:
        return text
    return f"{text[:EXCERPT_CHARS]}... ({len(text)} characters)"


class ControlError(HermesRLError):
    """Base class: the MCP layer turns these into tool errors with the message as is."""


class UnknownEnvironment(ControlError):
    pass


class NoSelection(ControlError):
    pass


class IntrospectionFailed(ControlError):
    pass


class UnknownField(ControlError):
    pass


class LockedField(ControlError):
    pass


class InvalidValue(ControlError):
    pass


class ProfileError(ControlError):
    pass


class SelectionBusy(ControlError):
    """Another server process holds the selection for longer than a change may wait."""


class SelectionDamaged(ControlError):
    """The selection file could not be read; it was moved aside and the message says where."""


class DiskFull(ControlError):
    """The state directory's disk is full: nothing was saved, and the message names the disk."""


class UnknownEndpoint(ControlError):
    """The agent named a policy endpoint the operator has not named (or asked for two at once)."""


class NoCheckpoint(ControlError):
    """The run has no checkpoint to serve, or not the one asked for."""


class EndpointUnavailable(ControlError):
    """A policy endpoint could not be started or answered too late; the message says why."""


class InvalidCount(ControlError):
    """A count (groups, completions, tokens) outside its bounds."""
