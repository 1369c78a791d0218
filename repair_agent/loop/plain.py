"""What a chooser hands over, read as plain JSON data, once, bounded, inside the chooser's time limit.

A plug-in chooser runs in the controller's process: trusted code, but its objects can be anything
— a dict subclass that answers differently each time it is read, a str subclass whose `__eq__`
lies, a model whose `model_dump` never returns, an exception whose text raises. So everything a
chooser supplies (its step: proposal, usage and call record; the exceptions it raises; its
description) is read in the chooser's own thread, within its time limit, by one `json.dumps` into
plain data (exact dict, list, str, int, float, bool, None). The controller decides on, and
journals, only that data; an object that cannot be read becomes a bounded record that says why.
"""
from __future__ import annotations

import json
import threading
import traceback
from typing import Any, Callable

from pydantic import BaseModel, ValidationError

from ..untrusted.bounded import MAX_RECORD_CHARS, bounded_record, capped, describe, exception_text, type_name
from ..choosers.base import (ChooserDescription, ChooserError, ChooserStep, ChooserUnavailable, MalformedReply,
                             TokenBudgetExceeded, Usage)

MAX_PROPOSAL_CHARS = 1_000_000   # as JSON; the largest valid action (a 200,000-character diff) fits many times
MAX_USAGE_CHARS = 10_000
MAX_CALL_CHARS = 1_000_000       # a model chooser's prompt and raw reply; larger is kept as a capped record
MAX_NAME_CHARS = 200
MAX_TRACEBACK_CHARS = 20_000
MAX_DESCRIPTION_CHARS = 20_000


class Unreadable(Exception):
    """A chooser object that is not plain JSON data within bounds. `raw` is a bounded record of it."""

    def __init__(self, detail: str, raw: Any):
        super().__init__(detail)
        self.detail, self.raw = detail, raw


class UnusableChooser(ValueError):
    """The chooser's name or seed cannot be used; the message says which and why."""


class ChooserReply(BaseModel):
    """One chooser invocation as plain data: what the controller works with, and journals."""

    proposal: Any = None
    usage: dict[str, Any] = {}
    call: Any = None
    failure: str | None = None   # malformed | unavailable | token_budget | raised | unreadable
    traceback: str | None = None  # for "raised": where the chooser broke
    infrastructure: bool = True  # for "unavailable": the endpoint failed (False: e.g. the context was too long)
    detail: str = ""
    raw: Any = None


def call_with_timeout(fn: Callable[[], Any], timeout_s: float, *, name: str = "chooser") -> Any:
    """fn() in a daemon thread: a chooser that never returns cannot keep the process alive after the
    controller has stopped (Python cannot kill a thread; it can refuse to wait for it)."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed to the caller's thread as is
            box["error"] = exc

    worker = threading.Thread(target=target, name=name, daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        raise TimeoutError(f"no answer within {timeout_s:.1f}s")
    if "error" in box:
        raise box["error"]
    return box["value"]


# -- one step: the chooser's thread runs all of this ----------------------------------------------

def consult(chooser: Any, view: Any, progress: dict[str, str]) -> ChooserReply:
    """Ask once and read everything the chooser supplies. Runs in the chooser's thread; `progress`
    tells the controller, should the time limit pass, what was still being read.

    The one place a plug-in's bare answer is adapted: a choose() that returns an action (or its
    dict, or JSON text) instead of a ChooserStep is read as a step that spent nothing."""
    progress["stage"] = "choose"
    try:
        answer = chooser.choose(view)
    except BaseException as exc:  # SystemExit too: a plug-in's exit is not the controller's
        progress["stage"] = "error"
        return _failure(exc)
    progress["stage"] = "proposal"
    try:
        step = isinstance(answer, ChooserStep)
    except BaseException:  # an object whose class cannot even be asked is read as the proposal, and refused
        step = False
    reply = ChooserReply()
    try:
        reply.proposal = plain_proposal(read_attribute(answer, "proposal", "step's") if step else answer)
    except Unreadable as exc:
        return ChooserReply(failure="unreadable", detail=exc.detail, raw=exc.raw, proposal=exc.raw)
    if not step:
        return reply
    try:
        progress["stage"] = "usage"
        reply.usage = read_usage(read_attribute(answer, "usage", "step's"), "the chooser's usage")
        progress["stage"] = "call"
        reply.call = plain_json(dumped(read_attribute(answer, "call", "step's"), "the chooser's call record"),
                                "the chooser's call record", MAX_CALL_CHARS, cap=True)
    except Unreadable as exc:
        reply.failure, reply.detail, reply.raw = "unreadable", exc.detail, exc.raw
    return reply


def read_usage(usage: Any, what: str) -> dict[str, Any]:
    """A step's Usage as the journal keeps it ({} for a chooser that spent nothing)."""
    plain = plain_json(dumped(usage, what), what, MAX_USAGE_CHARS)
    if plain is None:
        return {}
    try:
        return Usage.model_validate(plain).model_dump()
    except ValidationError as exc:
        raise Unreadable(f"{what} is not a Usage record: {exc.errors()[0]['msg']}", bounded_record(plain)) from None


