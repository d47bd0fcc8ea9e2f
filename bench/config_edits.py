"""The ``--set FIELD=VALUE`` option the benchmark scripts share: config edits, for exploring."""

from __future__ import annotations

import argparse


def field_value(text: str) -> tuple[str, str]:
    """``FIELD=VALUE`` as (field, value); argparse reports anything else as a usage error."""
    field, equals, value = text.partition("=")
    if not equals or not field:
        raise argparse.ArgumentTypeError(f"takes FIELD=VALUE, got {text!r}")
    return field, value


def add_set_option(parser: argparse.ArgumentParser, help: str) -> None:
    """``--set``, repeatable; ``dict(args.set)`` is then the edits, field to value text."""
    parser.add_argument("--set", action="append", default=[], type=field_value, metavar="FIELD=VALUE", help=help)
