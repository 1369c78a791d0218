"""The bug report's stated examples: read off the goal text (hints/goal_examples.py), evaluated by the
mutation analysis on each fix of every target (in_sandbox/examples.py), and the clean fixes that hold
the most tried first by the search chooser (clean_order.examples_first)."""
from __future__ import annotations

import pytest

from repair_agent.choosers.search.failure import parse_failure
from repair_agent.choosers.search.ranking import rank_candidates
from repair_agent.hints.goal_examples import GoalExample, goal_examples
from repair_agent.hints.localization import localize
from repair_agent.in_sandbox.examples import compiled, namespace

from helpers import calc_sandbox, target_observation


@pytest.mark.parametrize("text, expected", [
    # "<expr> gives A instead of B": B is what it should give; a full stop after the value ends it
    ("str() swaps them: Not(Literal('x')).as_rule() gives \"&'x'\" instead of \"!'x'\". Parsing is right.",
     [GoalExample(expr="Not(Literal('x')).as_rule()", expect="\"!'x'\"")]),
    ("Reverse slices drop an item: peekable(range(10))[5:2:-1] returns [4, 3] instead of [5, 4, 3] (what a list gives), "
     "and peekable('abcdef')[3:0:-1] returns ['c', 'b'] instead of ['d', 'c', 'b'].",
     [GoalExample(expr="peekable(range(10))[5:2:-1]", expect="[5, 4, 3]"),
      GoalExample(expr="peekable('abcdef')[3:0:-1]", expect="['d', 'c', 'b']")]),
    ("the docstring shows humanize('author_id') == 'Author'.",
     [GoalExample(expr="humanize('author_id')", expect="'Author'")]),
    ("When strict is True, list(chunked([1, 2, 3, 4, 5], 2, strict=True)) returns the chunks instead of raising ValueError.",
     [GoalExample(expr="list(chunked([1, 2, 3, 4, 5], 2, strict=True))", raises="ValueError")]),
    # a sentence before the call is not part of it ("True. set_pointer(...)" parses as an attribute of True)
    ("With create=True. set_pointer({'a': {}}, '/b/c', 1) returns the document instead of raising JsonPointerException.",
     [GoalExample(expr="set_pointer({'a': {}}, '/b/c', 1)", raises="JsonPointerException")]),
    # a verb inside a remark is passed over; words the report spells in another case or with other
    # whitespace around them are the same input, with the same expected exception
    ("color('transparent') returns RGB(0, 0, 224) (the word is read as hex) instead of raising ValueError; the "
     "keyword is matched case-insensitively after stripping whitespace ('Transparent', '  TRANSPARENT ').",
     [GoalExample(expr="color('transparent')", raises="ValueError"),
      GoalExample(expr="color('  TRANSPARENT ')", raises="ValueError"), GoalExample(expr="color('Transparent')", raises="ValueError")]),
    # ... but not where the expected value is text, which may keep the input's case
    ("pluralize('cow') returns 'cows' instead of 'kine', and pluralize('Cow') should give 'Kine'.",
     [GoalExample(expr="pluralize('cow')", expect="'kine'")]),
    # a second "gives" whose subject is no call is not the first example's: nothing past an earlier "instead of"
    ("list(collapse(x, levels=1)) returns x unchanged instead of [1, [2], [3]], and levels=2 gives [1, [2], [3]] "
     "instead of [1, 2, 3].", [GoalExample(expr="list(collapse(x, levels=1))", expect="[1, [2], [3]]")]),
    # a literal is not the head of a longer token ("-5:30" is no -5)
    ("parse('{:ti}', '22:21:36-05:30') returns a time whose offset is +5:30 instead of -5:30.", []),
    # no call, or no literal after "instead of": nothing
    ("The total is wrong instead of 5.", []),
    ("parse('{:d}', '0o10') returns the wrong thing instead of the number.", []),
])
def test_the_examples_a_goal_text_states(text, expected):
    assert list(goal_examples(text)) == expected


def test_an_example_holds_raises_or_cannot_be_evaluated():
    examples = compiled([{"expr": "double(2)", "expect": "4"}, {"expr": "double('a')", "expect": "'aa'"},
                         {"expr": "int('x')", "raises": "ValueError"}, {"expr": "int('x')", "raises": "KeyError"},
                         {"expr": "gen(3)", "expect": "[0, 1, 2]"}, {"expr": "missing(1)", "expect": "1"},
                         {"expr": "double(", "expect": "1"}, {"expr": "double(1)", "expect": "not a literal"}])
    assert len(examples) == 6   # the two that do not compile (the expression, the expected value) are dropped

    class Project:
        __name__ = "calc"
        double = staticmethod(lambda x: x * 3)
        gen = staticmethod(lambda n: (i for i in range(n)))   # an iterator compares by its items with a list

    class Tests:
        __name__ = "tests.test_calc"
        double = staticmethod(lambda x: x * 2)   # the tests' names win over the project module's

    ns = namespace([Tests], [Project])
    assert [e.check(ns) for e in examples] == [True, True, True, False, True, None]


GRADE = '''\
def grade(score):
    if score > 90:
        return "A"
    return "B"
'''