def dumped(value: Any, what: str) -> Any:
    """A pydantic record as JSON data (its model_dump, under the step's time limit); anything else as is."""
    if isinstance(value, BaseModel):
        try:
            return value.model_dump(mode="json")
        except BaseException as exc:
            raise Unreadable(f"{what}'s model_dump raised {describe(exc)}", bounded_record(value)) from None
    return value


def plain_proposal(proposal: Any) -> Any:
    """The proposal as plain data. A model is dumped first; JSON text (str or exact bytes) stays text,
    for the action parser to decode."""
    if type(proposal) is bytes:  # immutable, with no methods of the chooser's: already plain
        if len(proposal) > MAX_PROPOSAL_CHARS:
            raise Unreadable(f"the proposal is {len(proposal)} bytes, more than {MAX_PROPOSAL_CHARS}",
                             capped(proposal.decode("latin-1")))
        return proposal
    if isinstance(proposal, BaseModel):
        try:
            proposal = proposal.model_dump(mode="json")
        except BaseException as exc:
            raise Unreadable(f"the proposal's model_dump raised {describe(exc)}", bounded_record(proposal)) from None
    return plain_json(proposal, "the proposal", MAX_PROPOSAL_CHARS)  # kept whole up to that size, too


def plain_json(value: Any, what: str, max_chars: int, *, cap: bool = False) -> Any:
    """value read once (json.dumps) into plain data. Not JSON, or larger than max_chars: Unreadable,
    or with cap=True a capped record in its place."""
    try:
        text = json.dumps(value)
    except BaseException as exc:
        raise Unreadable(f"{what} is not plain JSON data ({describe(exc)})",
                         bounded_record(value, max(max_chars, MAX_RECORD_CHARS))) from None
    if len(text) > max_chars:
        if cap:
            return capped(text)
        raise Unreadable(f"{what} is {len(text)} characters of JSON, more than {max_chars}", capped(text))
    return json.loads(text)


def read_attribute(obj: Any, name: str, whose: str = "") -> Any:
    """getattr(obj, name, None), but an attribute that raises (other than missing) says so."""
    try:
        return getattr(obj, name, None)
    except BaseException as exc:
        raise Unreadable(f"reading the chooser's {whose + ' ' if whose else ''}{name} raised {describe(exc)}",
                         {"unreadable": name, "why": describe(exc)}) from None


