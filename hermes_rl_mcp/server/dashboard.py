"""The live run dashboard: an MCP App (the ``io.modelcontextprotocol/ui`` extension).

The run tools that show a run (start, status, results) carry ``_meta.ui.resourceUri`` pointing at
one ``ui://`` HTML resource; a host that renders MCP Apps shows it in a sandboxed iframe, and
the page follows the run by calling the run tools through the host. Hosts without Apps support
ignore both and get the same text and structured results as before.

The page is kept as separate HTML, CSS and JavaScript files in the package and inlined into one
document here: the host's sandbox allows no network, so everything the page needs is in it.
"""

from __future__ import annotations

from importlib import resources

from mcp.server.apps import Apps

DASHBOARD_URI = "ui://hermes-rl/run-dashboard.html"
_PAGE = "dashboard.html"
_INLINED = {"/* dashboard.css */": "dashboard.css", "/* dashboard.js */": "dashboard.js"}


def dashboard_html() -> str:
    """The dashboard as one self-contained HTML document."""
    folder = resources.files("hermes_rl_mcp.server") / "dashboard_page"
    page = (folder / _PAGE).read_text(encoding="utf-8")
    for marker, name in _INLINED.items():
        if marker not in page:
            raise RuntimeError(f"{_PAGE} lacks the marker {marker!r} where {name} goes")
        page = page.replace(marker, (folder / name).read_text(encoding="utf-8"))
    return page


def dashboard_extension() -> Apps:
    """The Apps extension holding the dashboard resource; the run tools bind to it."""
    apps = Apps()
    apps.add_html_resource(
        DASHBOARD_URI,
        dashboard_html(),
        name="run-dashboard",
        title="Training run dashboard",
        description="Live view of one training run: status, components, curves, log tail, checkpoints, stop.",
        prefers_border=True,
    )
    return apps
