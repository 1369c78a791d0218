"""The action schema: the only things a chooser can ask for. There is no free-text shell."""
from __future__ import annotations

import functools
import json
from typing import Annotated, Any, ClassVar, Literal, Self, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator, model_serializer


NOTE_MAX = 300


class BaseAction(BaseModel):
    """What every action shares: no extra fields, frozen, an optional note, text that can be passed on."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    tool: str  # each action narrows it to its own literal name
    note: str | None = Field(None, max_length=NOTE_MAX,
                             description="optional: a short note to yourself (your plan, what you learned), "
                                         "shown back to you in later steps")
    # Fields left out of the serialized form while they hold their default: an action without them
    # serializes (canonicalizes, journals) exactly as it did before they existed.
    _omit_default: ClassVar[tuple[str, ...]] = ("note",)

    @model_serializer(mode="wrap")
    def _without_defaults(self, handler):
        data = handler(self)
        for name in self._omit_default:
            if data.get(name) == type(self).model_fields[name].default:
                data.pop(name, None)
        return data

    @field_validator("*", mode="after")
    @classmethod
    def _plain_text(cls, value: Any) -> Any:
        # Every text field ends up in an argv, a file or a JSON line: a NUL byte or a lone
        # surrogate cannot be passed on faithfully, so it is the proposal's fault, said as such.
        for text in (value if isinstance(value, tuple) else (value,)):   # try_patches holds several
            if isinstance(text, str):
                if "\x00" in text:
                    raise ValueError("contains a NUL character")
                try:
                    text.encode("utf-8")
                except UnicodeEncodeError:
                    raise ValueError("is not valid Unicode text (lone surrogate)") from None
        return value

    def without_note(self) -> Self:
        """The action as evidence holds it: the note travels in the evidence's data."""
        return self.model_copy(update={"note": None}) if self.note is not None else self

    def canonical(self) -> str:
        """JSON with sorted keys: key order cannot disguise a repeated action, nor can a note."""
        data = self.model_dump(mode="json")
        data.pop("note", None)
        return json.dumps(data, sort_keys=True, separators=(",", ":"))


class Search(BaseAction):
    """Search the repository for a literal string (git grep, tracked and new files)."""
    tool: Literal["search"] = "search"
    query: str = Field(min_length=1, max_length=200)
    path_glob: str | None = Field(None, max_length=200, description="e.g. 'src/**/*.py'")


class ReadFile(BaseAction):
    """Read a file of the repository, optionally a line range (1-based, inclusive)."""
    tool: Literal["read_file"] = "read_file"
    path: str = Field(min_length=1, max_length=300)
    start_line: int | None = Field(None, ge=1)
    end_line: int | None = Field(None, ge=1)
    line_numbers: bool = Field(False, description="prefix each line with its number (helps write hunk headers)")
    # Without line numbers a read serializes exactly as it always did: the repeat rule and journaled
    # fingerprints compare these forms.
    _omit_default: ClassVar[tuple[str, ...]] = ("note", "line_numbers")


class ApplyPatch(BaseAction):
    """Apply a unified diff (git format, paths a/... b/...) to the working tree."""
    tool: Literal["apply_patch"] = "apply_patch"
    diff: str = Field(min_length=1, max_length=200_000)


class ReplaceInFile(BaseAction):
    """Replace the one occurrence of `old` in a file with `new` (exact text, whitespace included;
    give enough surrounding lines to make `old` unique). Applied as a unified diff, like apply_patch."""
    tool: Literal["replace_in_file"] = "replace_in_file"
    path: str = Field(min_length=1, max_length=300)
    old: str = Field(min_length=1, max_length=50_000)
    new: str = Field(max_length=50_000)


class RunTargetTest(BaseAction):
    """Ask the protected verifier to run the target (fail-to-pass) tests on the current diff."""
    tool: Literal["run_target_test"] = "run_target_test"


class RunFullSuite(BaseAction):
    """Ask the protected verifier to run the whole protected suite on the current diff."""
    tool: Literal["run_full_suite"] = "run_full_suite"


MAX_TRIES_PER_STEP = 8


class TryPatches(BaseAction):
    """Ask the protected verifier to run the target tests, and when they pass the whole suite, on each
    of up to eight candidate diffs, without applying any: one step for several tries. Each diff is
    whole, against the repository as given (not on top of the current diff). The working tree does
    not change: apply the one that passed with apply_patch, then run the full suite and check_diff
    on it as usual."""
    tool: Literal["try_patches"] = "try_patches"
    diffs: tuple[Annotated[str, Field(min_length=1, max_length=200_000)], ...] = Field(
        min_length=1, max_length=MAX_TRIES_PER_STEP)


