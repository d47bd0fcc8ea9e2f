"""Expected failures of run control. Each message says what was wrong and what to do instead."""

from __future__ import annotations

from hermes_rl_mcp.errors import HermesRLError


class RunError(HermesRLError):
    """Base class: callers (the MCP layer, the CLI) show the message to the user as is."""


class InvalidRunId(RunError):
    pass


class UnknownRun(RunError):
    pass


class InvalidArgument(RunError):
    """A component name, line count, status filter or similar argument is not valid."""


class InvalidRunConfig(RunError):
    """The run document handed to ``start_run`` lacks something a run needs."""


class BackendUnavailable(RunError):
    """The requested backend cannot run on this machine (missing key, extra or plug-in)."""


class LogNotAvailable(RunError):
    """The component's log does not exist (yet) or lies outside the run directory."""


class DiskFull(RunError):
    """The state directory's disk is full or below the free-space floor; the message names it."""


class NotResumable(RunError):
    """The run cannot be resumed: still going, no checkpoint on disk, or its config unreadable."""
