"""The trajectory API: an Atropos-compatible queue between environments and the trainer.

``create_app()`` builds the Starlette ASGI app; ``hermes-rl-mcp api`` serves it. The protocol and
the fixes to Atropos's server are described in docs/trajectory-api.md.
"""

from hermes_rl_mcp.api.app import create_app

__all__ = ["create_app"]
