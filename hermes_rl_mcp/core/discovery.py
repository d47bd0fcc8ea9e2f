"""Find environments by reading Python files as syntax trees.

Environment code is never imported or run here: a file is parsed with ``ast`` and its classes,
bases, imports and a few class attributes are recorded. A class is an environment when it
derives from ``BaseEnv`` (ours or atroposlib's, by plain, aliased or dotted name) directly or
through other classes in the scanned files. Parsed files are cached by path, size and mtime, so
a repeated listing costs one ``stat`` per file.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from pathlib import Path

from hermes_rl_mcp.core.models import DiscoveryProblem, EnvironmentInfo, EnvironmentList

ROOT_BASE = "BaseEnv"
SKIPPED_DIRS = {"__pycache__", "node_modules", "site-packages", ".git", ".venv", "venv", ".tox"}


@dataclass(frozen=True)
class ClassRecord:
    name: str
    bases: tuple[str, ...]  # dotted base names with import aliases resolved
    env_name: str | None  # the `name = "..."` class attribute
    config_class: str | None  # the `env_config_cls = X` class attribute
    description: str
    is_abstract: bool  # declares abstract methods of its own
    line: int


@dataclass(frozen=True)
class FileRecord:
    path: Path
    classes: tuple[ClassRecord, ...] = ()
    error: str | None = None
    module_description: str = ""


@dataclass
class _CacheEntry:
    size: int
    mtime_ns: int
    record: FileRecord


def _first_line(docstring: str | None) -> str:
    if not docstring:
        return ""
    for line in docstring.strip().splitlines():
        if line.strip():
            return line.strip()
    return ""


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr}" if head else None
    if isinstance(node, ast.Subscript):  # Generic[...] style bases
        return _dotted(node.value)
    return None


def _import_aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> fully dotted origin, for every top-level import in the file."""
    aliases: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    aliases[alias.asname] = alias.name
    return aliases


def _resolve(dotted: str, aliases: dict[str, str]) -> str:
    head, _, rest = dotted.partition(".")
    origin = aliases.get(head)
    if origin is None:
        return dotted
    return f"{origin}.{rest}" if rest else origin


def _is_abstract_method(node: ast.stmt) -> bool:
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    return any((_dotted(d) or "").endswith("abstractmethod") for d in node.decorator_list)


def _class_record(node: ast.ClassDef, aliases: dict[str, str]) -> ClassRecord:
    env_name = config_class = None
    for stmt in node.body:
        targets: list[ast.expr] = []
        value: ast.expr | None = None
        if isinstance(stmt, ast.Assign):
            targets, value = stmt.targets, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets, value = [stmt.target], stmt.value
        for target in targets:
            if not isinstance(target, ast.Name):
                continue
            if target.id == "name" and isinstance(value, ast.Constant) and isinstance(value.value, str):
                env_name = value.value
            elif target.id == "env_config_cls" and value is not None:
                config_class = _dotted(value)
    bases = tuple(_resolve(b, aliases) for b in (_dotted(base) for base in node.bases) if b)
    return ClassRecord(
        name=node.name,
        bases=bases,
        env_name=env_name,
        config_class=config_class,
        description=_first_line(ast.get_docstring(node)),
        is_abstract=any(_is_abstract_method(stmt) for stmt in node.body),
        line=node.lineno,
    )


def parse_file(path: Path) -> FileRecord:
    try:
        source = path.read_bytes()
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        return FileRecord(path=path, error=f"syntax error at line {exc.lineno}: {exc.msg}")
    except (OSError, ValueError) as exc:  # unreadable, or NUL bytes / bad encoding
        return FileRecord(path=path, error=f"cannot read: {exc}")
    aliases = _import_aliases(tree)
    classes = tuple(_class_record(node, aliases) for node in tree.body if isinstance(node, ast.ClassDef))
    return FileRecord(path=path, classes=classes, module_description=_first_line(ast.get_docstring(tree)))


def _sdk_of(dotted_root: str) -> str:
    if dotted_root.startswith("atroposlib"):
        return "atroposlib"
    if dotted_root.startswith("hermes_rl_mcp"):
        return "hermes"
    return "unknown"


