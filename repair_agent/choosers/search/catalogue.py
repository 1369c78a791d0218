"""The mutation catalogue: the candidate patch record. The one-line edits themselves are the operator
table of in_sandbox/operators.py, which the mutation analysis runs in the sandbox too."""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from ...in_sandbox.operators import line_mutations, neutral_text
from .weights import Family

__all__ = ["Candidate", "line_mutations", "neutral_text"]


@dataclass
class Candidate:
    path: str
    line: int                 # 1-based line of the original file that is replaced
    new_lines: tuple[str, ...]
    kind: Family              # a family's name is accepted and checked (an unknown one raises)
    what: str                 # for people: what the edit does (`< -> <=`)
    score: float = 0.0        # the generator's base score, then the ranking's (base + weighed features)
    base: float = 0.0         # the generator's base score, once scored
    features: dict[str, float] = field(default_factory=dict)   # once scored: weights.py names them
    span: int = 1             # original lines replaced from `line` on (a pair of edits: the block between them)
    familiar: float = 0.0     # once scored: how much of its new code the file already uses (familiar.py), the tie-break
    behaviour: str | None = None   # once scored: the behaviour digest of the clean fix it is, when the mutation analysis found it one
    shrink: int = 0           # once scored, for a clean fix: tokens it takes out of the lines it replaces (negative: it adds some)
    examples: int | None = None   # once scored, for a clean fix: the goal's examples it holds, when they tell fixes apart,
    deviation: int | None = None  # ... and the inputs near theirs on which it does otherwise than the code as given

    def __post_init__(self) -> None:
        self.kind = Family(self.kind)

    @property
    def key(self) -> str:
        span = f"+{self.span - 1}" if self.span > 1 else ""
        return f"{self.path}:{self.line}{span}:{json.dumps(self.new_lines)}"

    def label(self) -> str:
        return f"{self.path}:{self.line} {self.kind.value}: {self.what}"
