"""Validate one edited value against a field's JSON Schema, in process.

The environment's config class lives in untrusted code that the server never imports, so edits
are checked against the schema the introspection child reported. Coercion is as lax as pydantic's
own: ``"8"`` is accepted for an integer, ``"true"`` for a boolean, ``3`` for a float, because many
MCP clients send every argument as a string. Everything else is refused with a message that says
what the field accepts.
"""

from __future__ import annotations

import copy
import json
import math
import re
import sys
from typing import Any

from hermes_rl_mcp.core.errors import excerpt
from hermes_rl_mcp.errors import HermesRLError

MAX_STRING = 10_000
MAX_ABS_NUMBER = 1e15  # beyond this a config value is a typo, and JSON loses integer precision
_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+")
_DECIMAL_TEXT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_NONZERO_DIGIT = re.compile(r"[1-9]")
_ANY_DIGIT = re.compile(r"\d")  # any script's digits: a full-width 5 gets the explanation too


class SchemaMismatch(HermesRLError, ValueError):
    pass


def describe(schema: dict[str, Any]) -> str:
    """A short human description of what a schema accepts."""
    if "enum" in schema:
        return "one of " + ", ".join(json.dumps(v) for v in schema["enum"])
    if "const" in schema:
        return f"exactly {json.dumps(schema['const'])}"
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        return " or ".join(describe(o) for o in options)
    kind = schema.get("type", "any value")
    if isinstance(kind, list):
        return " or ".join(kind)
    bounds = []
    for key, sign in (("exclusiveMinimum", ">"), ("minimum", ">="), ("exclusiveMaximum", "<"), ("maximum", "<=")):
        if key in schema:
            bounds.append(f"{sign} {schema[key]}")
    if "minLength" in schema:
        bounds.append(f"at least {schema['minLength']} characters")
    if "maxLength" in schema:
        bounds.append(f"at most {schema['maxLength']} characters")
    if "items" in schema and kind == "array":
        return f"a list of {describe(schema['items'])}"
    noun = {"integer": "an integer", "number": "a number", "boolean": "true or false", "string": "a string",
            "null": "null", "array": "a list", "object": "an object"}.get(kind, str(kind))
    return noun + (" " + " and ".join(bounds) if bounds else "")


def _from_text(text: str) -> int | float:
    """A number written the plain way, or SchemaMismatch. Python's int() and float() also take
    surrounding spaces, digit separators and non-ASCII digits, which a config value should not."""
    if _INTEGER_TEXT.fullmatch(text):
        return int(text)
    if not _DECIMAL_TEXT.fullmatch(text):
        if not _ANY_DIGIT.search(text):
            raise SchemaMismatch(f"{excerpt(text)} is not a number")
        raise SchemaMismatch(
            f"{excerpt(text)} is not a number as written: use ASCII digits with an optional sign, decimal point "
            "and exponent, such as 5, -2, 0.001 or 3e-4 (no spaces, underscores or other digits)"
        )
    number = float(text)
    if number == 0.0 and _NONZERO_DIGIT.search(text.split("e")[0].split("E")[0]):
        raise SchemaMismatch(f"{excerpt(text)} is too small to represent: it would become 0.0")
    return number


def _number(value: Any, integer: bool) -> int | float:
    if isinstance(value, bool):
        raise SchemaMismatch("a boolean is not a number")
    if isinstance(value, str):
        value = _from_text(value)
    if not isinstance(value, (int, float)):
        raise SchemaMismatch(f"{type(value).__name__} is not a number")
    if isinstance(value, float) and not math.isfinite(value):
        raise SchemaMismatch(f"{value} is not a finite number")
    if isinstance(value, float) and 0 < abs(value) < sys.float_info.min:
        raise SchemaMismatch(f"{value} is below the smallest normal float ({sys.float_info.min:g}): too small to mean anything")
    if integer:
        if isinstance(value, float):
            if not value.is_integer():
                raise SchemaMismatch(f"{value} is not a whole number")
            value = int(value)
    return value


def _bounds(value: int | float, schema: dict[str, Any]) -> None:
    checks = (
        ("minimum", lambda b: value >= b, ">="),
        ("exclusiveMinimum", lambda b: value > b, ">"),
        ("maximum", lambda b: value <= b, "<="),
        ("exclusiveMaximum", lambda b: value < b, "<"),
    )
    for key, ok, sign in checks:
        if key in schema and not ok(schema[key]):
            raise SchemaMismatch(f"{value} is not {sign} {schema[key]}")