@dataclass
class Discovery:
    """Scans environment directories; keeps parsed files and the last listing between scans."""

    _cache: dict[str, _CacheEntry] = field(default_factory=dict)
    _last: tuple[tuple, EnvironmentList] | None = None

    @staticmethod
    def _python_files(root: Path) -> list[tuple[str, int, int]]:
        """(path, size, mtime_ns) of every .py file below ``root``, in a stable order."""
        found: list[tuple[str, int, int]] = []
        stack = [str(root)]
        while stack:
            directory = stack.pop()
            try:
                entries = list(os.scandir(directory))
            except OSError:
                continue
            for entry in entries:
                name = entry.name
                if name.startswith("."):
                    continue
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if name not in SKIPPED_DIRS:
                            stack.append(entry.path)
                    elif name.endswith(".py"):
                        stat = entry.stat()
                        found.append((entry.path, stat.st_size, stat.st_mtime_ns))
                except OSError:
                    continue  # vanished between listing and stat
        found.sort()
        return found

    def _record(self, path: str, size: int, mtime_ns: int) -> FileRecord:
        cached = self._cache.get(path)
        if cached and cached.size == size and cached.mtime_ns == mtime_ns:
            return cached.record
        record = parse_file(Path(path))
        self._cache[path] = _CacheEntry(size, mtime_ns, record)
        return record

    def scan(self, directories: list[Path]) -> EnvironmentList:
        problems: list[DiscoveryProblem] = []
        listed: list[tuple[str, int, int]] = []
        for directory in directories:
            if not directory.is_dir():
                problems.append(DiscoveryProblem(file=str(directory), reason="environment directory does not exist"))
                continue
            listed.extend(self._python_files(directory))
        fingerprint = (tuple(str(d) for d in directories), tuple(listed))
        if self._last is not None and self._last[0] == fingerprint:
            return self._last[1]  # shared: callers copy before changing it

        files: list[FileRecord] = []
        seen: set[str] = set()
        for path, size, mtime_ns in listed:
            if path in seen:  # nested or repeated directories
                continue
            seen.add(path)
            record = self._record(path, size, mtime_ns)
            if record.error:
                problems.append(DiscoveryProblem(file=path, reason=record.error))
            files.append(record)
        # Drop cache entries of files that vanished, so the cache never outgrows the tree.
        for stale in set(self._cache) - seen:
            del self._cache[stale]
        listing = EnvironmentList(
            environments=_environments(files, problems),
            problems=problems,
            scanned_dirs=[str(d) for d in directories],
        )
        self._last = (fingerprint, listing)
        return listing


def _environments(files: list[FileRecord], problems: list[DiscoveryProblem]) -> list[EnvironmentInfo]:
    by_name: dict[str, list[tuple[FileRecord, ClassRecord]]] = {}
    for record in files:
        for cls in record.classes:
            by_name.setdefault(cls.name, []).append((record, cls))

    # Fixed point: which class names reach BaseEnv, and through which root import.
    roots: dict[str, str] = {}
    changed = True
    while changed:
        changed = False
        for name, definitions in by_name.items():
            if name in roots:
                continue
            for _, cls in definitions:
                for base in cls.bases:
                    last = base.rsplit(".", 1)[-1]
                    if last == ROOT_BASE:
                        roots[name] = base
                    elif last in roots and last != name:
                        roots[name] = roots[last]
                    else:
                        continue
                    changed = True
                    break
                if name in roots:
                    break

    subclassed = {
        base.rsplit(".", 1)[-1]
        for record in files
        for cls in record.classes
        if cls.name in roots
        for base in cls.bases
    }

    def inherited_config(cls: ClassRecord, depth: int = 0) -> str:
        if cls.config_class:
            return cls.config_class.rsplit(".", 1)[-1]
        if depth < 20:
            for base in cls.bases:
                for _, parent in by_name.get(base.rsplit(".", 1)[-1], []):
                    return inherited_config(parent, depth + 1)
        return "BaseEnvConfig"

    listed: list[EnvironmentInfo] = []
    owner: dict[str, EnvironmentInfo] = {}
    for record in files:
        env_classes = [c for c in record.classes if c.name in roots]
        for cls in env_classes:
            intermediate = cls.name in subclassed and cls.env_name is None
            if intermediate or cls.is_abstract or cls.name == ROOT_BASE:
                continue
            name = cls.env_name or record.path.stem
            info = EnvironmentInfo(
                name=name,
                class_name=cls.name,
                file=str(record.path),
                line=cls.line,
                description=cls.description or record.module_description,
                config_class=inherited_config(cls),
                sdk=_sdk_of(roots[cls.name]),
            )
            if name in owner:
                first = owner[name]
                problems.append(
                    DiscoveryProblem(
                        file=info.file,
                        reason=(
                            f"duplicate environment name {name!r} ({info.class_name}); "
                            f"{first.class_name} in {first.file} keeps the name. "
                            "Give the class a distinct `name` attribute."
                        ),
                    )
                )
                continue
            owner[name] = info
            listed.append(info)
    listed.sort(key=lambda e: e.name)
    return listed
