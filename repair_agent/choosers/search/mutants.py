"""What the observation's mutation analysis says about candidates, as candidates and score points."""
from __future__ import annotations

import re

from ...hints.mutation import MutantFix
from ...in_sandbox.mutants import GUESSED, PAIR, edit_key
from .catalogue import Candidate
from .failure import Failure
from .weights import Rule, active

ZERO_TERM = re.compile(r"\s*[-+]\s*0(?![\w.])")
NONE_TEST = re.compile(r"^\s*if\s+[\w.]+\s+is\s+None\s*:")


def _tidy(text: str) -> str:
    """A mutant's line as a person would write it: `items[:n - 0]` is `items[:n]`."""
    return ZERO_TERM.sub("", text)


def _same(a: str, b: str) -> bool:
    return re.sub(r"\s+", "", a) == re.sub(r"\s+", "", b)


def _writes(fx: MutantFix, new: str) -> bool:
    """Does the mutant write `new` (a candidate's new lines, joined), as it is or tidied?"""
    return _same(_tidy(fx.text), new) or _same(fx.text, new)


def fix_lines(fix_text: str) -> tuple[str, ...]:
    """A mutant's text as the lines that replace its line (a guard is several: its `if`, its body, the line)."""
    return tuple(line + "\n" for line in _tidy(fix_text).rstrip("\n").split("\n"))


def _clean_count(f: Failure) -> int:
    """Clean fixes, as far as the tests can tell them apart: the guards before one line count once
    (`if x is None` and `if not x` returning the same value), so do the `else` and `elif` arms after one line
    and the pairs of edits from one line,
    and one inserted statement counts once wherever it went (`word = word.removesuffix('_id')`
    before one line or the next)."""
    groups: set[tuple[str, ...]] = set()
    single = 0
    for xs in f.mutant_fixes.values():
        for x in xs:
            if not x.clean or x.family == GUESSED:
                continue   # a guessed guard is weighed as a guess (mutation_features), never crowds the others
            if x.family in ("guard", "else-branch", "elif-branch", PAIR):
                groups.add((x.family, x.path, str(x.line)))
            elif x.family == "transform":
                groups.add(("transform", x.path, x.text.split("\n", 1)[0].strip()))
            else:
                single += 1
    return single + len(groups)


def _preferred_insert(fx: MutantFix, f: Failure) -> bool:
    """Is `fx` the clean inserted statement to try before the others of its kind? A transform: the one
    whose line the failing tests ran first (the input is best normalized where it enters:
    `data = data.removeprefix(BOM)` before parsing, not on each line after). An `else` arm: the first
    the analysis ran at its line (its replacement shares most words with the name it replaces:
    `left_match` -> `left_default`, not `right_default`); a pair of edits likewise."""
    if fx.family == "transform" and fx.reached is not None:
        reached = [x.reached for xs in f.mutant_fixes.values() for x in xs
                   if x.clean and x.family == "transform" and x.reached is not None]
        return fx.reached == min(reached)
    if fx.family in ("else-branch", "elif-branch", PAIR):
        return fx == next(x for x in f.mutant_fixes.get((fx.path, fx.line), ()) if x.clean and x.family == fx.family)
    return False


def mutant_candidates(path: str, lines: dict[int, str], f: Failure) -> list[Candidate]:
    """The mutants that made every failing target pass and broke no passing test, on lines read, as
    candidates of their own (most are catalogue edits too; the rest, guards and inserted statements,
    are not). When many were clean, none stands out (mutation_features), but each is still tried:
    otherwise only the catalogue's clean edits would be."""
    out: list[Candidate] = []
    for (p, n), fixes in f.mutant_fixes.items():
        for fx in fixes:
            block = [lines.get(k) for k in range(n, n + fx.span)]   # a pair's block: every line of it read
            if p != path or None in block:
                continue
            text = "".join(t for t in block if t is not None)
            if fx.clean and _tidy(fx.text).strip() and not _same(_tidy(fx.text), text):
                new = fix_lines(fx.text)
                # a guard that checks for None is a none-guard, whoever wrote it: the failure's hints weigh it so
                kind = "none-guard" if fx.family in ("guard", GUESSED) and NONE_TEST.match(new[0]) else "mutant"
                out.append(Candidate(path, n, new, kind, fx.what, span=fx.span))
    return out


