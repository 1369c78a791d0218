"""Sₜ = (G, Oₜ, Hₜ, Bₜ, Aₜ), versioned (the one enum of exits is in stops.py).

G, B and A change only by the controller's own rules: they are frozen models replaced
wholesale by the controller, never updated from a tool result or chooser output.
"""
from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from verifier.conditions import Condition
from .actions import Action
from ..hints.localization import Localization
from .stops import EXIT_CODES, NEXT_ATTEMPT, StopReason  # noqa: F401 (the exits, where Sₜ's users look)


class Goal(BaseModel):
    """G: the protected goal and acceptance criteria. Never compressed out of the chooser's view."""

    model_config = ConfigDict(frozen=True)

    scenario: str
    text: str
    failure_signature: str
    target_tests: tuple[str, ...]
    acceptance: tuple[str, ...]
    constraints: tuple[str, ...]


class Grant(BaseModel):
    """A person's widening of A after `authorization_required`: who allowed what, when, and why."""

    model_config = ConfigDict(frozen=True)

    allow: tuple[str, ...]   # path globs, repository-relative
    reason: str
    who: str
    when: str
    after_step: int          # the step whose proposal was refused


class Authorization(BaseModel):
    """A: what is granted. Release is never granted inside the loop."""

    model_config = ConfigDict(frozen=True)

    writable: tuple[str, ...]
    protected: tuple[str, ...]
    network: bool = False
    release_requires_person: Literal[True] = True
    grants: tuple[Grant, ...] = ()

    @property
    def granted_paths(self) -> tuple[str, ...]:
        return tuple(p for g in self.grants for p in g.allow)

    def may_edit(self, path: str) -> bool:
        """What the verifier's scope check would let a patch touch: writable and not protected, or
        granted by a person (a chooser asks before proposing, the controller still decides)."""
        from verifier.spec import glob_match

        return bool(glob_match(path, self.granted_paths)
                    or (glob_match(path, self.writable) and not glob_match(path, self.protected)))


class BudgetLimits(BaseModel):
    """What a budget allows: a scenario manifest's [budget] section, and the first half of B."""

    model_config = ConfigDict(frozen=True)

    max_steps: int = Field(8, ge=1, le=1000)
    reserved_final_steps: int = Field(0, ge=0)
    deadline_s: float = Field(900.0, gt=0)
    max_tokens: int | None = Field(None, ge=1)


BUDGET_OPTIONS = {"max_steps": "--max-steps", "deadline_s": "--deadline", "reserved_final_steps": "--reserve",
                  "max_tokens": "--max-tokens"}


def budget_with(base: BudgetLimits, **overrides: Any) -> "Budget":
    """`base` with the given (not None) overrides, validated as a manifest's budget is: a run that
    asks for -1 steps is refused here, by option name, before it has a directory or a journal."""
    given = {k: v for k, v in overrides.items() if v is not None}
    try:
        budget = Budget.model_validate({**base.model_dump(), **given})
    except ValidationError as exc:
        said = "; ".join(f"{BUDGET_OPTIONS.get(str(e['loc'][0]), e['loc'][0])} {e['input']!r}: {e['msg']}"
                         for e in exc.errors())
        raise ValueError(said) from None
    if budget.reserved_final_steps >= budget.max_steps:
        raise ValueError(f"the steps reserved for the handover (--reserve {budget.reserved_final_steps}) must be "
                         f"below the run's steps (--max-steps {budget.max_steps})")
    return budget


class Budget(BudgetLimits):
    """B: counted only by the controller. One step is one chooser invocation; stop counts too."""

    steps_used: int = 0
    tokens_used: int = 0

    @property
    def steps_left(self) -> int:
        return self.max_steps - self.steps_used

    @property
    def exploration_left(self) -> int:
        return max(0, self.max_steps - self.reserved_final_steps - self.steps_used)


class SearchHit(BaseModel):
    """One line a search found: `git grep -n`'s `PATH:LINE:TEXT`, read once by the executor."""

    model_config = ConfigDict(frozen=True)

    path: str   # repository-relative
    line: int   # 1-based
    text: str   # the line's text, without its newline

    @classmethod
    def of_grep(cls, output: str, capped: bool) -> tuple["SearchHit", ...]:
        """The hits of `git grep -n` output (sandbox.base.search_argv): one `PATH:LINE:TEXT` per line.
        When the output was capped its last line may be cut short, so it is left out."""
        lines = output.splitlines()[:-1] if capped else output.splitlines()
        return tuple(cls(path=m[1], line=int(m[2]), text=m[3]) for line in lines if (m := _GREP_LINE.match(line)))


class TryResult(BaseModel):
    """One candidate of a try_patches step: what the verifier's screening check said of that diff (its
    target tests, then the whole suite when they passed), as a test observation would, and no more:
    never the held-out probe's word."""

    model_config = ConfigDict(frozen=True)

    diff_sha256: str              # the candidate's whole diff
    ok: bool                      # the whole suite passed, the target tests included
    targets_ok: bool              # the target tests passed
    timed_out: bool = False
    summary: str = ""
    failing: dict[str, str] = {}  # each test not passing -> why
    problems: tuple[str, ...] = ()


# The tools whose observations carry a test run's result (`failing`, `targets_ok`).
TEST_TOOLS = ("run_target_test", "run_full_suite")
_GREP_LINE = re.compile(r"^([^:\n]+):(\d+):(.*)$")
# How an output said it was cut before observations carried `capped` (the executor's and the controller's words).
_CAPPED_MARKS = ("\n[output capped: ", "\n[observation capped at ")


