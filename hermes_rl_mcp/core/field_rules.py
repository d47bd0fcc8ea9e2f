"""What a field's JSON Schema cannot say: names are printable, and paths stay inside the run.

Fields are recognised by name, the way a person reads them: ``*_name``, ``base_model`` and the
like are names (one printable line: no NUL, escape sequences, line breaks or invisible format
characters); a field with ``path``, ``dir`` or ``file`` among the words of its name is a path,
which a run resolves inside its own directory, so it must be relative and never climb out.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from hermes_rl_mcp.core.errors import excerpt

PATH_WORDS = frozenset({"path", "dir", "directory", "file", "filename"})
NAME_FIELDS = frozenset({"name", "model", "base_model", "model_name"})


def _words(field: str) -> list[str]:
    return field.rsplit(".", 1)[-1].split("_")


def is_path_field(field: str) -> bool:
    return bool(PATH_WORDS.intersection(_words(field)))


def is_name_field(field: str) -> bool:
    key = field.rsplit(".", 1)[-1]
    return key in NAME_FIELDS or _words(field)[-1] == "name"


def problem(field: str, value: object) -> str | None:
    """Why ``value`` does not fit ``field`` beyond its schema, or None when it fits."""
    if not isinstance(value, str):
        return None
    path, name = is_path_field(field), is_name_field(field)
    if (path or name) and not value.isprintable():
        bad = next(ch for ch in value if not ch.isprintable())
        return (
            f"{excerpt(value)} contains the unprintable character U+{ord(bad):04X}; a "
            f"{'path' if path else 'name'} is one line of printable characters"
        )
    if path:
        parts = PurePosixPath(value).parts
        if not value.strip() or value.startswith(("/", "~")) or "\\" in value or ".." in parts:
            return (
                f"{excerpt(value)} is not a path inside the run's directory: give a relative path such as "
                "'groups.jsonl' or 'data/groups.jsonl' (no leading / or ~, no .. parts, no backslashes); "
                "the run writes it under its own directory runs/<run_id>/"
            )
    return None
