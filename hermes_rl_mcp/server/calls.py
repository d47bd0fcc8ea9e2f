"""How tools call the core, and how their answers look on the wire.

An agent's correctable mistake (a bad value, an unknown name, a missing selection, a backend
that cannot start here) is a *refusal*: a normal tool result whose text starts with
"Refused:" and whose structured result is a ``Refusal``. It is not an ``isError`` result,
because clients such as Hermes Agent count every ``isError`` as a server failure and lock a
server out after three in a row. Genuine faults of the server stay ``isError``. Every tool's
output schema admits its own result or a ``Refusal``, so clients that validate
``structuredContent`` accept both.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, Literal, TypeVar

import anyio
import pydantic_core
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp_types import CallToolResult, InputRequiredResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field, ValidationError

from hermes_rl_mcp.core.errors import ControlError, excerpt
from hermes_rl_mcp.errors import HermesRLError
from hermes_rl_mcp.runs.errors import RunError

T = TypeVar("T")
EXPECTED = (ControlError, RunError)

# Tool annotations shared by the tool modules. None of the tools reaches outside this machine.
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
LOCAL_WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
STARTS = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
STOPS = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)


class Refusal(BaseModel):
    """A call refused for a reason the caller can correct; nothing was changed."""

    refused: Literal[True] = Field(True, description="Always true: the call was refused and changed nothing.")
    kind: str = Field(description="What was wrong, as a snake_case name (invalid_value, unknown_run, ...).")
    reason: str = Field(description="What was wrong and what is valid.")


class Refused(HermesRLError, ToolError):
    """Raised inside a tool for a correctable mistake; the server answers with a ``Refusal``."""

    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(reason)
        self.refusal = Refusal(kind=kind, reason=reason)


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


async def core_call(fn: Callable[..., T], *args: Any, offload: bool = True, **kwargs: Any) -> T:
    """Run a core call; its expected failures become refusals carrying the core's message.

    ``offload=False`` runs it on the event loop: for calls known to take well under a
    millisecond, the hop to a worker thread costs more than the call.
    """
    try:
        if offload:
            return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))
        return fn(*args, **kwargs)
    except EXPECTED as exc:
        raise Refused(_snake(type(exc).__name__), str(exc)) from None


def answer(model: BaseModel) -> CallToolResult:
    """A tool's answer: its model as ``structuredContent`` and the same JSON, compact, as text.

    Compact because a client's model reads the text: indented JSON costs it a third more tokens.
    """
    structured = model.model_dump(mode="json", by_alias=True)
    return CallToolResult(content=[TextContent(type="text", text=pydantic_core.to_json(structured).decode())],
                          structured_content=structured)


class KeptAnswers:
    """The last few answers, by the model object each was built from.

    The core returns the very same object while what it was made from is unchanged (a finished
    run's results, the current config between edits), so its answer (the model's JSON twice,
    a picture) is built once.
    """

    def __init__(self, size: int = 8) -> None:
        self._size = size
        self._kept: OrderedDict[tuple[int, Hashable], tuple[BaseModel, CallToolResult]] = OrderedDict()

    async def of(
        self, model: BaseModel, build: Callable[[], CallToolResult | Awaitable[CallToolResult]], variant: Hashable = None
    ) -> CallToolResult:
        key = (id(model), variant)
        kept = self._kept.get(key)
        if kept is not None and kept[0] is model:  # holding the object keeps its id from being reused
            return kept[1]
        made = build()
        built = await made if inspect.isawaitable(made) else made
        self._kept[key] = (model, built)
        while len(self._kept) > self._size:
            self._kept.popitem(last=False)
        return built


class AnswerOnce(FuncMetadata):
    """The SDK's result conversion, done once: a returned model is dumped a single time.

    The SDK validates a returned model against the tool's output model again, writes it out as
    indented text and then as structured content; the models here are already validated at
    construction (and the output schema admits what they dump), so each call paid for two
    conversions it did not need.
    """

    def convert_result(self, result: Any) -> CallToolResult | InputRequiredResult:
        if isinstance(result, (CallToolResult, InputRequiredResult)):
            return result
        if isinstance(result, BaseModel):
            return answer(result)
        return super().convert_result(result)

    @classmethod
    def of(cls, metadata: FuncMetadata, output_schema: dict[str, Any] | None) -> AnswerOnce:
        return cls(arg_model=metadata.arg_model, output_schema=output_schema,
                   output_model=metadata.output_model, wrap_output=metadata.wrap_output)


def refusal_result(refusal: Refusal) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=f"Refused: {refusal.reason}")],
        structured_content=refusal.model_dump(mode="json"),
    )


def refusal_of(error: ToolError) -> Refusal | None:
    """The refusal behind a tool error, or None when the error is a fault of the server."""
    cause = error.__cause__  # the SDK wraps what a tool raised in a ToolError of its own
    return cause.refusal if isinstance(cause, Refused) else None


def argument_refusal(tool: str, error: ValidationError, parameters: dict[str, Any]) -> Refusal:
    problems = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"]) or "arguments"
        got = f" (got {excerpt(item['input'])})" if "input" in item and item["type"] != "missing" else ""
        problems.append(f"{where}: {item['msg']}{got}")
    return Refusal(
        kind="invalid_arguments",
        reason=f"invalid arguments to {tool}: {'; '.join(problems)}. Valid arguments: {describe_parameters(parameters)}.",
    )


def unknown_arguments_refusal(tool: str, unknown: list[str], parameters: dict[str, Any]) -> Refusal:
    names = ", ".join(excerpt(name) for name in unknown)
    return Refusal(
        kind="unknown_arguments",
        reason=f"{tool} takes no argument {names}. Valid arguments: {describe_parameters(parameters)}.",
    )


def describe_parameters(parameters: dict[str, Any]) -> str:
    """``run_id (string, required), lines (integer 1..5000)`` from a tool's input schema."""
    properties: dict[str, Any] = parameters.get("properties", {})
    if not properties:
        return "none"
    required = set(parameters.get("required", ()))
    parts = []
    for name, schema in properties.items():
        options = [option for option in schema.get("anyOf", [schema]) if option.get("type") != "null"]
        kinds = []
        for option in options:
            if "enum" in option:
                kinds.append("one of " + "|".join(map(str, option["enum"])))
            elif "minimum" in option or "maximum" in option:
                kinds.append(f"{option.get('type', 'number')} {option.get('minimum', '')}..{option.get('maximum', '')}")
            else:
                kinds.append(str(option.get("type", "any JSON value")))
        kind = " or ".join(kinds) or "any JSON value"
        parts.append(f"{name} ({kind}{', required' if name in required else ''})")
    return ", ".join(parts)


def with_refusal(schema: dict[str, Any]) -> dict[str, Any]:
    """An output schema that admits the tool's own result or a ``Refusal``."""
    own = dict(schema)
    definitions = own.pop("$defs", None)
    combined: dict[str, Any] = {"type": "object", "anyOf": [own, REFUSAL_SCHEMA]}
    if definitions:
        combined["$defs"] = definitions  # $refs inside the tool's own schema resolve at the root
    return combined


REFUSAL_SCHEMA = Refusal.model_json_schema()
