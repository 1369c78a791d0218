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
    """The chooser could not answer (HTTP error, timeout, crash): the controller exits dependency_failure."""


class TokenBudgetExceeded(ChooserError):
    """The optional token budget is spent: the controller exits step_budget."""
