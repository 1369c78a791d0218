"""Guards whose condition is searched for, not guessed: conditions on the line's variables built from
the literals of its function and of the failing tests, evaluated where the line runs, and tried only
where they pick out the failing tests (real pytest on real small repositories, in the local sandbox)."""
from __future__ import annotations

from repair_agent.hints.localization import localize
from repair_agent.in_sandbox.probe_edits import LineFrame, line_frames, probe_conditions

from helpers import calc_sandbox

FRAMES = '''\
def settings(text):
    out = {}
    for line in text.splitlines():
        try:
            key, value = line.split("=", 1)
        except ValueError:
            key, value = line.split(":", 1)
        if key == "x" or len(value) > 40:
            continue
        out[key] = value
    return out


def top(items):
    def inner(x):
        return x + 1
    return [inner(i) for i in items]
'''


def test_each_line_knows_its_loop_its_handlers_and_its_function_literals():
    frames = line_frames(FRAMES)
    assert frames[5] == LineFrame(True, ("ValueError",), ("=", ":", "x"), (1, 40), last=True)
    assert frames[7] == LineFrame(True, (), ("=", ":", "x"), (1, 40), last=True)   # a handler's body is outside its try
    assert frames[2].in_loop is False and frames[10].in_loop is True and not frames[8].last
    # a nested function is a frame of its own: no loop, its own literals (its `1` is not `top`'s)
    assert frames[16] == LineFrame(False, (), (), (1,), last=True) and frames[15] == LineFrame(False, (), (), ())


def test_probe_conditions_read_the_line_s_variables_against_the_literals():
    frame = LineFrame(True, (), ("#", "="), (3,))
    assert probe_conditions("    elif x:\n", ("x",), frame) == []   # an arm's header takes no guard before it
    conds = probe_conditions('        key, value = line.split("=", 1)\n', ("text", "out", "line", "key", "value"),
                             frame, ("#",))
    assert "line.startswith('#')" in conds and "'#' in line" in conds and "line == '='" in conds
    assert "line.endswith('=')" in conds and "len(line) > 3" in conds
    assert not any("key" in c or "value" in c for c in conds)   # stored by the line, not read
    assert len(conds) == len(set(conds))


COMMENTS = '''\
def settings(text):
    out = {}
    for line in text.splitlines():
        key, value = line.split("=", 1)
        out[key.strip()] = value.strip()
    return out
'''

COMMENTS_TESTS = '''\
from calc import settings


def test_comment_lines_are_skipped():
    assert settings("# the colours\\nfg = red") == {"fg": "red"}


def test_settings():
    assert settings("a = 1\\nb = 2") == {"a": "1", "b": "2"}
    assert settings("colour = #fff\\nsum = a=b") == {"colour": "#fff", "sum": "a=b"}
'''


def test_a_skip_guard_is_found_from_a_character_of_the_failing_test(tmp_path):
    # The attack on such guards is one that holds in the passing tests too and skips what they need:
    # `'#' in line` holds on `colour = #fff`, so it is never run; `line.startswith('#')` holds only on
    # the comment line of the failing test, and skipping that line is a clean fix; so is skipping the
    # lines without `=` (the negation of `'=' in line`, which held everywhere but there)
    sandbox = calc_sandbox(tmp_path, COMMENTS, COMMENTS_TESTS)
    m = localize(sandbox, ("tests/test_calc.py::test_comment_lines_are_skipped",), ("src/**",), mutate=True).mutation
    assert m is not None
    clean = sorted(f.what for f in m.fixes if f.clean)
    assert clean == ["guard `if '=' not in line: continue`", "guard `if line.startswith('#'): continue`"], clean
    assert {f.family for f in m.fixes if f.clean} == {"guessed-guard"}
    assert not any("'#' in line" in f.what for f in m.fixes)
    assert m.guards_dropped > 0   # the conditions that held in the passing test too, never run


ENTRY = '''\
def split_entry(line):
    try:
        name, value = line.split("=", 1)
    except ValueError:
        name, value = line.split(":", 1)
    return name.strip(), value.strip()
'''

ENTRY_TESTS = '''\
from calc import split_entry


def test_a_colon_before_the_equals_sign_separates():
    assert split_entry("a: b=c") == ("a", "b=c")


def test_split_entry():
    assert split_entry("a = 1") == ("a", "1")
    assert split_entry("a: 1") == ("a", "1")
    assert split_entry("url = http://x") == ("url", "http://x")
'''


def test_a_guard_after_an_assignment_checks_what_it_stored_and_may_take_the_handler_s_way(tmp_path):
    # Before the split no condition tells the failing input from the passing ones (`':' in line` holds
    # on `a: 1` too); after it, `':' in name` holds only on the failing input, and raising the
    # exception the `try` catches sends it to the other split. The condition is evaluated after the
    # line ran, where its names hold what the line stored; a line that raised stores nothing.
    sandbox = calc_sandbox(tmp_path, ENTRY, ENTRY_TESTS)
    m = localize(sandbox, ("tests/test_calc.py::test_a_colon_before_the_equals_sign_separates",), ("src/**",),
                 mutate=True).mutation
    assert m is not None
    clean = [f for f in m.fixes if f.clean]
    assert [f.what for f in clean] == ["guard `if ':' in name: raise ValueError()` after the line"], [f.what for f in clean]
    assert clean[0].line == 3 and clean[0].text == (
        '        name, value = line.split("=", 1)\n        if \':\' in name:\n            raise ValueError()')


