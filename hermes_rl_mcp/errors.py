"""The project's exception root.

Every error the project defines derives from :class:`HermesRLError`, so a caller can catch all
of them, or one category (``RunError``, ``ControlError``, ``TrainerError``, ``ConfigError``,
``WireError`` ...). Categories that stand for a bad value or a failed operation also derive
from ``ValueError`` or ``RuntimeError``, as a caller of a Python library would expect.
"""

from __future__ import annotations


class HermesRLError(Exception):
    """Base of every exception hermes-rl-mcp raises on purpose."""
