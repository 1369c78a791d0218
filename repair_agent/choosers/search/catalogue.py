"""The mutation catalogue: the candidate patch record. The one-line edits themselves are the operator
table of in_sandbox/operators.py, which the mutation analysis runs in the sandbox too."""
from __future__ import annotations

import json
from dataclasses import dataclass

from ...in_sandbox.operators import (ITERABLE_CALLS, NUMERIC_CALLS, line_mutations, neutral_text,
                                     similar_names)

__all__ = ["Candidate", "ITERABLE_CALLS", "NUMERIC_CALLS", "line_mutations", "neutral_text", "similar_names"]


@dataclass
class Candidate:
    path: str
    line: int                 # 1-based line of the original file that is replaced
    new_lines: tuple[str, ...]
    kind: str
    what: str
    score: float = 0.0

    @property
    def key(self) -> str:
        return f"{self.path}:{self.line}:{json.dumps(self.new_lines)}"

    def label(self) -> str:
        return f"{self.path}:{self.line} {self.kind}: {self.what}"
