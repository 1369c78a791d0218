"""Uₜ: the number of unsatisfied acceptance conditions, computed only from fresh verdicts.

A verdict counts only for the diff it was obtained on (its sha256): a new patch makes every
earlier verdict stale, so Uₜ rises again. Release authorization is not a condition here and
is never derived from these.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Union

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:  # imported where verdicts are read: the agent's state needs Condition without the runner
    from .runner import TestVerdict
    from .scope import ScopeVerdict

CONDITIONS = ("target_test", "full_suite", "diff_scope")
DESCRIPTIONS = {
    "target_test": "the target (fail-to-pass) tests pass on the current diff",
    "full_suite": ("every test that passed on the pristine tree passes on the current diff (the whole suite, or "
                   "only the scenario's pass-to-pass list when it declares one), none missing and none newly "
                   "skipped; a test skipped on the pristine tree may stay skipped, not fail"),
    "diff_scope": "the current diff stays inside the writable globs and touches nothing protected",
}


class Condition(BaseModel):
    """One acceptance condition and what decided it: the agent's state holds these as the verifier gives them."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    satisfied: bool
    evidence: str | None = None  # the evidence id that decided it, if any
    stale: bool = False           # a verdict exists, but for an older diff


def unsatisfied(verdicts: list[tuple[str, Union[TestVerdict, ScopeVerdict]]], current_diff_sha256: str) -> list[Condition]:
    """Each condition is decided by the latest verdict on the current diff that speaks to it."""
    from .runner import TestVerdict
    from .scope import ScopeVerdict

    out = []
    for name in CONDITIONS:
        decided, stale = None, False
        for evidence_id, verdict in reversed(verdicts):
            speaks = (name == "diff_scope" and isinstance(verdict, ScopeVerdict)) or (
                isinstance(verdict, TestVerdict) and (verdict.kind == name or (
                    name == "target_test" and verdict.kind == "full_suite")))
            if not speaks:
                continue
            if verdict.diff_sha256 != current_diff_sha256:
                stale = True
                continue
            ok = verdict.targets_ok if (name == "target_test" and isinstance(verdict, TestVerdict)) else verdict.ok
            decided = (evidence_id, ok)
            break
        out.append(Condition(name=name, description=DESCRIPTIONS[name],
                             satisfied=bool(decided and decided[1]),
                             evidence=decided[0] if decided else None, stale=stale and not decided))
    return out


def u_count(conditions: list[Condition]) -> int:
    return sum(not c.satisfied for c in conditions)