def test_after_conditions_are_evaluated_once_the_line_ran_and_not_when_it_raised():
    import os
    import sys

    from repair_agent.in_sandbox.mutants import AFTER, ConditionTrace, compile_condition

    def halve(text):
        a, b = text.split("/")
        return a, b

    line = halve.__code__.co_firstlineno + 1
    path = os.path.realpath(halve.__code__.co_filename)
    key = ("p", line, AFTER + "a == 'x'")
    trace = ConditionTrace({}, {path: {line: [(key, *compile_condition("a == 'x'"))]}})
    for test, arg in (("t1", "x/y"), ("t2", "nothing to split"), ("", "y/x")):
        trace.test = test
        sys.settrace(trace.call)
        try:
            halve(arg)
        except ValueError:
            pass
        finally:
            sys.settrace(None)
    assert trace.held == {key: {"t1"}} and trace.reached[("p", line)] == {"t1", ""}


INDENT = '''\
def indent(text, prefix):
    return "\\n".join(prefix + line for line in text.split("\\n"))
'''

INDENT_TESTS = '''\
from calc import indent


def test_nothing_to_indent():
    assert indent("", "> ") == ""


def test_indent():
    assert indent("a\\nb", "> ") == "> a\\n> b"
'''


def test_a_guard_may_return_a_parameter_as_it_came(tmp_path):
    # `return None` and the other neutral values fail the test; `return prefix` too
    sandbox = calc_sandbox(tmp_path, INDENT, INDENT_TESTS)
    m = localize(sandbox, ("tests/test_calc.py::test_nothing_to_indent",), ("src/**",), mutate=True).mutation
    assert m is not None
    # ... and so does skipping a text without a line break (`'\n' in text` held in every passing test)
    assert sorted(f.what for f in m.fixes if f.clean) == ["guard `if '\\n' not in text: return text`",
                                                          "guard `if not text: return text`"]


def test_the_methods_of_a_nested_class_are_live_functions_the_analysis_can_swap(tmp_path):
    # A mutant of a function the module's namespace does not reach is run by importing the module again
    # (a pytest session per mutant), tens of times slower: `NpmSpec.Parser.parse` is such a method.
    import importlib.util

    from repair_agent.in_sandbox.mutants import live_functions

    (tmp_path / "nested.py").write_text(
        "class Spec:\n    class Parser:\n        @classmethod\n        def parse(cls, text):\n            return text\n\n"
        "        class Deeper:\n            def go(self):\n                return 1\n\n    def outer(self):\n        return 2\n")
    spec = importlib.util.spec_from_file_location("nested", tmp_path / "nested.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert {f.__name__ for f in live_functions(mod)} == {"parse", "go", "outer"}


def test_a_guessed_guard_is_weighed_as_a_guess_and_never_crowds_the_clean_fixes():
    # Four clean fixes are too many to tell apart (max_clean), unless three of them are guesses: the one
    # ordinary clean fix keeps its full weight, and each guess gets less than it.
    from repair_agent.choosers.search import Failure
    from repair_agent.choosers.search.catalogue import Candidate
    from repair_agent.choosers.search.mutants import mutation_features
    from repair_agent.choosers.search.weights import Rule
    from repair_agent.hints.mutation import MutantFix
    from repair_agent.in_sandbox.mutants import GUESSED

    def fix(line: int, family: str) -> MutantFix:
        return MutantFix(path="m.py", line=line, text=f"    x = {line}", what=f"edit {line}", family=family,
                         fixed=1, of=1, broken=0, checked=2)
    f = Failure(mutant_fixes={("m.py", 1): [fix(1, "comparison")], **{("m.py", n): [fix(n, GUESSED)] for n in (2, 3, 4)}})
    real = mutation_features(Candidate("m.py", 1, ("    x = 1\n",), "mutant", "edit 1"), f)
    guess = mutation_features(Candidate("m.py", 2, ("    x = 2\n",), "mutant", "edit 2"), f)
    assert (Rule.MUTANT_CLEAN_FIX, 1.0) in real and (Rule.MUTANT_GUESSED_FIX, 1.0) in guess
    from repair_agent.choosers.search.weights import WEIGHTS
    assert WEIGHTS.rule[Rule.MUTANT_GUESSED_FIX] < WEIGHTS.rule[Rule.MUTANT_CLEAN_FIX]


PAIR = '''\
def parse(text):
    if text is None:
        raise ValueError("no text")
    parts = text.split(":")
    key = parts[0]
    value = parts[1]
    return {key.strip(): value.strip()}
'''

PAIR_TESTS = '''\
import pytest

from calc import parse


def test_no_colon_is_refused():
    with pytest.raises(ValueError):
        parse("abc")


def test_pair():
    assert parse("a: b") == {"a": "b"}
'''


def test_a_probe_s_negation_guards_what_the_condition_did_not_hold_for(tmp_path):
    # `':' in text` held in the passing test and not in the failing one: its negation picks the failing
    # test out. It is not evaluated again: where the condition did not hold, the negation did.
    from repair_agent.in_sandbox.probe_edits import negation
    assert [negation(c) for c in ("':' in text", "x == 'a'", "len(x) > 3", "x < 2", "x.startswith('#')")] == [
        "':' not in text", "x != 'a'", "len(x) <= 3", "x >= 2", "not x.startswith('#')"]
    m = localize(calc_sandbox(tmp_path, PAIR, PAIR_TESTS), ("tests/test_calc.py::test_no_colon_is_refused",),
                 ("src/**",), mutate=True).mutation
    assert m is not None
    clean = {(f.line, f.what) for f in m.fixes if f.clean}
    assert (4, "guard `if ':' not in text: raise ValueError(\"no text\")`") in clean, clean
    assert all(f.family == "guessed-guard" for f in m.fixes if f.clean and "not in" in f.what)