def _from_json_text(value: Any, noun: str) -> Any:
    """Clients that send every argument as a string send lists and objects as JSON text."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        raise SchemaMismatch(f"{excerpt(value)} is not a JSON {noun}") from None


def coerce(value: Any, schema: dict[str, Any]) -> Any:
    """Return ``value`` converted to what ``schema`` accepts, or raise SchemaMismatch."""
    if "enum" in schema:
        for option in schema["enum"]:
            if value == option or (isinstance(value, str) and str(option) == value.strip()):
                return option
        raise SchemaMismatch(f"{excerpt(value)} is not {describe(schema)}")
    if "const" in schema:
        if value != schema["const"]:
            raise SchemaMismatch(f"{excerpt(value)} is not {describe(schema)}")
        return value
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        # Prefer an option that accepts the value unchanged (so "null" stays a string for
        # str | None), then the first that accepts it after coercion.
        reasons: list[str] = []
        for strict in (True, False):
            for option in options:
                try:
                    result = coerce(value, option)
                except SchemaMismatch as exc:
                    reasons.append(str(exc))
                    continue
                if not strict or result == value and type(result) is type(value):
                    return result
        # A value of the right type that breaks a bound says so, rather than "is not a string".
        bound = next((reason for reason in reasons if " is not " not in reason), None)
        raise SchemaMismatch(bound or f"{excerpt(value)} is not {describe(schema)}")
    kind = schema.get("type")
    if isinstance(kind, list):
        return coerce(value, {"anyOf": [{**schema, "type": k} for k in kind]})
    if kind in ("integer", "number"):
        number = _number(value, integer=kind == "integer")
        _bounds(number, schema)
        if abs(number) > MAX_ABS_NUMBER:
            raise SchemaMismatch(f"{number} is out of range (|value| must be at most {MAX_ABS_NUMBER:g})")
        return number
    if kind == "boolean":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0", "yes", "no"):
            return value.strip().lower() in ("true", "1", "yes")
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        raise SchemaMismatch(f"{excerpt(value)} is not true or false")
    if kind == "string":
        if not isinstance(value, str):
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                value = str(value)
            else:
                raise SchemaMismatch(f"{excerpt(value)} is not a string")
        limit = min(schema.get("maxLength", MAX_STRING), MAX_STRING)
        if len(value) > limit:
            raise SchemaMismatch(f"a string of {len(value)} characters is longer than {limit}")
        if len(value) < schema.get("minLength", 0):
            raise SchemaMismatch(f"{excerpt(value)} is shorter than {schema['minLength']} characters")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            raise SchemaMismatch(f"{excerpt(value)} does not match the pattern {schema['pattern']}")
        return value
    if kind == "null":
        if value is None or (isinstance(value, str) and value.strip().lower() in ("null", "none")):
            return None
        raise SchemaMismatch(f"{excerpt(value)} is not null")
    if kind == "array":
        value = _from_json_text(value, "list")
        if not isinstance(value, list):
            raise SchemaMismatch(f"{excerpt(value)} is not a list")
        item_schema = schema.get("items", {})
        return [coerce(v, item_schema) for v in value]
    if kind == "object":
        value = _from_json_text(value, "object")
        if not isinstance(value, dict):
            raise SchemaMismatch(f"{excerpt(value)} is not an object")
        return value
    # No type information: accept any JSON value, bounded in size.
    if len(json.dumps(value, default=str)) > MAX_STRING:
        raise SchemaMismatch("value is too large")
    return value


def inline_refs(schema: Any, defs: dict[str, Any], depth: int = 0) -> Any:
    """Replace ``$ref``s into ``$defs`` by the definitions, so each field schema stands alone."""
    if depth > 12:
        return {}
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            target = copy.deepcopy(defs.get(ref.rsplit("/", 1)[-1], {}))
            rest = {k: v for k, v in schema.items() if k != "$ref"}
            return inline_refs({**target, **rest}, defs, depth + 1)
        return {k: inline_refs(v, defs, depth + 1) for k, v in schema.items()}
    if isinstance(schema, list):
        return [inline_refs(v, defs, depth + 1) for v in schema]
    return schema
