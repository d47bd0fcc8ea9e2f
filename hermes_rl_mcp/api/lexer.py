"""Validate JSON arrays of arrays of numbers as text, without decoding a single number.

Decoding a scored group with ``json`` builds a Python object per token and logprob, which costs
several milliseconds per group; the server never needs the values, only the certainty that the
text is a well-formed matrix of integers (or numbers) and its row lengths. These functions check
exactly that with a handful of vectorised numpy passes over the bytes (character classes,
bracket depth, allowed neighbour pairs, per-number rules).

Contract: a result other than None means the text is a JSON array of arrays of integers (or of
numbers) with these row lengths. None means "not proven": the caller then decodes the text with
``json`` to accept it or to explain what is wrong, so the fast path never changes an answer.
"""

from __future__ import annotations

import numpy as np

# Character classes, numbered so that the groups tested below are contiguous ranges: number
# characters 1..6, then "," "[" and whitespace (what may precede a number) 7..9, then "]".
_BAD, _DIGIT, _ZERO, _MINUS, _POINT, _EXPONENT, _PLUS, _COMMA, _OPEN, _SPACE, _CLOSE = range(11)
# _DIGIT is 1-9, _EXPONENT "e" or "E", _OPEN "[", _CLOSE "]", _SPACE any JSON whitespace.


def _class_table() -> bytes:
    table = bytearray(256)  # everything else is _BAD
    for char, kind in (("-", _MINUS), (",", _COMMA), ("[", _OPEN), ("]", _CLOSE), (".", _POINT), ("+", _PLUS)):
        table[ord(char)] = kind
    table[ord("0")] = _ZERO
    for char in "123456789":
        table[ord(char)] = _DIGIT
    for char in "eE":
        table[ord(char)] = _EXPONENT
    for char in " \t\n\r":
        table[ord(char)] = _SPACE
    return bytes(table)


_CLASS_OF_BYTE = _class_table()

_INT_FOLLOWERS = {
    _OPEN: (_OPEN, _CLOSE, _DIGIT, _ZERO, _MINUS),
    _DIGIT: (_DIGIT, _ZERO, _COMMA, _CLOSE),
    _ZERO: (_DIGIT, _ZERO, _COMMA, _CLOSE),  # a leading zero followed by a digit is refused separately
    _MINUS: (_DIGIT, _ZERO),
    _COMMA: (_DIGIT, _ZERO, _MINUS, _OPEN, _SPACE),
    _SPACE: (_DIGIT, _ZERO, _MINUS, _OPEN),  # only ever right after a comma (see _matrix_row_lengths)
    _CLOSE: (_COMMA, _CLOSE),
}
_NUMBER_FOLLOWERS = {
    **_INT_FOLLOWERS,
    _DIGIT: (*_INT_FOLLOWERS[_DIGIT], _POINT, _EXPONENT),
    _ZERO: (*_INT_FOLLOWERS[_ZERO], _POINT, _EXPONENT),
    _POINT: (_DIGIT, _ZERO),
    _EXPONENT: (_DIGIT, _ZERO, _MINUS, _PLUS),
    _PLUS: (_DIGIT, _ZERO),
}


def _class_pair_table(pairs: dict[int, tuple[int, ...]]) -> bytes:
    """Maps a pair code (first class << 4 | second class) to 1 when the pair may occur, else 0."""
    table = bytearray(256)
    for first, nexts in pairs.items():
        for following in nexts:
            table[first << 4 | following] = 1
    return bytes(table)


_INT_CLASS_PAIR_ALLOWED = _class_pair_table(_INT_FOLLOWERS)
_NUMBER_CLASS_PAIR_ALLOWED = _class_pair_table(_NUMBER_FOLLOWERS)


def _between(values: np.ndarray, low: int, high: int) -> np.ndarray:
    """values in [low, high], as one subtraction and one comparison (uint8 wraps below low)."""
    return (values - np.uint8(low)) <= np.uint8(high - low)


def int_matrix_row_lengths(text: bytes) -> list[int] | None:
    """Row lengths if ``text`` is a JSON array of arrays of integers, else None (not proven)."""
    lengths = _compact_row_lengths(text, integers=True)
    return lengths if lengths is not None else _matrix_row_lengths(text, integers=True)


def number_matrix_row_lengths(text: bytes) -> list[int] | None:
    """Row lengths if ``text`` is a JSON array of arrays of numbers, else None (not proven)."""
    lengths = _compact_row_lengths(text, integers=False)
    return lengths if lengths is not None else _matrix_row_lengths(text, integers=False)


# -- The layouts clients actually send ------------------------------------------------------
#
# json.dumps writes "," or ", " between elements and no other whitespace. For that layout one
# table lookup per pair of adjacent bytes (a 64 Ki-entry table indexed by the two bytes read as
# one little-endian uint16) checks every character and every neighbour at once; leading zeros,
# repeated fraction/exponent marks and the row structure are then checked on few positions.
# Anything else (other whitespace, a failed check) goes to the general lexer below.