class CheckDiff(BaseAction):
    """Ask the protected verifier to check the current diff's scope."""
    tool: Literal["check_diff"] = "check_diff"


class Stop(BaseAction):
    """Stop and hand over. Consumes a step; the controller, not the chooser, names the exit."""
    tool: Literal["stop"] = "stop"
    reason: str | None = Field(None, max_length=2000)
    summary: str | None = Field(None, max_length=8000)


Action = Annotated[Union[Search, ReadFile, ApplyPatch, ReplaceInFile, RunTargetTest, RunFullSuite, TryPatches,
                         CheckDiff, Stop], Field(discriminator="tool")]
ACTION_TYPES: tuple[type[BaseAction], ...] = (Search, ReadFile, ApplyPatch, ReplaceInFile, RunTargetTest, RunFullSuite,
                                           TryPatches, CheckDiff, Stop)
TOOL_NAMES = tuple(t.model_fields["tool"].default for t in ACTION_TYPES)
_adapter: TypeAdapter = TypeAdapter(Action)
CHECK_TOOLS = ("run_target_test", "run_full_suite", "check_diff")  # served by the verifier
# The progress rule (controller): a read or search whose identical result came more than
# REREAD_WINDOW observations ago is a re-read, not a loop: a chooser shows only its newest
# observations in full (the model chooser five), so what it read may have left its prompt.
# The step budget still bounds re-reads.
REREADABLE_TOOLS = ("read_file", "search")
REREAD_WINDOW = 5


class InvalidAction(ValueError):
    """A proposal that is not one valid action. Carries the raw proposal for the journal."""

    def __init__(self, message: str, raw: Any):
        super().__init__(message)
        self.raw = raw


def parse_action(proposal: Any) -> BaseAction:
    """Validate a proposal (an Action, a dict, or JSON text) into exactly one action."""
    if isinstance(proposal, ACTION_TYPES):
        return proposal
    if isinstance(proposal, (str, bytes)):
        try:
            proposal = json.loads(proposal)
        except (ValueError, RecursionError) as exc:  # also undecodable bytes and absurd nesting
            raise InvalidAction(f"not JSON: {type(exc).__name__}: {str(exc)[:300]}", proposal) from None
    if not isinstance(proposal, dict):
        raise InvalidAction(f"expected one action object, got {type(proposal).__name__}", proposal)
    if nested_deeper_than(proposal, MAX_NESTING):
        # No action has a nested field; and the validator would recurse into it (or loop, if circular).
        raise InvalidAction(f"schema violation: nested deeper than {MAX_NESTING} levels", proposal)
    try:
        return _adapter.validate_python(proposal)
    except RecursionError:
        raise InvalidAction("schema violation: nested too deeply to validate", proposal) from None
    except ValidationError as exc:
        # At most ten, each location capped: a proposal with a million keys gets a short answer.
        errors = "; ".join(f"{'.'.join(map(str, e['loc']))[:100] or '<root>'}: {e['msg']}" for e in exc.errors()[:10])
        if exc.error_count() > 10:
            errors += f"; … {exc.error_count() - 10} more"
        raise InvalidAction(f"schema violation: {errors}", proposal) from None


MAX_NESTING = 32


def nested_deeper_than(value: Any, limit: int) -> bool:
    """Iterative, so neither depth nor a circular reference can exhaust the stack."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend((v, depth + 1) for v in item)
    return False


def tool_schemas() -> list[dict]:
    """One JSON Schema per tool, generated from the models: what a model chooser is offered."""
    return json.loads(_tool_schemas_text())  # a fresh copy each time, much cheaper than deepcopy


@functools.lru_cache(maxsize=1)
def _tool_schemas_text() -> str:
    return json.dumps(_tool_schemas())


@functools.lru_cache(maxsize=1)
def _tool_schemas() -> list[dict]:
    tools = []
    for model in ACTION_TYPES:
        schema = model.model_json_schema()
        props = {k: v for k, v in schema.get("properties", {}).items() if k not in ("tool", "note")}
        props["note"] = schema["properties"]["note"]  # last: the tool's own fields come first
        for prop in props.values():
            prop.pop("title", None)
        tools.append({
            "name": model.model_fields["tool"].default,
            "description": (model.__doc__ or "").strip(),
            "parameters": {"type": "object", "properties": props,
                           "required": [r for r in schema.get("required", []) if r != "tool"],
                           "additionalProperties": False},
        })
    return tools
