"""The chooser role: read a View, propose exactly one action. It cannot write, run or grant."""
from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from ..actions import _Action
from ..state import View


@runtime_checkable
class Chooser(Protocol):
    name: str

    def choose(self, view: View) -> _Action | dict[str, Any]:
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
