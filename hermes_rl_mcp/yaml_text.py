"""YAML in and out through libyaml when PyYAML has it: the pure-Python parser costs tens of
milliseconds for a run's config, which tool calls such as rl_get_results pay on every call."""

from __future__ import annotations

from typing import IO, Any

import yaml

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
YAMLError = yaml.YAMLError


def load(source: str | bytes | IO[str]) -> Any:
    return yaml.load(source, Loader=_LOADER)  # noqa: S506 - a safe loader, C or Python


def dump(data: Any, **options: Any) -> str:
    return yaml.dump(data, Dumper=_DUMPER, **options)