def _failure(exc: BaseException) -> ChooserReply:
    """A chooser's exception as plain data: its kind, its (bounded) text, and what it carries. One
    that is no ChooserError is a bug in the chooser: its traceback is kept for the journal."""
    kind = ("token_budget" if isinstance(exc, TokenBudgetExceeded) else "malformed" if isinstance(exc, MalformedReply)
            else "unavailable" if isinstance(exc, ChooserUnavailable) else "raised")
    text = exception_text(exc)
    if not isinstance(exc, ChooserError):
        name = type_name(exc)
        raw = f"{name}({text!r})"  # the raw error is the step's proposal, as the journal keeps it
        return ChooserReply(failure=kind, detail=f"the chooser raised {name}: {text}", raw=raw, proposal=raw,
                            traceback=traceback_text(exc))
    raw = bounded_record(_attribute_or_none(exc, "raw"), MAX_PROPOSAL_CHARS)
    try:
        usage = read_usage(_attribute_or_none(exc, "usage"), "the error's usage")
    except Unreadable:
        usage = {}
    try:
        # A failed step sent requests too (an endpoint that failed after its retries): they are the
        # step's record as much as a successful step's are.
        call = plain_json(dumped(_attribute_or_none(exc, "call"), "the error's call record"),
                          "the error's call record", MAX_CALL_CHARS, cap=True)
    except Unreadable as unreadable:
        call = unreadable.raw
    detail = {"token_budget": f"token budget spent: {text}", "malformed": f"malformed chooser reply: {text}",
              "unavailable": f"chooser unavailable: {text}"}[kind]
    infrastructure = _attribute_or_none(exc, "infrastructure")
    return ChooserReply(failure=kind, detail=detail, raw=raw, proposal=raw, usage=usage, call=call,
                        infrastructure=infrastructure if type(infrastructure) is bool else True)


def traceback_text(exc: BaseException) -> str:
    """The exception's traceback, bounded: where the chooser broke, for whoever fixes it."""
    try:
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    except BaseException as error:  # an exception whose text raises: its frames still say where
        frames = "".join(traceback.format_tb(exc.__traceback__))
        text = f"{frames}{type_name(exc)}: <message unreadable: {describe(error)}>"
    return text if len(text) <= MAX_TRACEBACK_CHARS else "...\n" + text[-MAX_TRACEBACK_CHARS:]


def _attribute_or_none(obj: Any, name: str) -> Any:
    try:
        return getattr(obj, name, None)
    except BaseException:
        return None


# -- the chooser's identity, read once at setup ----------------------------------------------------

def read_description(chooser: Any, timeout_s: float, fallback: str | None) -> ChooserDescription:
    """The chooser's `describe()`, asked once under the time limit. A plug-in without one is described
    by its `name` attribute (else `fallback`, else its class name) and wishes for nothing.
    UnusableChooser says what is wrong."""
    def read() -> tuple[Any, str]:
        try:
            asked = getattr(chooser, "describe", None)
            if callable(asked):
                return plain_json(dumped(asked(), "its describe()"), "its describe()", MAX_DESCRIPTION_CHARS), ""
            return {"name": plain_json(getattr(chooser, "name", None), "its name", MAX_NAME_CHARS * 8)}, \
                type_name(chooser)
        except Unreadable as exc:
            return exc, ""
        except BaseException as exc:
            return Unreadable(f"its describe() or name raised {describe(exc)}", None), ""

    try:
        data, class_name = call_with_timeout(read, timeout_s, name="chooser-description")
    except TimeoutError:
        raise UnusableChooser(f"the chooser plug-in is unusable: its describe() or name did not answer within "
                              f"{timeout_s:.1f}s") from None
    if isinstance(data, Unreadable):
        raise UnusableChooser(f"the chooser plug-in is unusable: {data.detail}")
    if not isinstance(data, dict):
        raise UnusableChooser(f"the chooser plug-in is unusable: its describe() must return a ChooserDescription, "
                              f"got {type(data).__name__}")
    if class_name and data.get("name") is None:
        data["name"] = fallback or class_name
    name = data.get("name")
    if not isinstance(name, str) or not name or len(name) > MAX_NAME_CHARS or not name.isprintable():
        raise UnusableChooser(f"the chooser plug-in is unusable: its name must be a printable string of 1 to "
                              f"{MAX_NAME_CHARS} characters, got {type(name).__name__} {json.dumps(name)[:60]}")
    try:
        return ChooserDescription.model_validate(data)
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(str(part) for part in problem["loc"])
        raise UnusableChooser(f"the chooser plug-in is unusable: its description's {where}: {problem['msg']}") from None
