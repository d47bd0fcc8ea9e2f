"""Request bodies: content decoding, JSON parsing, and scored groups kept as their JSON text.

A scored group is stored and later delivered as the exact JSON text it arrived in (with absent
optional fields appended as null), so the server decodes each group once to check it and never
re-encodes it: re-encoding large batches is what makes a naive server slow.
"""

from __future__ import annotations

import json
import re
import zlib
from dataclasses import dataclass
from typing import Any

from hermes_rl_mcp.api.models import SCORED_DATA_FIELDS, WireError, check_scored_group

DEFAULT_MAX_BODY_BYTES = 1 << 30
"""Largest request body accepted after decompression (1 GiB); guards against gzip bombs."""

_WHITESPACE = re.compile(r"[ \t\n\r]*")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a valid JSON number; send finite numbers only")


def _group_decoder() -> json.JSONDecoder:
    # Floats stay as their text (see models._NUMBERS); NaN/Infinity are refused outright
    # because a non-finite score or logprob silently poisons a training step.
    return json.JSONDecoder(parse_float=str.encode, parse_constant=_reject_constant)


def decode_content(body: bytes, content_encoding: str | None, max_bytes: int = DEFAULT_MAX_BODY_BYTES) -> bytes:
    """Undo ``Content-Encoding`` (identity or gzip, as Atropos clients send)."""
    encoding = (content_encoding or "").strip().lower()
    if encoding in ("", "identity"):
        if len(body) > max_bytes:
            raise WireError(413, f"request body is {len(body)} bytes; the limit is {max_bytes}")
        return body
    if encoding not in ("gzip", "x-gzip"):
        raise WireError(415, f"Content-Encoding {encoding!r} is not supported; send identity or gzip")
    if not body:
        return body
    parts: list[bytes] = []
    produced = 0
    pending = body
    while pending:  # a gzip stream may hold several members back to back
        inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
        try:
            part = inflater.decompress(pending, max_bytes + 1 - produced)
        except zlib.error as exc:
            raise WireError(400, f"body is declared gzip but does not decompress: {exc}") from None
        produced += len(part)
        if produced > max_bytes or inflater.unconsumed_tail:
            raise WireError(413, f"decompressed request body exceeds the limit of {max_bytes} bytes")
        if not inflater.eof:
            raise WireError(400, "gzip body is truncated (the stream has no end)")
        parts.append(part)
        pending = inflater.unused_data
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _text(body: bytes) -> str:
    if not body.strip():
        raise WireError(400, "request body is empty; send a JSON document")
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WireError(400, f"request body is not UTF-8: {exc}") from None


def _json_error(exc: ValueError) -> WireError:
    return WireError(400, f"request body is not valid JSON: {exc}")


def parse_json(body: bytes) -> Any:
    """Parse a small control payload."""
    text = _text(body)
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except ValueError as exc:
        raise _json_error(exc) from None


@dataclass(frozen=True, slots=True)
class GroupPayload:
    """A checked scored group: its delivery-ready JSON text and what batching needs to know."""

    raw: bytes
    size: int
    env_id: int | None


def _normalised(text: str, group: dict[str, Any]) -> bytes:
    missing = [name for name in SCORED_DATA_FIELDS if name not in group]
    if missing:
        # text is exactly one object, so its last character is the closing brace.
        text = text[:-1] + "".join(f',"{name}":null' for name in missing) + "}"
    return text.encode("utf-8")


def parse_scored_group(body: bytes) -> GroupPayload:
    """Body of ``POST /scored_data``: one group."""
    text = _text(body).strip(" \t\r\n")
    try:
        group = _group_decoder().decode(text)
    except ValueError as exc:
        raise _json_error(exc) from None
    size, env_id = check_scored_group(group)
    return GroupPayload(_normalised(text, group), size, env_id)


def parse_scored_group_list(body: bytes) -> list[GroupPayload]:
    """Body of ``POST /scored_data_list``: an array of groups, each kept as its own text."""
    text = _text(body)
    decoder = _group_decoder()
    pos = _WHITESPACE.match(text, 0).end()  # type: ignore[union-attr]
    if text[pos : pos + 1] != "[":
        try:
            value = decoder.decode(text)
        except ValueError as exc:
            raise _json_error(exc) from None
        raise WireError(422, f"body must be a JSON array of scored groups, got {type(value).__name__}")
    pos = _WHITESPACE.match(text, pos + 1).end()  # type: ignore[union-attr]
    groups: list[GroupPayload] = []
    if text[pos : pos + 1] == "]":
        pos += 1
    else:
        while True:
            try:
                group, end = decoder.raw_decode(text, pos)
            except ValueError as exc:
                raise _json_error(exc) from None
            where = f"body[{len(groups)}]"
            size, env_id = check_scored_group(group, where)
            groups.append(GroupPayload(_normalised(text[pos:end], group), size, env_id))
            separator_at = _WHITESPACE.match(text, end).end()  # type: ignore[union-attr]
            separator = text[separator_at : separator_at + 1]
            if separator not in (",", "]"):
                raise WireError(400, f"request body is not valid JSON: expected ',' or ']' at char {separator_at}")
            pos = _WHITESPACE.match(text, separator_at + 1).end()  # type: ignore[union-attr]
            if separator == "]":
                break
    if _WHITESPACE.match(text, pos).end() != len(text):  # type: ignore[union-attr]
        raise WireError(400, f"request body is not valid JSON: extra data after the array at char {pos}")
    return groups
