"""The chooser role: read a View, propose exactly one action. It cannot write, run or grant."""
from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from ..actions import BaseAction
from ..state import View


@runtime_checkable
class Chooser(Protocol):
    """What the controller asks of a chooser. Besides `choose`, it reads these side channels: `name`
    and `seed` once at setup, `last_usage` and `last_call` after every `choose`, and calls
    `set_deadline` before it. A plug-in is foreign code, so each is read through plain.py's
    bounded reader (one read, under the step's time limit, into plain JSON); a plug-in that does
    not define one reads as None (no seed, no usage: 0 tokens, no call record, no deadline)."""

    name: str
    seed: int | None                     # what orders its choices, when it takes one
    last_usage: dict[str, Any] | None    # token counts of the last choose(): prompt/completion/total_tokens
    last_call: Any                       # a JSON record of the last choose() (a model's requests, latency)

    def set_deadline(self, deadline: float) -> None:
        """The time.monotonic() by which choose() must have returned (a retrying chooser stops before it)."""
        ...

    def choose(self, view: View) -> BaseAction | dict[str, Any]:
        """Return one proposal. Plain dicts are validated by the controller like anything else."""
        ...


class ChooserError(RuntimeError):
    """Base for chooser failures; `raw` keeps the unedited reply or error for the journal."""

    def __init__(self, message: str, raw: Any = None, usage: dict | None = None):
        super().__init__(message)
        self.raw = raw
        self.usage = usage or {}


class MalformedReply(ChooserError):
    """The chooser answered, but not with one valid tool call: the controller exits invalid_action."""


class ChooserUnavailable(ChooserError):
    """The chooser could not answer (HTTP error, timeout, crash): the controller exits dependency_failure.

    `infrastructure`: the endpoint failed (after its retries), not the model: a sweep counts such a
    run apart from the model's repair failures and runs it again on resume. False when another
    attempt would fail the same way for the model's own reasons (its context is too small)."""

    def __init__(self, message: str, raw: Any = None, usage: dict | None = None, infrastructure: bool = True):
        super().__init__(message, raw=raw, usage=usage)
        self.infrastructure = infrastructure


class TokenBudgetExceeded(ChooserError):
    """The optional token budget is spent: the controller exits step_budget."""
