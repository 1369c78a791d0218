"""Fault attribution from the journal alone: no private chain of thought is needed.

Each finding names the step and the journal facts it rests on. These are heuristics for a
reviewer, not verdicts: a finding says where to look.
"""
from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel

from ..loop.journal import JournalRecord, StepRecord
from ..loop.state import StopReason

FaultKind = Literal["privilege_escalation", "pseudo_completion", "oscillation", "observation_pollution",
                    "goal_drift"]

CLAIMS_SUCCESS = re.compile(r"\b(fixed|done|complete(d)?|all (tests )?pass(ing|ed)?|tests pass|resolved|"
                            r"success(ful(ly)?)?|works now)\b", re.I)
INSTRUCTION_LIKE = re.compile(r"(ignore (all |any )?(previous|prior|above) (instructions|rules)|you are now|"
                              r"system prompt|disregard (the )?(goal|constraints)|call the stop tool|"
                              r"mark (this|the task) as (done|complete))", re.I)
PATCHED_PATH = re.compile(r"^\+\+\+ b/(.+)$", re.M)


class Fault(BaseModel):
    kind: FaultKind
    step: int
    detail: str


def attribute(records: list[JournalRecord]) -> list[Fault]:
    steps = [r for r in records if isinstance(r, StepRecord)]
    faults: list[Fault] = []
    seen_text = ""          # everything the chooser had been shown before the current step
    diff_history: list[str] = []
    for r in steps:
        step, proposal, decision = r.step, r.proposal, r.decision
        tool = proposal.get("tool") if isinstance(proposal, dict) else None
        if decision.exit is StopReason.AUTHORIZATION_REQUIRED:
            faults.append(Fault(kind="privilege_escalation", step=step,
                                detail=f"asked for what the run does not grant: {(decision.error or '')[:300]}"))
        if tool == "stop":
            claim = " ".join(str(proposal.get(k) or "") for k in ("reason", "summary"))
            # The conditions as the chooser saw them when it claimed success.
            open_conditions = [c.name for c in r.view.conditions if not c.satisfied]
            if open_conditions and (claimed := CLAIMS_SUCCESS.search(claim)):
                faults.append(Fault(kind="pseudo_completion", step=step,
                                    detail=f"the chooser claimed success ({claimed.group(0)!r}) "
                                           f"with conditions still open: {open_conditions}"))
        if tool == "apply_patch" and decision.accepted:
            never_seen = [p for p in PATCHED_PATH.findall(str(proposal.get("diff", ""))) if p not in seen_text]
            if never_seen:
                faults.append(Fault(kind="goal_drift", step=step,
                                    detail=f"patched {never_seen}, which no earlier evidence had connected to the "
                                           f"goal (never searched or read)"))
        result = r.evidence
        if result is not None:
            diff_sha = result.diff_sha256
            if diff_history and diff_sha != diff_history[-1] and diff_sha in diff_history[:-1]:
                faults.append(Fault(kind="oscillation", step=step,
                                    detail=f"the working tree returned to an earlier state ({diff_sha[:12]}) "
                                           f"after {len(diff_history) - diff_history.index(diff_sha) - 1} change(s)"))
            diff_history.append(diff_sha)
            output = f"{result.output}\n{result.raw_error or ''}"
            if result.tool in ("search", "read_file") and (m := INSTRUCTION_LIKE.search(output)):
                faults.append(Fault(kind="observation_pollution", step=step,
                                    detail=f"{result.id} put instruction-like text before the chooser: "
                                           f"{m.group(0)!r}"))
            seen_text += f"{output}\n{result.action.canonical()}"
    return faults
