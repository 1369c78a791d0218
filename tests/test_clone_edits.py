"""A line that differs from its clones (in_sandbox/clone_edits.py): found by the mutation analysis on a
real small repository, in the local sandbox."""
from __future__ import annotations

from repair_agent.hints.localization import localize
from repair_agent.in_sandbox.clone_edits import clone_edits, clone_index

from helpers import calc_sandbox

PARSER = '''\
class Parser:
    def parse(self, text, evaluate=True):
        m = self.pattern(text, exact=True)
        if evaluate:
            return self.evaluate_result(m)
        else:
            return m

    def search(self, text, evaluate=True):
        m = self.pattern(text, exact=False)
        if evaluate:
            return self.evaluate_result(m)
        else:
            return Match(self, m)

    def pattern(self, text, exact):
        return text if exact else text.strip()

    def evaluate_result(self, m):
        return m.upper()


class Match:
    def __init__(self, parser, m):
        self.parser, self.m = parser, m
'''

PARSER_TESTS = '''\
from calc import Match, Parser


def test_parse_without_evaluating_gives_a_match():
    assert isinstance(Parser().parse("ab", evaluate=False), Match)


def test_parse():
    assert Parser().parse("ab") == "AB" and Parser().search(" ab ") == "AB"
    assert Parser().search("ab", evaluate=False).m == "ab"
'''


def test_a_line_whose_context_reads_as_another_line_s_may_be_that_line():
    lines = PARSER.splitlines(keepends=True)
    index = clone_index(PARSER)
    assert clone_edits(lines, 7, index) == [("clone", "as at its clone: `return Match(self, m)`",
                                             "            return Match(self, m)\n")]
    assert clone_edits(lines, 14, index) == [("clone", "as at its clone: `return m`", "            return m\n")]
    assert clone_edits(lines, 3, index) == []   # its context is a `def` line of its own: no clone
    assert clone_edits(lines, 17, index) == []


def test_the_analysis_finds_the_line_its_clone_holds(tmp_path):
    sandbox = calc_sandbox(tmp_path, PARSER, PARSER_TESTS)
    m = localize(sandbox, ("tests/test_calc.py::test_parse_without_evaluating_gives_a_match",), ("src/**",),
                 mutate=True).mutation
    assert m is not None
    assert [(f.line, f.text, f.family) for f in m.fixes if f.clean] == [(7, "            return Match(self, m)", "clone")]