# Flags of a byte pair: allowed at all; "0" then a digit; a number start ("," "[" or " ") then
# "0"; "-" then "0"; a number start then "-". A leading zero is a start-"0" pair followed by a
# "0"-digit pair, or start-"-", "-"-"0", "0"-digit in a row (an exponent may start with 0).
# Each "X then" flag sits one bit above the flag of the pair that must follow it, so one shift
# lines a pair up with its successor (see _has_leading_zero).
_VALID, _ZERO_DIGIT, _START_ZERO, _MINUS_ZERO, _START_MINUS = 1, 2, 4, 16, 32
_STARTS = b",[ "


def _byte_pair_flags_table(pairs: dict[int, tuple[int, ...]]) -> np.ndarray:
    table = np.zeros(1 << 16, dtype=np.uint8)
    for first in range(256):
        first_class = _CLASS_OF_BYTE[first]
        if first_class == _BAD or (first_class == _SPACE and first != ord(" ")):
            continue
        for second in range(256):
            second_class = _CLASS_OF_BYTE[second]
            if second_class == _BAD or (second_class == _SPACE and second != ord(" ")):
                continue
            if second_class not in pairs.get(first_class, ()):
                continue
            flags = _VALID
            if first == ord("0") and second_class in (_DIGIT, _ZERO):
                flags |= _ZERO_DIGIT
            if first in _STARTS and second == ord("0"):
                flags |= _START_ZERO
            if first in _STARTS and second == ord("-"):
                flags |= _START_MINUS
            if first == ord("-") and second == ord("0"):
                flags |= _MINUS_ZERO
            table[second << 8 | first] = flags
    return table


def _not_repeated_marks_table() -> np.ndarray:
    table = np.ones(1 << 16, dtype=np.uint8)
    for pair in (b"..", b"ee", b"eE", b"Ee", b"EE", b"e.", b"E."):
        table[pair[1] << 8 | pair[0]] = 0
    return table


_INT_BYTE_PAIR_FLAGS = _byte_pair_flags_table(_INT_FOLLOWERS)
_NUMBER_BYTE_PAIR_FLAGS = _byte_pair_flags_table(_NUMBER_FOLLOWERS)
_DELETE_ALL_BUT_MARKS = bytes(range(256)).translate(None, b".eE,[]")  # delete all but marks and separators
_NOT_REPEATED_MARKS = _not_repeated_marks_table()


