"""What a chooser hands over, read as plain JSON data, once, bounded, inside the chooser's time limit.

A plug-in chooser runs in the controller's process: trusted code, but its objects can be anything
— a dict subclass that answers differently each time it is read, a str subclass whose `__eq__`
lies, a model whose `model_dump` never returns, an exception whose text raises. So everything a
chooser supplies (its proposal, `last_usage`, `last_call`, the exceptions it raises, its `name`
and `seed`) is read in the chooser's own thread, within its time limit, by one `json.dumps` into
plain data (exact dict, list, str, int, float, bool, None). The controller decides on, and
journals, only that data; an object that cannot be read becomes a bounded record that says why.
"""
from __future__ import annotations

import json
import threading
from typing import Any, Callable

from pydantic import BaseModel

from .bounded import MAX_RECORD_CHARS, bounded_record, capped, describe, exception_text, type_name
from .choosers.base import ChooserError, ChooserUnavailable, MalformedReply, TokenBudgetExceeded

MAX_PROPOSAL_CHARS = 1_000_000   # as JSON; the largest valid action (a 200,000-character diff) fits many times
MAX_USAGE_CHARS = 10_000
MAX_CALL_CHARS = 1_000_000       # a model chooser's prompt and raw reply; larger is kept as a capped record
MAX_NAME_CHARS = 200


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
    tells the controller, should the time limit pass, what was still being read."""
    progress["stage"] = "choose"
    try:
        proposal = chooser.choose(view)
    except BaseException as exc:  # SystemExit too: a plug-in's exit is not the controller's
        progress["stage"] = "error"
        reply = _failure(exc)
        if isinstance(exc, ChooserError):
            # A failed step sent requests too (an endpoint that failed after its retries): they are
            # the step's record as much as a successful step's are.
            try:
                reply.call = plain_json(read_attribute(chooser, "last_call"), "the chooser's last_call",
                                        MAX_CALL_CHARS, cap=True)
            except Unreadable as unreadable:
                reply.call = unreadable.raw
        return reply
    progress["stage"] = "proposal"
    reply = ChooserReply()
    try:
        reply.proposal = plain_proposal(proposal)
    except Unreadable as exc:
        return ChooserReply(failure="unreadable", detail=exc.detail, raw=exc.raw, proposal=exc.raw)
    try:
        progress["stage"] = "last_usage"
        usage = plain_json(read_attribute(chooser, "last_usage"), "the chooser's last_usage", MAX_USAGE_CHARS)
        if usage is not None and not isinstance(usage, dict):
            raise Unreadable(f"the chooser's last_usage must be a JSON object, got {type(usage).__name__}",
                             bounded_record(usage))
        reply.usage = usage or {}
        progress["stage"] = "last_call"
        reply.call = plain_json(read_attribute(chooser, "last_call"), "the chooser's last_call", MAX_CALL_CHARS,
                                cap=True)
    except Unreadable as exc:
        reply.failure, reply.detail, reply.raw = "unreadable", exc.detail, exc.raw
    return reply


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


def read_attribute(obj: Any, name: str) -> Any:
    """getattr(obj, name, None), but an attribute that raises (other than missing) says so."""
    try:
        return getattr(obj, name, None)
    except BaseException as exc:
        raise Unreadable(f"reading the chooser's {name} raised {describe(exc)}",
                         {"unreadable": name, "why": describe(exc)}) from None


def _failure(exc: BaseException) -> ChooserReply:
    """A chooser's exception as plain data: its kind, its (bounded) text, and what it carries."""
    kind = ("token_budget" if isinstance(exc, TokenBudgetExceeded) else "malformed" if isinstance(exc, MalformedReply)
            else "unavailable" if isinstance(exc, ChooserUnavailable) else "raised")
    text = exception_text(exc)
    if not isinstance(exc, ChooserError):
        name = type_name(exc)
        raw = f"{name}({text!r})"  # the raw error is the step's proposal, as the journal keeps it
        return ChooserReply(failure=kind, detail=f"the chooser raised {name}: {text}", raw=raw, proposal=raw)
    raw = bounded_record(_attribute_or_none(exc, "raw"), MAX_PROPOSAL_CHARS)
    try:
        usage = plain_json(_attribute_or_none(exc, "usage"), "usage", MAX_USAGE_CHARS)
    except Unreadable:
        usage = None
    detail = {"token_budget": f"token budget spent: {text}", "malformed": f"malformed chooser reply: {text}",
              "unavailable": f"chooser unavailable: {text}"}[kind]
    infrastructure = _attribute_or_none(exc, "infrastructure")
    return ChooserReply(failure=kind, detail=detail, raw=raw, proposal=raw,
                        usage=usage if isinstance(usage, dict) else {},
                        infrastructure=infrastructure if type(infrastructure) is bool else True)


