"""What the controller carries from one step to the next, as one frozen record.

The controller never mutates it: each change makes a new record, and each step ends on one. A
resume rebuilds the record from the journal (resume.rebuilt_loop) and hands it to
Controller.continuing, so a field added here without a default cannot be left out of a resume:
building the record without it fails.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Protocol, Union

from verifier import ScopeVerdict, TestVerdict

from .actions import Action
from .journal import JournalRecord
from .state import Evidence, State
from .tools import ToolOutcome

Verdict = Union[TestVerdict, ScopeVerdict]


@dataclass(frozen=True)
class LoopState:
    state: State
    """The working state version: B, A, conditions, history; journaled at the end of every step."""
    diff: str
    """The candidate diff against the pristine tree, as the sandbox reports it after the last patch."""
    evidence: tuple[Evidence, ...]
    """Every observation in order (E1, E2, ...): each later View shows them to the chooser."""
    verdicts: tuple[tuple[str, Verdict], ...]
    """(evidence id, the verifier's verdict) in the order given: the latest for a condition decides it.
    A resume restores journaled ones unable to satisfy anything and re-earns those that did."""
    last_canonical: str | None
    """The canonical text of the last validated action: the same action twice in a row is refused."""
    u_trajectory: tuple[int, ...]
    """Uₜ at the start and after each step (a resume adds its own value when it changes Uₜ)."""

    @classmethod
    def start(cls, state: State) -> LoopState:
        """The record a fresh run begins with: no diff, no evidence, no verdicts."""
        return cls(state=state, diff="", evidence=(), verdicts=(), last_canonical=None, u_trajectory=(state.u,))

    def advanced(self, **changes) -> LoopState:
        """A new record with `changes`; this one stays as it was."""
        return dataclasses.replace(self, **changes)

    def earlier_result(self, fingerprint: str) -> str | None:
        """The result hash of the latest evidence before the newest with this fingerprint (same input,
        check and environment), if there is one: how the no-new-evidence rule spots a loop."""
        return next((e.result_sha256 for e in reversed(self.evidence[:-1]) if e.fingerprint == fingerprint), None)


class Opening(Protocol):
    """How a continued run begins instead of with a start line: from the record rebuilt from the
    journal, with the controller's own dispatch (its failures end the run like a tool's) and journal
    writer, the record the first new step starts from, already journaled."""

    def __call__(self, before: LoopState, dispatch: Callable[[Action], ToolOutcome],
                 write_journal: Callable[[JournalRecord, str], None]) -> LoopState: ...
