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

from hermes_rl_mcp.api.models import SCORED_DATA_FIELDS, CheckedMatrix, WireError, check_scored_group

DEFAULT_MAX_BODY_BYTES = 1 << 30
"""Largest request body accepted after decompression (1 GiB); guards against gzip bombs."""

_WHITESPACE = re.compile(r"[ \t\n\r]*")


def _lexer():  # noqa: ANN202
    """The matrix lexer, imported on first use: it loads NumPy and builds its tables, which
    would otherwise lengthen the API's start-up (and with it every run's time to running)."""
    from hermes_rl_mcp.api import lexer

    return lexer


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
    """A checked scored group: its delivery-ready JSON text and what batching needs to know.

    The text is kept as ``parts`` (the group as received, possibly a view of the request body
    without its closing brace, then the absent fields as null), so a large group is copied
    only once, into the batch that delivers it.
    """

    parts: tuple[bytes | memoryview, ...]
    size: int
    env_id: int | None

    @property
    def raw(self) -> bytes:
        return b"".join(self.parts)


_INT_MATRIX_FIELDS = frozenset({"tokens", "masks"})
_NUMBER_MATRIX_FIELDS = frozenset({"inference_logprobs", "ref_logprobs", "advantages"})
_KEY = re.compile(r'[ \t\n\r]*"([A-Za-z_][A-Za-z0-9_]*)"[ \t\n\r]*:[ \t\n\r]*')


class _Body:
    """One request body holding scored groups, read group by group.

    For ASCII bodies (what clients send) each group's top level is walked here, its number
    matrices are proven well-formed by the lexer, and everything else goes through ``json``.
    Whenever the fast walk is unsure it falls back to decoding the group with ``json``, which
    either accepts it or raises the precise error, so both paths give the same answers.
    """

    def __init__(self, body: bytes) -> None:
        self.text = _text(body)
        self.body = body
        self.ascii = body.isascii()  # then character and byte offsets coincide
        self.decoder = _group_decoder()

    def skip_whitespace(self, pos: int) -> int:
        return _WHITESPACE.match(self.text, pos).end()  # type: ignore[union-attr]

    def group_at(self, pos: int, where: str) -> tuple[GroupPayload, int]:
        """The group starting at ``pos`` and the offset just after it."""
        found = self._fast_group_at(pos) if self.ascii else None
        if found is None:
            try:
                value, end = self.decoder.raw_decode(self.text, pos)
            except ValueError as exc:
                raise _json_error(exc) from None
        else:
            value, end = found
        size, env_id = check_scored_group(value, where)
        if self.ascii:
            raw = self.body[pos:end]
        else:
            raw = self.text[pos:end].encode("utf-8")
        return GroupPayload(_normalised(raw, value), size, env_id), end

    def _fast_group_at(self, pos: int) -> tuple[dict[str, Any], int] | None:
        text, body = self.text, self.body
        if text[pos : pos + 1] != "{":
            return None
        pos += 1
        group: dict[str, Any] = {}
        while True:
            match = _KEY.match(text, pos)
            if match is None:
                return None  # an empty object, an escaped key, ...: let json decide
            key = match.group(1)
            pos = match.end()
            integers = key in _INT_MATRIX_FIELDS
            if (integers or key in _NUMBER_MATRIX_FIELDS) and text.startswith("[[", pos):
                end = _matrix_end(body, pos)
                if end < 0:
                    return None
                matrix = body[pos:end]
                lexer = _lexer()
                lengths = lexer.int_matrix_row_lengths(matrix) if integers else lexer.number_matrix_row_lengths(matrix)
                if lengths is None:
                    return None
                group[key] = CheckedMatrix(lengths, integers)
            else:
                try:
                    group[key], end = self.decoder.raw_decode(text, pos)
                except ValueError:
                    return None
            pos = self.skip_whitespace(end)
            separator = text[pos : pos + 1]
            pos += 1
            if separator == "}":
                return group, pos
            if separator != ",":
                return None


def _matrix_end(body: bytes, pos: int) -> int:
    """Offset just after the first "]]" from ``pos`` (where a matrix ends), or -1.

    Searching "]" (memchr) and looking at the next byte is an order of magnitude faster than
    searching the two-byte string; a matrix has one "]" per row.
    """
    end = body.find(b"]", pos)
    while end >= 0 and body[end + 1 : end + 2] != b"]":
        end = body.find(b"]", end + 1)
    return end + 2 if end >= 0 else -1


def _normalised(raw: bytes, group: dict[str, Any]) -> tuple[bytes | memoryview, ...]:
    missing = [name for name in SCORED_DATA_FIELDS if name not in group]
    if not missing:
        return (raw,)
    # raw is exactly one object, so its last byte is the closing brace.
    return memoryview(raw)[:-1], "".join(f',"{name}":null' for name in missing).encode() + b"}"


def parse_scored_group(body: bytes) -> GroupPayload:
    """Body of ``POST /scored_data``: one group."""
    reader = _Body(body)
    start = reader.skip_whitespace(0)
    group, end = reader.group_at(start, "body")
    if reader.skip_whitespace(end) != len(reader.text):
        raise WireError(400, f"request body is not valid JSON: extra data after the group at char {end}")
    return group


def parse_scored_group_list(body: bytes) -> list[GroupPayload]:
    """Body of ``POST /scored_data_list``: an array of groups, each kept as its own text."""
    reader = _Body(body)
    text = reader.text
    pos = reader.skip_whitespace(0)
    if text[pos : pos + 1] != "[":
        try:
            value = reader.decoder.decode(text)
        except ValueError as exc:
            raise _json_error(exc) from None
        raise WireError(422, f"body must be a JSON array of scored groups, got {type(value).__name__}")
    pos = reader.skip_whitespace(pos + 1)
    groups: list[GroupPayload] = []
    if text[pos : pos + 1] == "]":
        pos += 1
    else:
        while True:
            group, end = reader.group_at(pos, f"body[{len(groups)}]")
            groups.append(group)
            separator_at = reader.skip_whitespace(end)
            separator = text[separator_at : separator_at + 1]
            if separator not in (",", "]"):
                raise WireError(400, f"request body is not valid JSON: expected ',' or ']' at char {separator_at}")
            pos = reader.skip_whitespace(separator_at + 1)
            if separator == "]":
                break
    if reader.skip_whitespace(pos) != len(text):
        raise WireError(400, f"request body is not valid JSON: extra data after the array at char {pos}")
    return groups