def _attribute_or_none(obj: Any, name: str) -> Any:
    try:
        return getattr(obj, name, None)
    except BaseException:
        return None


# -- the chooser's identity, read once at setup ----------------------------------------------------

class ChooserIdentity(BaseModel):
    """What the run records of its chooser, read once at setup."""

    name: str
    seed: int | None = None
    model: dict[str, Any] | None = None   # a model chooser's model, endpoint and parameters (never a key)
    models_file: str | None = None
    mutation_analysis: bool = False   # it asked for the mutation analysis with the target-test observation


def read_identity(chooser: Any, timeout_s: float, fallback: str | None) -> ChooserIdentity:
    """The chooser's `name` (a short printable string; `fallback` or its class name when it has none),
    `seed` (an int, or none), `mutation_analysis` (true asks for it) and, for a model chooser,
    `describe_model()` and `models_file`, read once under the time limit. UnusableChooser says what is wrong."""
    def read() -> tuple[Any, Any, str, Any, Any, bool]:
        try:
            name = plain_json(getattr(chooser, "name", None), "its name", MAX_NAME_CHARS * 8)
            seed = plain_json(getattr(chooser, "seed", None), "its seed", 100)
            describer = getattr(chooser, "describe_model", None)
            model = plain_json(describer() if callable(describer) else None, "its model description",
                               MAX_USAGE_CHARS)
            models_file = plain_json(getattr(chooser, "models_file", None), "its models file", 4096)
            wants = plain_json(getattr(chooser, "mutation_analysis", False), "its mutation_analysis", 10) is True
        except Unreadable as exc:
            return exc, None, "", None, None, False
        except BaseException as exc:
            return Unreadable(f"reading its name, seed, model or mutation_analysis raised {describe(exc)}", None), None, "", None, None, False
        return name, seed, type_name(chooser), model, models_file, wants

    try:
        name, seed, class_name, model, models_file, wants = call_with_timeout(read, timeout_s, name="chooser-identity")
    except TimeoutError:
        raise UnusableChooser(f"the chooser plug-in is unusable: its name, seed, model and mutation_analysis could not be read within "
                              f"{timeout_s:.1f}s") from None
    if isinstance(name, Unreadable):
        raise UnusableChooser(f"the chooser plug-in is unusable: {name.detail}")
    if name is None:
        name = fallback or class_name
    if not isinstance(name, str) or not name or len(name) > MAX_NAME_CHARS or not name.isprintable():
        raise UnusableChooser(f"the chooser plug-in is unusable: its name must be a printable string of 1 to "
                              f"{MAX_NAME_CHARS} characters, got {type(name).__name__} {json.dumps(name)[:60]}")
    if seed is not None and type(seed) is not int:
        raise UnusableChooser(f"the chooser plug-in is unusable: its seed must be an integer, got "
                              f"{type(seed).__name__} {json.dumps(seed)[:60]}")
    return ChooserIdentity(name=name, seed=seed, model=model if isinstance(model, dict) else None,
                           models_file=models_file if isinstance(models_file, str) else None,
                           mutation_analysis=wants)
