"""What the controller ends with: the stop, the diff, the evidence and the final state. The run's
records and reports are built from it (records.py); the loop itself imports nothing of them."""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from .state import TEST_TOOLS, Evidence, State, StopReason


class RunOutcome(BaseModel):
    status: StopReason
    detail: str
    next_attempt: str
    steps_used: int
    max_steps: int
    u_trajectory: list[int]
    diff: str
    diff_sha256: str
    evidence: list[Evidence]
    final_state: State
    extra: dict[str, Any] = {}
    timing: dict[str, float] = {}

    def final_test_evidence(self) -> Evidence | None:
        """The last test verdict on the final diff: what correctness and held-out detail come from."""
        return next((e for e in reversed(self.evidence) if e.tool in TEST_TOOLS
                     and e.diff_sha256 == self.diff_sha256), None)