def clean_behaviour(c: Candidate, f: Failure) -> str | None:
    """The behaviour digest of the clean fix `c` is, when the analysis found it one: what it did on the
    tests it was checked against. Two edits with one digest are the same to every test the analysis ran."""
    new = "".join(c.new_lines)
    for fx in f.mutant_fixes.get((c.path, c.line), ()):
        if fx.clean and fx.span == c.span and _writes(fx, new):
            return fx.behaviour
    return None


def examples_tell_apart(f: Failure) -> bool:
    """Do the goal's examples tell the analysis's fixes of every target apart (some hold more of them)?"""
    held = {x.examples for fixes in f.mutant_fixes.values() for x in fixes if x.examples is not None}
    return len(held) > 1


def examples_held(c: Candidate, f: Failure, tell_apart: bool) -> tuple[int | None, int | None]:
    """For the clean fix `c` is: how many of the goal's examples hold on it, when they tell fixes apart
    (`tell_apart`: examples_tell_apart(f)), else None; and on how many inputs near the examples' it
    does otherwise than the code as given (None: not evaluated)."""
    new = "".join(c.new_lines)
    fx = next((fx for fx in f.mutant_fixes.get((c.path, c.line), ())
               if fx.clean and fx.examples is not None and fx.span == c.span and _writes(fx, new)), None)
    if fx is None:
        return None, None
    return (fx.examples if tell_apart else None), fx.deviation


def mutation_features(c: Candidate, f: Failure) -> list[tuple[Rule, float]]:
    """What the mutation analysis says about a candidate: the edit of a clean fix (when many edits
    were clean, only their line stands out: a crowded fix), any edit of a clean fix's line, an edit
    that turned only some failing targets green or was not checked against the passing tests (by
    its share; none for one that broke passing tests), a line where several mutants changed
    nothing; none where the analysis did not reach. An edit the analysis ran and a failing target still
    failed on is refuted: trying it would spend two steps to learn what is known."""
    refuted = f.refuted.get((c.path, c.line))
    if refuted and edit_key("".join(c.new_lines)) in refuted:
        return [(Rule.MUTANT_REFUTED, 1.0)]
    fixes = f.mutant_fixes.get((c.path, c.line), ())
    if fixes:
        # a line's clean fix speaks for the other one-line edits of it; a guard there is another edit
        line = [(Rule.MUTANT_FIX_LINE, 1.0)] if len(c.new_lines) == 1 and any(fx.clean for fx in fixes) else []
        new = "".join(c.new_lines)
        for fx in fixes:
            if _writes(fx, new):
                if fx.clean and fx.family == GUESSED:
                    return line + [(Rule.MUTANT_GUESSED_FIX, 1.0)]
                if fx.clean:
                    crowded = _clean_count(f) > active().max_clean
                    return line + [(Rule.MUTANT_CROWDED_FIX if crowded else Rule.MUTANT_CLEAN_FIX, 1.0)] + (
                        [(Rule.MUTANT_PREFERRED_INSERT, 1.0)] if _preferred_insert(fx, f) else [])
                return line + ([] if fx.broken else [(Rule.MUTANT_PARTIAL_FIX, fx.fixed / max(1, fx.of))])
        if line:
            return line
    stats = f.mutated.get((c.path, c.line))
    if stats is not None and stats[0] >= active().min_inert_tries and stats[1] == 0 and len(c.new_lines) == 1:
        return [(Rule.MUTANT_INERT_LINE, 1.0)]
    return []
