"""The one enum of a run's exits, its process exit codes and what another attempt would need.

Kept free of pydantic and the rest of the run: the command line reads it before anything else
is imported."""
from __future__ import annotations

from enum import Enum


class StopReason(str, Enum):
    AWAITING_RELEASE_CONFIRMATION = "awaiting_release_confirmation"
    HANDOFF_REQUESTED = "handoff_requested"
    STEP_BUDGET = "step_budget"
    DEADLINE = "deadline"
    REPEATED_ACTION = "repeated_action"
    NO_NEW_EVIDENCE = "no_new_evidence"
    INVALID_ACTION = "invalid_action"
    AUTHORIZATION_REQUIRED = "authorization_required"
    DEPENDENCY_FAILURE = "dependency_failure"
    COST_BUDGET = "cost_budget"
    CHOOSER_ERROR = "chooser_error"

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self]


EXIT_CODES = {
    StopReason.AWAITING_RELEASE_CONFIRMATION: 0,
    StopReason.HANDOFF_REQUESTED: 10,
    StopReason.STEP_BUDGET: 11,
    StopReason.DEADLINE: 12,
    StopReason.REPEATED_ACTION: 13,
    StopReason.NO_NEW_EVIDENCE: 14,
    StopReason.INVALID_ACTION: 15,
    StopReason.AUTHORIZATION_REQUIRED: 16,
    StopReason.DEPENDENCY_FAILURE: 17,
    StopReason.COST_BUDGET: 18,
    StopReason.CHOOSER_ERROR: 19,
}

# What would have to change for another attempt to be worth running.
NEXT_ATTEMPT = {
    StopReason.AWAITING_RELEASE_CONFIRMATION:
        "Nothing technical: a person reviews the diff and the report, then confirms or rejects the release.",
    StopReason.HANDOFF_REQUESTED:
        "A chooser that gathers the missing evidence, or a person who takes the listed unknowns over.",
    StopReason.STEP_BUDGET:
        "A larger budget explicitly granted by a person (repair-agent resume RUN --max-steps N), or a narrower "
        "question; the partial evidence is kept.",
    StopReason.DEADLINE:
        "A longer deadline granted by a person (repair-agent resume RUN --deadline-s S), or faster checks; "
        "late observations were refused.",
    StopReason.REPEATED_ACTION:
        "A chooser that changes its request: repeating an identical action cannot produce new evidence.",
    StopReason.NO_NEW_EVIDENCE:
        "A changed input, check or environment, or a new hypothesis: the same check gave the same result.",
    StopReason.INVALID_ACTION:
        "A chooser that proposes one action matching the schema; the raw proposal is in the journal.",
    StopReason.AUTHORIZATION_REQUIRED:
        "A person's grant for the listed paths or code findings (repair-agent grant RUN --allow PATTERN-or-KEY "
        "--reason TEXT, then repair-agent resume RUN), or a patch that stays inside the writable globs and adds "
        "no construct that needs a grant.",
    StopReason.DEPENDENCY_FAILURE:
        "A working sandbox, engine, model endpoint or test environment; the raw error is in the journal.",
    StopReason.COST_BUDGET:
        "More money explicitly granted by a person (repair-agent resume RUN --max-cost USD), or a cheaper model; "
        "the partial evidence is kept.",
    StopReason.CHOOSER_ERROR:
        "A fix to the chooser: it raised an exception (a bug, not a finding about the repair); the traceback is "
        "in the journal's stop line. repair-agent resume RUN continues with the fixed chooser.",
}
