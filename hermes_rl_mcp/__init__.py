"""hermes-rl-mcp: an MCP server for reinforcement-learning training of LLMs."""

import sys

__version__ = "0.1.0"

# httpx imports its command-line client (click, pygments, rich) with the package, about 90 ms of
# every component's start-up, and no process here runs that client. A None entry makes the
# import fail, and httpx then defines a stub in its place.
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