def _pair_flags(text: bytes, table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Flags of the pairs starting at even offsets (0,1), (2,3), ... and at odd ones (1,2), ..."""
    n = len(text)
    even = table.take(np.frombuffer(text, dtype="<u2", count=n // 2))
    odd = table.take(np.frombuffer(text, dtype="<u2", count=(n - 1) // 2, offset=1))
    return even, odd


def _has_leading_zero(first: np.ndarray, second: np.ndarray, third: np.ndarray) -> bool:
    """Whether pairs k of ``first``, ``second``, ``third`` (three consecutive pairs) start a
    number with a zero followed by a digit."""
    m = min(len(first), len(second))
    followed = (first[:m] >> 1) & second[:m]  # start-"0" then "0"-digit; start-"-" then "-"-"0"
    if not (followed & (_ZERO_DIGIT | _MINUS_ZERO)).any():
        return False
    if (followed & _ZERO_DIGIT).any():
        return True
    k = min(m, len(third))
    return bool(((followed[:k] >> 3) & third[:k] & _ZERO_DIGIT).any())


def _compact_row_lengths(text: bytes, *, integers: bool) -> list[int] | None:
    """Row lengths of a matrix in json.dumps's layout; None for any other layout or a doubt."""
    n = len(text)
    if n < 4 or text[:2] != b"[[" or text[-2:] != b"]]":
        return None
    even, odd = _pair_flags(text, _INT_BYTE_PAIR_FLAGS if integers else _NUMBER_BYTE_PAIR_FLAGS)
    if not (even.all() and odd.all()):
        return None
    # After even pair k (bytes 2k, 2k+1) come odd pair k and even pair k + 1; after odd pair k
    # come even pair k + 1 and odd pair k + 1.
    if _has_leading_zero(even, odd, even[1:]) or _has_leading_zero(odd, even[1:], odd[1:]):
        return None

    if not integers:
        # At most one "." then one exponent per number: with digits and signs deleted, two
        # marks of one number become neighbours.
        marks = text.translate(None, _DELETE_ALL_BUT_MARKS)
        if len(marks) > 1 and not all(flags.all() for flags in _pair_flags(marks, _NOT_REPEATED_MARKS)):
            return None

    # Rows: "[" ... "]" joined by "," or ", ", no brackets inside a row. Neighbour pairs already
    # exclude empty numbers, so a non-empty row holds one more number than it has commas.
    bounds: list[int] = []  # start ("[") and end ("]") of each row
    find, last_row_end = text.find, n - 2
    start = 1
    while True:
        end = find(b"]", start)
        if end < 0 or find(b"[", start + 1, end) >= 0:
            return None
        bounds += (start, end)
        if end == last_row_end:
            break
        start = end + 2 if text[end + 2] == 0x5B else end + 3  # after "],[" or "], ["
        if text[end + 1] != 0x2C or text[start] != 0x5B:
            return None
    is_comma = (np.frombuffer(text, dtype=np.uint8) == 0x2C).view(np.uint8)
    commas = np.add.reduceat(is_comma, bounds, dtype=np.intp)[::2]  # within [start, end) of each row
    row = np.array(bounds, dtype=np.intp)
    non_empty = row[1::2] - row[::2] > 1
    return ((commas + 1) * non_empty).tolist()


_DELETE_CLASSES_BUT_BRACKETS = bytes(code for code in range(256) if code not in (_OPEN, _CLOSE))
_DIGIT_AND_SIGN_CLASSES = bytes((_DIGIT, _ZERO, _MINUS, _PLUS))  # deleting these leaves ".", "e" and separators
_WHITESPACE = bytes((_SPACE,))
# One class as a byte string, to search the translated text for it.
_POINT_CLASS, _EXPONENT_CLASS = bytes((_POINT,)), bytes((_EXPONENT,))
_PLUS_CLASS, _COMMA_CLASS = bytes((_PLUS,)), bytes((_COMMA,))


def _matrix_row_lengths(text: bytes, *, integers: bool) -> list[int] | None:
    """Row lengths of a matrix in any whitespace layout, checked on character classes; None
    when not proven."""
    classes = text.translate(_CLASS_OF_BYTE)
    if bytes((_BAD,)) in classes:
        return None
    if integers and (_POINT_CLASS in classes or _EXPONENT_CLASS in classes or _PLUS_CLASS in classes):
        return None  # a fraction or exponent: let the decoder name the offending element
    char_class = np.frombuffer(classes, dtype=np.uint8)
    row_separator = bytes((_CLOSE, _COMMA, _OPEN))  # "],["
    if _WHITESPACE in classes:
        space = char_class == _SPACE
        if space[0] or np.any(space[1:] & (char_class[:-1] != _COMMA)):
            # Whitespace elsewhere than single spaces after commas (json.dumps's default
            # layout): it must not sit inside a number or between two numbers; then drop it.
            keep = np.flatnonzero(~space)
            number_char = _between(char_class[keep], _DIGIT, _PLUS)
            spaced = np.diff(keep) > 1  # whitespace between kept characters i and i+1
            if np.any(spaced & number_char[:-1] & number_char[1:]):
                return None
            classes = classes.translate(None, _WHITESPACE)
            char_class = np.frombuffer(classes, dtype=np.uint8)
        else:
            row_separator = bytes((_CLOSE, _COMMA, _SPACE, _OPEN))  # "], ["
    if classes == bytes((_OPEN, _CLOSE)):
        return []  # []

    # Brackets: "[" rows "]" where rows are "[...]" joined by single commas, and no brackets
    # inside a row; so numbers only ever sit inside rows.
    if classes[:2] != bytes((_OPEN, _OPEN)) or classes[-2:] != bytes((_CLOSE, _CLOSE)):
        return None
    inner = classes[1:-1]
    rows = inner.split(row_separator)
    if inner.translate(None, _DELETE_CLASSES_BUT_BRACKETS) != bytes((_OPEN, _CLOSE)) * len(rows):
        return None

    # Neighbours: every adjacent pair must be one that valid JSON numbers and arrays produce.
    pairs = (char_class[:-1] << np.uint8(4)) | char_class[1:]
    allowed = _INT_CLASS_PAIR_ALLOWED if integers else _NUMBER_CLASS_PAIR_ALLOWED
    if b"\x00" in pairs.tobytes().translate(allowed):  # 0 marks a pair that may not occur
        return None

    # Leading zeros: a number's first digit 0 (after an optional minus) must not be followed by
    # a digit. Exponent digits (after e, e+ or e-) may start with 0, so only a minus at a
    # number start counts.
    zero = char_class == _ZERO
    if zero.any():
        starts = np.zeros(len(char_class), dtype=bool)  # character i follows ",", "[" or a space
        starts[1:] = _between(char_class[:-1], _COMMA, _SPACE)
        first_zero = zero & starts
        first_zero[2:] |= zero[2:] & (char_class[1:-1] == _MINUS) & starts[1:-1]
        if np.any(first_zero[:-1] & _between(char_class[1:], _DIGIT, _ZERO)):
            return None

    if not integers and (_POINT_CLASS in classes or _EXPONENT_CLASS in classes):
        # At most one "." and one exponent per number, "." first: with digits and signs
        # deleted, two marks of one number become adjacent.
        marks = classes.translate(None, _DIGIT_AND_SIGN_CLASSES)
        if _POINT_CLASS * 2 in marks or _EXPONENT_CLASS * 2 in marks or _EXPONENT_CLASS + _POINT_CLASS in marks:
            return None

    # Pairs guarantee no empty numbers, so a non-empty row has one more number than commas.
    rows[0] = rows[0][1:]  # the first row still carries its "[",
    rows[-1] = rows[-1][:-1]  # the last its "]"
    return [row.count(_COMMA_CLASS) + 1 if row else 0 for row in rows]
