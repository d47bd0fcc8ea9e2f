"""The built-in backends' names, defined once for the config layer, the trainer's settings and
the run launcher. Plain constants: the supervisor imports this without pydantic."""

from __future__ import annotations

LOCAL = "local"
TINKER = "tinker"
BUILTIN_BACKENDS: tuple[str, ...] = (LOCAL, TINKER)
DEFAULT_BACKEND = LOCAL
