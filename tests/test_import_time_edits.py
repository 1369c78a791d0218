"""Code that runs only while the modules are imported: a table a function fills at import, a module
constant. No test runs those lines, so no spectrum ranks them; when nothing else is a clean fix, the
mutation analysis edits them too (read from the source: `at_import_lines`), each mutant built by
running its module again in the live module's namespace (in_sandbox/mutants.py, `reexec`). Real pytest runs of small repositories
in the local sandbox."""
from __future__ import annotations

from repair_agent.hints.localization import localize
from repair_agent.in_sandbox.mutants import at_import_lines

from helpers import calc_sandbox

TARGET = ("tests/test_calc.py::test_upper_case_name",)

# `_register` runs only at import: the swapped variable of its last line is in no test's spectrum.
TABLE = '''\
SQUARES = {}
NAMES = {}


def _register(name, plural, side):
    SQUARES[name] = side * side
    SQUARES[plural] = side * side
    NAMES[plural] = plural


_register("tile", "tiles", 3)
_register("brick", "bricks", 2)


def area(name):
    return SQUARES[name]


def singular(word):
    return NAMES[word]
'''
TABLE_TESTS = '''\
from calc import area, singular


def test_upper_case_name():
    assert singular("tiles") == "tile"


def test_areas():
    assert area("tile") == 9 and area("bricks") == 4
'''


def test_the_lines_an_import_runs_are_read_from_the_source():
    assert at_import_lines(TABLE) == [(True, 6), (True, 7), (True, 8), (False, 1), (False, 2), (False, 11), (False, 12)]
    source = '''\
"""A module."""
import re


class Unit:
    """A unit."""
    factor = 10

    def scaled(self, n):
        return n * self.factor


if re.__name__ == "re":
    LIMIT = (
        4
    )


def main():
    print(LIMIT)


if __name__ == "__main__":
    main()
'''
    # the class attribute, the `if` and both lines of its assignment; no docstring, import, def or method
    # body, and nothing of the script's `__main__` block (`main()` does not run on import)
    assert at_import_lines(source) == [(False, 7), (False, 13), (False, 14), (False, 15), (False, 16)]
    assert at_import_lines("def broken(:\n") == []


def analysis(tmp_path, source: str, tests: str = TABLE_TESTS, targets: tuple[str, ...] = TARGET):
    m = localize(calc_sandbox(tmp_path, source, tests), targets, ("src/**",), mutate=True).mutation
    assert m is not None and m.finished and not m.errors, m
    return m


def test_a_table_filled_at_import_is_edited_and_the_edit_is_a_clean_fix(tmp_path):
    m = analysis(tmp_path, TABLE)
    assert m.at_import > 0
    clean = [(f.family, f.line, f.what) for f in m.fixes if f.clean]
    assert ("variable", 8, "plural -> name") in clean, m.fixes


def test_no_import_round_when_a_clean_fix_is_found_elsewhere(tmp_path):
    # the table right, the slip where the test runs: the spectrum ranks it, no round at import
    m = analysis(tmp_path, TABLE.replace("NAMES[plural] = plural", "NAMES[plural] = name").replace(
        "    return NAMES[word]", "    if len(word) > 5:\n        return NAMES[word]\n    return word"))
    assert m.at_import == 0 and any(f.clean and f.line == 20 for f in m.fixes), m.fixes


# The target fails only because of what the test module did to the module's list at collection:
# running the module again turns it green with no edit at all, so no mutant of the round could be told from that.
LEFT_BEHIND = '''\
SEEN = []


def _seed(first):
    SEEN.append(first)


_seed("a")


def add(item):
    SEEN.append(item)
    return len(SEEN)
'''
LEFT_BEHIND_TESTS = '''\
import calc

calc.add("warm-up")   # at collection: the module's list holds it from then on


def test_upper_case_name():
    assert calc.add("c") == 2 and calc.SEEN == ["a", "c"]
'''


def test_a_target_that_running_the_module_again_turns_green_gets_no_round(tmp_path):
    m = analysis(tmp_path, LEFT_BEHIND, LEFT_BEHIND_TESTS)
    assert m.at_import == 0
    assert not [f for f in m.fixes if f.line in (1, 5, 8)], m.fixes


def test_a_module_that_refuses_to_run_twice_ends_the_round_and_nothing_else(tmp_path):
    once = "if 'SQUARES' in globals():\n    raise RuntimeError('imported twice')\n" + TABLE
    m = analysis(tmp_path, once)
    assert m.at_import == 0 and not [f for f in m.fixes if f.clean], m.fixes
