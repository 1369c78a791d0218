"""What the search chooser has learned from the evidence so far (the Plan), rebuilt at every step."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from .catalogue import Candidate
from .failure import Failure


@dataclass
class Plan:
    """Everything derived from the evidence so far. Rebuilt from the View at every step, so the
    chooser's decisions are a function of (View, seed) alone and replay from the journal."""
    failure: Failure | None = None
    known: dict[str, dict[int, str]] = field(default_factory=dict)
    eof: dict[str, int] = field(default_factory=dict)       # path -> its last line, once a read passed it
    reads: list[str] = field(default_factory=list)
    searches: list[str] = field(default_factory=list)
    search_hits: list[tuple[str, int]] = field(default_factory=list)
    hits_by_query: dict[str, list[tuple[str, int, str]]] = field(default_factory=dict)   # (path, line, text)
    tried: list[tuple[Candidate, str]] = field(default_factory=list)   # (candidate, outcome)
    # What each failed try showed about the line it edited (see `effect_of`), as a score bonus: a
    # line whose edit changes only the failure is on its path, one whose edit changes nothing, or
    # breaks passing tests instead, likely not. A line tried more than once keeps its best.
    effects: dict[tuple[str, int], float] = field(default_factory=dict)
    initial_failing: dict[str, str] = field(default_factory=dict)   # test -> message, before any patch
    applied: Candidate | None = None
    awaiting: str | None = None         # "target" | "full" | "check": the next check for `applied`
    passed: list[Candidate] = field(default_factory=list)   # a try_patches step passed them: apply first

    def fingerprint(self, goal_text: str) -> str:
        """Everything the candidates' scores are computed from (what was parsed, read and found)."""
        f = self.failure
        facts = [goal_text, f.message if f else None, f.frames if f else None, f.callees if f else None,
                 sorted(f.hints) if f else None, repr(f.expected) if f else None, f.assert_lines if f else None,
                 f.not_raised if f else None, f.exception_messages if f else None,
                 sorted(f.mutated.items()) if f else None,
                 sorted((k, [x.model_dump() for x in v]) for k, v in f.mutant_fixes.items()) if f else None,
                 sorted((p, sorted(lines.items())) for p, lines in self.known.items()), self.search_hits]
        return hashlib.sha256(json.dumps(facts, default=repr).encode()).hexdigest()
