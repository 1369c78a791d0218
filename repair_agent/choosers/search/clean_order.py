"""Among clean fixes (the mutation analysis found that each turns every failing target green and
breaks no passing test it ran), which to try first when the tests alone cannot tell them apart: the
ranking's order, then these three reorderings (ranking.order applies them in this order):

- smaller_first: of fixes with one behaviour on the tests, the one that takes most code out takes the
  group's first place;
- examples_first: the fixes on which the most of the goal's own examples hold (hints/goal_examples.py)
  go before every other candidate;
- nearer_first: the fixes whose behaviour moved least from the code's on inputs near those examples
  take their group's first places.
"""
from __future__ import annotations

from .catalogue import Candidate


def smaller_first(ranked: list[Candidate]) -> list[Candidate]:
    """Among clean fixes the tests cannot tell apart (one behaviour digest), the one that takes most
    code out, when one takes any out, moves to the group's first place; the rest keep theirs. The
    tests explain the deletion as well as the edits that keep or add code (`drop - 1` as well as
    `< -> <=` two lines up, or a `+ 1` that cancels the `- 1` on every value they use), and the smaller
    program is the likelier one. Edits that add code are not weighed against each other: a guard is
    not less likely than a shorter statement."""
    at: dict[str, list[int]] = {}
    for i, c in enumerate(ranked):
        if c.behaviour is not None:
            at.setdefault(c.behaviour, []).append(i)
    out = list(ranked)
    for places in at.values():
        group = [ranked[i] for i in places]
        smallest = max(group, key=lambda c: c.shrink)   # the first of the group among equals
        if len(group) < 2 or smallest.shrink <= 0 or smallest is group[0]:
            continue
        for i, c in zip(places, [smallest] + [c for c in group if c is not smallest]):
            out[i] = c
    return out


def examples_first(ranked: list[Candidate]) -> list[Candidate]:
    """The clean fixes on which the most of the goal's own examples hold go first, in their order, when
    the examples tell the analysis's fixes apart (Candidate.examples). The tests pass on every clean fix;
    the report's examples are the only evidence that some do what it asks and others do not, and no
    weighed feature is as direct. Then nearer_first: when the examples tell fixes apart, only within
    the group that went first, and only when it left out some clean fix (the examples then ask for more
    than the failing test does); when they do not, within each group of replacements the tests cannot
    tell apart (one behaviour digest)."""
    best = max((c.examples for c in ranked if c.examples is not None), default=None)
    if best is None:
        return nearer_first(ranked, [[c for c in ranked if c.behaviour == b and len(c.new_lines) == c.span]
                                     for b in dict.fromkeys(c.behaviour for c in ranked if c.behaviour is not None)])
    first = [c for c in ranked if c.examples == best]
    out = first + [c for c in ranked if c.examples != best]
    return nearer_first(out, [first] if any(c.examples is not None and c.examples < best for c in ranked) else [])


def nearer_first(ranked: list[Candidate], groups: list[list[Candidate]]) -> list[Candidate]:
    """Within each group, the fixes whose behaviour moved least from the code's on inputs near the goal's
    examples (Candidate.deviation) take the group's first places, the rest keep their order: of two
    edits that do what the report asks (`find -> rfind`, `find -> rindex`), the one that changes less
    else (`rindex` raises where no separator is found) is the likelier fix. A group of edits that insert
    lines (guards) is left out of the second kind: a guard on the very input of the test changes least
    and generalizes least."""
    out = list(ranked)
    where = {id(c): i for i, c in enumerate(ranked)}
    for group in groups:
        known = [c for c in group if c.deviation is not None]
        if len(known) < 2 or len({c.deviation for c in known}) < 2:
            continue
        places = sorted(where[id(c)] for c in known)
        for i, c in zip(places, sorted(known, key=lambda c: (c.deviation, where[id(c)]))):
            out[i] = c
    return out