class Observation(BaseModel):
    """One observation, with where it came from and its raw error text kept verbatim. The journal
    stores it so; the action that produced it is the step's decision."""

    model_config = ConfigDict(frozen=True)

    id: str
    step: int
    tool: str
    status: Literal["ok", "error", "timeout", "refused", "failed"]
    source: str
    started_at: str
    duration_s: float
    summary: str
    output: str = ""
    raw_error: str | None = None
    diff_sha256: str
    fingerprint: str
    result_sha256: str
    data: dict[str, Any] = {}
    # The chooser's note with the action that asked for this: journaled with it and part of every
    # later View, so a replayed prompt is exact.
    note: str | None = None
    # True when `output` is not the command's whole output (the sandbox kept only its first bytes, or
    # the controller cut a long observation): what it does not show is not absent from the tree.
    capped: bool = False
    # Search observations: each line found, as data (the output shows the same lines as text).
    hits: tuple[SearchHit, ...] = ()
    # Target-test observations: the lines the failing target tests execute, most suspicious first.
    localization: Localization | None = None
    # Test-run observations (target test, full suite): each test not passing, with why, and whether
    # the target tests passed (None for other tools).
    failing: dict[str, str] = {}
    targets_ok: bool | None = None
    # try_patches observations: each candidate's result, in the order the action gave them.
    tries: tuple[TryResult, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _read_older_lines(cls, data: Any) -> Any:
        if isinstance(data, dict) and "note" not in data and isinstance(data.get("data"), dict) \
                and "note" in data["data"]:  # journaled before the note had a field of its own
            rest = dict(data["data"])
            data = {**data, "note": rest.pop("note"), "data": rest}
        # Observations journaled before `capped` and `hits` existed said both only in their output text.
        if isinstance(data, dict) and "capped" not in data and isinstance(data.get("output"), str):
            capped = any(mark in data["output"] for mark in _CAPPED_MARKS)
            data = {**data, "capped": capped}
            if data.get("tool") == "search" and "hits" not in data:
                data["hits"] = SearchHit.of_grep(data["output"], capped)
        # ... and a test run's result only in `data`, the verdict's fields as journaled.
        if isinstance(data, dict) and data.get("tool") in TEST_TOOLS and "targets_ok" not in data \
                and isinstance(data.get("data"), dict):
            verdict = data["data"]
            failing = verdict.get("failing")
            data = {**data, "targets_ok": verdict.get("targets_ok"),
                    "failing": {str(k): str(v) for k, v in failing.items()} if isinstance(failing, dict) else {}}
        return data


class Evidence(Observation):
    """An observation with the action that produced it, as a chooser sees it (without its note, which
    is in `data`). `action.canonical()` is the text its fingerprint is computed from."""

    action: Action

    @field_validator("action", mode="before")
    @classmethod
    def _canonical_text(cls, value: Any) -> Any:
        # States journaled before actions were held as data hold their canonical JSON text.
        return json.loads(value) if isinstance(value, str) else value


class HistoryEntry(BaseModel):
    model_config = ConfigDict(frozen=True)

    step: int
    tool: str
    decision: Literal["accepted", "rejected"]
    evidence: str | None = None
    status: str | None = None
    u: int


class StepProgress(BaseModel):
    """What the controller tells its caller after each step is journaled (the command line prints it
    as one line; a sweep worker may count it)."""

    model_config = ConfigDict(frozen=True)

    step: int
    max_steps: int
    tool: str                                  # the proposal's tool as the chooser wrote it: a label
    decision: Literal["accepted", "rejected"]
    status: str | None                         # the observation's status; None when there was none
    summary: str                               # the observation's summary ("" when there was none)
    u: int                                     # conditions still unsatisfied after the step


# The verifier's own model: the state holds a condition exactly as the verifier decided it.
ConditionState = Condition


class State(BaseModel):
    """Sₜ. Each state names its parent's hash, so the journal is a verifiable chain."""

    model_config = ConfigDict(frozen=True)

    version: int
    parent_hash: str | None
    goal: Goal
    observation: Evidence | None
    history: tuple[HistoryEntry, ...]
    budget: Budget
    authorization: Authorization
    conditions: tuple[Condition, ...]
    diff_sha256: str

    @property
    def u(self) -> int:
        return sum(not c.satisfied for c in self.conditions)

    @property
    def hash(self) -> str:
        return state_hash(self.model_dump(mode="json"))


def state_hash(dumped: dict) -> str:
    return hashlib.sha256(json.dumps(dumped, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


# How the View's unknowns mark a condition whose evidence was for an earlier diff.
STALE_SUFFIX = " (earlier evidence is stale: the diff changed)"


class ViewFields(BaseModel):
    """Everything a View holds besides its evidence: the one list of those fields, shared by the View
    and by the journal's copy of it (journal.JournaledView), which names the evidence by id."""

    model_config = ConfigDict(frozen=True)

    step: int
    state_version: int
    goal: Goal
    authorization: Authorization
    u: int
    conditions: tuple[Condition, ...]
    unknowns: tuple[str, ...]
    steps_left: int
    exploration_left: int
    allowed_tools: tuple[str, ...]
    action_schema: tuple[dict, ...]
    current_diff_sha256: str
    current_diff: str

    def view_fields(self) -> dict[str, Any]:
        """The shared fields by name, as held (not copied)."""
        return {name: getattr(self, name) for name in ViewFields.model_fields}


class View(ViewFields):
    """What a chooser sees, built fresh for every step from the controller's state as JSON text: every
    model in it is frozen, and nothing in it (not a dict, not a model) is an object the controller
    holds, so whatever a chooser does to its View stays in its View. The controller never reads a
    View back after handing it out."""

    evidence: tuple[Evidence, ...]