GRADE_TESTS = '''\
from calc import grade


def test_ninety_is_an_a():
    assert grade(90) == "A"


def test_low():
    assert grade(50) == "B"


def test_high():
    assert grade(95) == "A"
'''

GOAL = "grade(90) returns 'B' instead of 'A': every score above 89 is an A, so grade(89.5) == 'A' too."


def test_the_goals_examples_tell_apart_fixes_the_tests_cannot(tmp_path):
    # `> 90` -> `>= 90` and `90` -> `89` both turn the target green and break no test (every score the
    # tests use is a whole number); the report's second example, grade(89.5), holds only on the second.
    target = ("tests/test_calc.py::test_ninety_is_an_a",)
    runs = {}
    for goal in ("", GOAL):
        loc = localize(calc_sandbox(tmp_path / str(len(goal)), GRADE, GRADE_TESTS), target, ("src/**",), mutate=True, goal=goal)
        assert loc.mutation is not None and loc.note is None
        runs[goal] = loc
    m = runs[GOAL].mutation
    assert m.examples == 2 and m.examples_held == 0   # neither holds on the code as given
    clean = {f.text.strip(): f.examples for f in m.fixes if f.clean}
    assert clean["if score >= 90:"] == 1 and clean["if score > 89:"] == 2
    assert runs[""].mutation.examples == 0 and all(f.examples is None for f in runs[""].mutation.fixes)
    # a model chooser reads it in the observation: the fix that holds both listed first
    assert "src/calc.py:2  90 -> 89  -> if score > 89:  (1/1 failing pass, 0/2 passing broke, 2/2 of the goal's examples hold)" \
        == m.render().splitlines()[1].strip()
    # the chooser tries the fix that holds both first; without the examples its own order put the other first
    lines = {i + 1: t for i, t in enumerate(GRADE.splitlines(keepends=True))}
    first = {}
    for goal, loc in runs.items():
        f = parse_failure(target_observation("E       AssertionError: assert 'B' == 'A'\n", loc), goal, ("src/**",))
        ranked = rank_candidates(f, {"src/calc.py": lines}, [], goal, seed=0)
        first[goal] = ranked[0].new_lines
        if goal:
            assert ranked[0].examples == 2 and all(c.examples in (None, 1) for c in ranked[1:])
    assert first == {"": ("    if score >= 90:\n",), GOAL: ("    if score > 89:\n",)}


PART = '''\
def last_part(text, sep):
    cut = text.find(sep)
    return text[cut + 1:]
'''

PART_TESTS = '''\
from calc import last_part


def test_two_separators():
    assert last_part("a.b.c", ".") == "c"


def test_one_separator():
    assert last_part("x.y", ".") == "y"
'''

PART_GOAL = "last_part('a.b.c', '.') returns 'b.c' instead of 'c': the text after the last separator is wanted."


def test_of_two_fixes_alike_on_the_tests_the_one_that_changes_less_near_the_example_goes_first(tmp_path):
    # `find -> rfind` and `find -> rindex` pass every test and the report's example alike, with one
    # behaviour; near the example (an empty text, another separator) `rindex` raises where the code as
    # given returned a value, so it moved further from it: `rfind` is tried first.
    target = ("tests/test_calc.py::test_two_separators",)
    loc = localize(calc_sandbox(tmp_path, PART, PART_TESTS), target, ("src/**",), mutate=True, goal=PART_GOAL)
    m = loc.mutation
    assert m is not None and m.examples == 1 and m.near_inputs >= 5
    clean = {f.text.strip(): f for f in m.fixes if f.clean}
    rfind, rindex = clean["cut = text.rfind(sep)"], clean["cut = text.rindex(sep)"]
    assert rfind.behaviour == rindex.behaviour and rfind.examples == rindex.examples == 1
    assert rfind.deviation is not None and rindex.deviation is not None and rfind.deviation < rindex.deviation
    lines = {i + 1: t for i, t in enumerate(PART.splitlines(keepends=True))}
    f = parse_failure(target_observation("E       AssertionError: assert 'b.c' == 'c'\n", loc), PART_GOAL, ("src/**",))
    ranked = rank_candidates(f, {"src/calc.py": lines}, [], PART_GOAL, seed=0)
    order = [c.new_lines[0].strip() for c in ranked if c.behaviour is not None]
    assert order.index("cut = text.rfind(sep)") < order.index("cut = text.rindex(sep)")


def test_nearer_first_reorders_only_within_its_groups():
    from repair_agent.choosers.search.catalogue import Candidate
    from repair_agent.choosers.search.clean_order import nearer_first

    def cand(line: int, deviation: int | None) -> Candidate:
        return Candidate("m.py", line, ("x\n",), "mutant", "w", deviation=deviation)

    a, b, c, d = cand(1, 5), cand(2, None), cand(3, 1), cand(4, 0)
    # a and c are one group: c moved less, so it takes a's place; b stays; d is in no group
    assert nearer_first([a, b, c, d], [[a, c]]) == [c, b, a, d]
    # equal deviations, or one known: nothing moves
    assert nearer_first([a, b, c], [[a, cand(9, 5)], [b, c]]) == [a, b, c]
