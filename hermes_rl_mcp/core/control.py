"""The control plane: list, select, show and edit. Plain Python, no MCP.

One instance per server process. Everything that must survive a restart lives in the state
directory; the instance only keeps the discovery cache.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from hermes_rl_mcp import settings
from hermes_rl_mcp.core import config
from hermes_rl_mcp.core.discovery import Discovery
from hermes_rl_mcp.core.errors import NoSelection, SelectionDamaged, UnknownEnvironment
from hermes_rl_mcp.core.models import CurrentConfig, EditResult, EnvironmentInfo, EnvironmentList, SelectResult
from hermes_rl_mcp.run_document import RunDocument
from hermes_rl_mcp.runs.file_memo import identity


class ControlPlane:
    def __init__(self, state_dir: Path | None = None, env_dirs: list[Path] | None = None) -> None:
        self._state_dir = state_dir
        self._env_dirs = env_dirs
        self._discovery = Discovery()
        self._config_memo: tuple[tuple[Any, ...] | None, CurrentConfig] | None = None
        self._selected_memo: tuple[bytes | None, str | None] | None = None

    @property
    def state_dir(self) -> Path:
        if self._state_dir is None:
            return settings.state_dir()
        self._state_dir.mkdir(parents=True, exist_ok=True)
        return self._state_dir

    def _store(self) -> config.SelectionStore:
        return config.SelectionStore(self.state_dir)

    # --- discovery ----------------------------------------------------------------------------

    def list_environments(self) -> EnvironmentList:
        dirs = self._env_dirs if self._env_dirs is not None else settings.environment_dirs()
        listing = self._discovery.scan(dirs)
        return listing.model_copy(update={"selected": self._selected_name()})

    def _selected_name(self) -> str | None:
        """The selected environment's name; the selection is parsed again only when its text changed."""
        text = _text_of(self._store().path)
        if self._selected_memo is not None and self._selected_memo[0] == text:
            return self._selected_memo[1]
        try:
            selection = self._store().load()
        except SelectionDamaged:
            return None  # the listing stands on its own; the next selection call reports it
        name = selection.environment.name if selection else None
        self._selected_memo = (text, name)
        return name

    def _find(self, name: str) -> EnvironmentInfo:
        listing = self.list_environments()
        wanted = name.strip()
        for env in listing.environments:
            if env.name == wanted:
                return env
        by_class = [env for env in listing.environments if env.class_name == wanted]
        if len(by_class) == 1:
            return by_class[0]
        names = ", ".join(env.name for env in listing.environments) or "none found"
        raise UnknownEnvironment(f"no environment named {name!r}. Available: {names}.")

    # --- selection and config -----------------------------------------------------------------

    def select_environment(self, name: str) -> SelectResult:
        env = self._find(name)
        with self._store().changing():
            return self._select(env)

    def _select(self, env: EnvironmentInfo) -> SelectResult:
        notes: list[str] = []
        try:
            previous = self._store().load()
        except SelectionDamaged as exc:
            previous = None
            notes.append(str(exc))
        kept: dict[str, Any] = {}
        if previous and previous.environment.name == env.name:
            kept = {k: v for k, v in previous.edits.items() if k != "env.wandb_name"}
        elif previous and previous.edits:
            dropped = [k for k in previous.edits if k != "env.wandb_name"]
            if dropped:
                notes.append(f"edits of the previous selection {previous.environment.name!r} were cleared: {', '.join(dropped)}")
        selection = config.new_selection(env, kept)
        profile = config.load_profile(selection.backend)
        wandb_name = f"{env.name}-{time.strftime('%Y%m%d-%H%M%S')}"
        if "env.wandb_name" in config.field_specs(selection) and "env.wandb_name" not in profile.locked:
            selection.edits["env.wandb_name"] = wandb_name
        notes += config.prune_edits(selection, profile)
        if kept:
            notes.append(f"kept {len(kept)} edit(s) from the previous selection of {env.name!r}")
        self._store().save(selection)
        editable, locked = config.build_fields(selection, profile)
        return SelectResult(
            environment=env,
            backend=profile.backend,
            editable_fields=len(editable),
            locked_fields=len(locked),
            wandb_name=str(selection.edits.get("env.wandb_name", wandb_name)),
            notes=notes,
        )

    def _selection(self) -> config.Selection:
        selection = self._store().load()
        if selection is None:
            raise NoSelection("no environment is selected; list the environments and select one first")
        if config.is_stale(selection):
            # The environment's source changed: read its fields again, keep the edits that still fit.
            refreshed = config.new_selection(selection.environment, selection.edits)
            config.prune_edits(refreshed, config.load_profile(refreshed.backend))
            self._store().save(refreshed)
            selection = refreshed
        return selection

    def current_config(self) -> CurrentConfig:
        kept = self.kept_config()
        if kept is not None:
            return kept
        remembered = self._config_memo
        before = self._config_identity(remembered[1]) if remembered is not None else None
        selection = self._selection()
        profile = config.load_profile(selection.backend)
        editable, locked = config.build_fields(selection, profile)
        answer = CurrentConfig(
            environment=selection.environment.name,
            environment_file=selection.environment.file,
            backend=profile.backend,
            profile=profile.source,
            editable=editable,
            locked=locked,
        )
        # Remembered under the files' identities only if none of them changed while it was made
        # (another server may be editing); otherwise made again on the next call.
        after = self._config_identity(answer)
        self._config_memo = (after if before == after else None, answer)
        return answer

    def kept_config(self) -> CurrentConfig | None:
        """The last answer of ``current_config`` (the same object) while it still holds, else None.

        An agent reads the config again and again between edits: while the selection file, the
        environment's file and the profile file are the same files, so is the answer. A few small
        reads: cheap enough for a caller that must not wait."""
        remembered = self._config_memo
        if remembered is not None and remembered[0] == self._config_identity(remembered[1]):
            return remembered[1]
        return None

    def _config_identity(self, answer: CurrentConfig) -> tuple[Any, ...]:
        """What ``answer`` was made from: the selection's and the operator profile's text (small
        files, compared whole, since a rewrite within one clock tick can keep size and mtime), and
        the environment file's size and mtime (as a stale selection is detected)."""
        environment = identity(answer.environment_file)
        return _text_of(self._store().path), environment, _text_of(settings.profile_override(answer.backend))

    def edit_config(self, field: str, value: Any) -> EditResult:
        with self._store().changing():
            return self._edit(field, value)

    def _edit(self, field: str, value: Any) -> EditResult:
        selection = self._selection()
        profile = config.load_profile(selection.backend)
        name, coerced = config.validate_edit(selection, profile, field, value)
        old = config.build_fields(selection, profile)[0][name].value
        notes: list[str] = []
        selection.edits[name] = coerced
        if name == "run.backend" and coerced != profile.backend:
            new_profile = config.load_profile(str(coerced))  # raises before anything is saved
            notes += config.prune_edits(selection, new_profile)
            notes.append(f"the {coerced} profile now supplies the locked fields ({new_profile.source})")
        self._store().save(selection)
        if json.dumps(old, default=str) == json.dumps(coerced, default=str):
            notes.append("the value was already set; nothing changed")
        return EditResult(field=name, old_value=old, new_value=coerced, notes=notes)

    def run_document(self) -> RunDocument:
        """The resolved config of the current selection, for starting a run."""
        selection = self._selection()
        return config.run_document(selection, config.load_profile(selection.backend))


def _text_of(path: Path | None) -> bytes | None:
    if path is None:
        return None
    try:
        return path.read_bytes()
    except OSError:
        return None
