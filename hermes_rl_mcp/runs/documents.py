"""A run's readable documents besides its logs: the config it ran with and its metrics.

Both are served from the end of the file (the cost does not grow with its size), only from
inside the run's directory, and with secrets redacted.
"""

from __future__ import annotations

from pathlib import Path

from hermes_rl_mcp import settings
from hermes_rl_mcp.runs.errors import InvalidArgument, LogNotAvailable, UnknownRun
from hermes_rl_mcp.runs.ids import validate_run_id
from hermes_rl_mcp.runs.layout import RunPaths
from hermes_rl_mcp.runs.redact import redact_text
from hermes_rl_mcp.runs.registry import Registry
from hermes_rl_mcp.runs.tail import tail_lines

DOCUMENTS = ("config", "metrics")
MAX_LINES = 5000


def read_document(run_id: str, document: str, lines: int = 200, *, state: Path | None = None) -> str:
    """The last ``lines`` lines of ``config.yaml`` or ``metrics.jsonl`` of a run, redacted."""
    run_id = validate_run_id(run_id)
    if document not in DOCUMENTS:
        raise InvalidArgument(f"unknown run document {document!r}: valid are {', '.join(DOCUMENTS)}")
    if isinstance(lines, bool) or not isinstance(lines, int) or not 1 <= lines <= MAX_LINES:
        raise InvalidArgument(f"lines must be an integer from 1 to {MAX_LINES}, not {lines!r}")
    state_path = Path(state) if state is not None else settings.state_dir()
    with Registry.shared(state_path) as registry:
        if registry.get_run(run_id) is None:
            raise UnknownRun(f"no run with id {run_id!r} is recorded; list the runs to see the ids there are")
    paths = RunPaths.of(state_path, run_id)
    path = paths.config if document == "config" else paths.metrics
    if not path.exists():
        return ""
    real = path.resolve()
    if not real.is_relative_to(paths.root.resolve()) or not real.is_file():
        raise LogNotAvailable(f"the {document} of run {run_id} is not a regular file inside the run directory")
    found, _, _ = tail_lines(real, lines)
    return redact_text("\n".join(found))
