"""What the observation's mutation analysis says about candidates, as candidates and score points."""
from __future__ import annotations

import re

from .catalogue import Candidate
from .failure import Failure

CLEAN_FIX = 12.0      # the edit of a mutant that turned every failing target green and broke no passing test
MAX_CLEAN = 3         # more clean mutants than this: the tests tell the edits apart poorly, only the line stands out
CROWDED_FIX = 1.0     # ... and such an edit gains only this much over the rest of its line
FIX_LINE = 3.0        # any edit of a line where a mutant was a clean fix
PARTIAL_FIX = 1.5     # scaled by the share of failing targets an unchecked or partial fix turned green
INERT_LINE = -2.0     # a line where several mutants changed nothing the failing tests show
MIN_INERT_TRIES = 3
ZERO_TERM = re.compile(r"\s*[-+]\s*0(?![\w.])")


def _tidy(text: str) -> str:
    """A mutant's line as a person would write it: `items[:n - 0]` is `items[:n]`."""
    return ZERO_TERM.sub("", text)


def _same(a: str, b: str) -> bool:
    return re.sub(r"\s+", "", a) == re.sub(r"\s+", "", b)


def _clean_count(f: Failure) -> int:
    return sum(x.clean for xs in f.mutant_fixes.values() for x in xs)


def mutant_candidates(path: str, lines: dict[int, str], f: Failure) -> list[Candidate]:
    """The mutants that made every failing target pass and broke no passing test, on lines read, as
    candidates of their own (most are catalogue edits too; the rest are not), unless too many were."""
    out: list[Candidate] = []
    if _clean_count(f) > MAX_CLEAN:
        return out
    for (p, n), fixes in f.mutant_fixes.items():
        text = lines.get(n)
        if p != path or text is None:
            continue
        for fx in fixes:
            if fx.clean and _tidy(fx.text).strip() and not _same(_tidy(fx.text), text):
                out.append(Candidate(path, n, (_tidy(fx.text).rstrip("\n") + "\n",), "mutant", fx.what))
    return out


def mutation_term(c: Candidate, f: Failure) -> float:
    """Score points for a candidate from the mutation analysis: a lot for the edit of a clean fix
    (when many edits were clean, only their line stands out), some for any edit of a clean fix's
    line, a little for an edit that turned only some failing targets green or was not checked
    against the passing tests, none for one that broke passing tests; a little less for a line
    where several mutants changed nothing; 0 where the analysis did not reach."""
    if len(c.new_lines) == 1:
        fixes = f.mutant_fixes.get((c.path, c.line), ())
        line = FIX_LINE if any(fx.clean for fx in fixes) else 0.0
        for fx in fixes:
            if _same(_tidy(fx.text), c.new_lines[0]) or _same(fx.text, c.new_lines[0]):
                if fx.clean:
                    return line + (CLEAN_FIX if _clean_count(f) <= MAX_CLEAN else CROWDED_FIX)
                return line + (0.0 if fx.broken else PARTIAL_FIX * fx.fixed / max(1, fx.of))
        if line:
            return line
    stats = f.mutated.get((c.path, c.line))
    if stats is not None and stats[0] >= MIN_INERT_TRIES and stats[1] == 0 and len(c.new_lines) == 1:
        return INERT_LINE
    return 0.0
