"""Edits the mutation analysis makes for slips no other edit reaches: one operand of `and`/`or`
negated, the arm of an `if` chain for the other case of its letters, a call an enclosing function
makes and never uses, a step the function takes elsewhere missing before a statement, a guard
against the very input word a failing test passes; and an edit that is never made (`min(n, maxsize)`
-> `max(n, maxsize)`, a bound made a constant). Each is
shown on its own, then found by the analysis on real pytest runs of a small repository in the local
sandbox."""
from __future__ import annotations

from repair_agent.hints.localization import localize
from repair_agent.in_sandbox import branch_edits as B, operators as O, scope_edits as S, transform_edits as T
from repair_agent.in_sandbox.condition_edits import condition_edits

from helpers import calc_sandbox


def clean_fixes(tmp_path, source: str, tests: str, targets: tuple[str, ...]) -> list[tuple[str, int, str]]:
    m = localize(calc_sandbox(tmp_path, source, tests), targets, ("src/**",), mutate=True).mutation
    assert m is not None and m.finished
    return [(f.family, f.line, f.what) for f in m.fixes if f.clean]


def test_one_operand_of_a_boolean_operator_is_negated():
    got = [e[1:] for e in condition_edits("    if skip and value in symbols:", ("skip", "value"))]
    assert ("negate `skip`", "    if not skip and value in symbols:") in got
    # a comparison is negated by its operator's swaps, a `not` by dropping it: neither again here
    assert not [w for w, _ in got if w.startswith("negate `value")]
    assert [e[1:] for e in condition_edits("    return a.b or not f(x)", ("a", "x"))
            if e[1].startswith("negate")] == [("negate `a.b`", "    return not a.b or not f(x)")]
    # inside a comprehension's condition too; a lone condition is the operator table's (`negate the condition`)
    assert ("negate `w[0]`", "    x = [v for v in xs if v and not w[0]]") in [
        e[1:] for e in condition_edits("    x = [v for v in xs if v and w[0]]", ("v", "w", "x", "xs"))]
    assert not [e for e in condition_edits("    if skip:", ("skip",)) if e[1].startswith("negate")]


CURRENCY = '''\
SYMBOLS = {"$", "EUR"}


def currency(value, skip_symbols=True):
    if skip_symbols and value in SYMBOLS:
        return True
    return len(value) == 3 and value.isupper()
'''

CURRENCY_TESTS = '''\
from calc import currency


def test_symbols_are_skipped_by_default():
    assert not currency("$")


def test_a_symbol_is_a_currency_when_not_skipped():
    assert currency("$", skip_symbols=False)


def test_codes():
    assert currency("USD") and currency("USD", skip_symbols=False) and not currency("usd")
'''


def test_the_analysis_negates_the_operand_that_is_wrong(tmp_path):
    # negating the whole condition fixes both targets and breaks `test_codes`; dropping the
    # operand fixes one target: only `not skip_symbols` is clean
    targets = ("tests/test_calc.py::test_symbols_are_skipped_by_default",
               "tests/test_calc.py::test_a_symbol_is_a_currency_when_not_skipped")
    assert ("boolean", 5, "negate `skip_symbols`") in clean_fixes(tmp_path, CURRENCY, CURRENCY_TESTS, targets)


CUSIP = '''\
def checksum(text):
    total = 0
    for c in text:
        if c >= "0" and c <= "9":
            val = ord(c) - ord("0")
        elif c >= "A" and c <= "Z":
            val = 10 + ord(c) - ord("A")
        elif c == "*":
            val = 36
        else:
            return None
        total += val
    return total
'''

CUSIP_TESTS = '''\
from calc import checksum


def test_digits_and_capitals():
    assert checksum("1A*") == 1 + 10 + 36


def test_small_letters_count_as_capitals():
    assert checksum("1a") == 11


def test_anything_else_is_refused():
    assert checksum("1-") is None
'''


def test_an_arm_for_capitals_gets_a_sibling_for_small_letters():
    sites = B.elif_sites(CUSIP)
    assert [(end, arms) for _, _, end, _, _, arms in sites] == [(7, [('c >= "a" and c <= "z"', 'val = 10 + ord(c) - ord("a")')])]
    # mixed cases, or no letters: no such arm
    assert B.elif_sites(CUSIP.replace('"Z"', '"z"')) == []
    assert B.elif_sites("def f(c):\n    if c == '1':\n        return 1\n    return 0\n") == []


def test_the_analysis_adds_the_arm_for_the_other_case(tmp_path):
    got = clean_fixes(tmp_path, CUSIP, CUSIP_TESTS, ("tests/test_calc.py::test_small_letters_count_as_capitals",))
    assert got == [("elif-branch", 7, 'add `elif c >= "a" and c <= "z": val = 10 + ord(c) - ord("a")`')]


DECORATOR = '''\
def checked(returns=None):
    def decorate(func):
        output_check = (lambda x: returns(x)) if returns else (lambda x: x)

        def wrapper(*args):
            output = func(*args)
            return output

        return wrapper
    return decorate


def must_be_positive(x):
    if x <= 0:
        raise ValueError(x)
    return x
'''

DECORATOR_TESTS = '''\
import pytest

from calc import checked, must_be_positive


def test_the_returned_value_is_checked():
    @checked(returns=must_be_positive)
    def minus(a, b):
        return a - b
    with pytest.raises(ValueError):
        minus(1, 2)


def test_a_good_value_passes():
    @checked(returns=must_be_positive)
    def minus(a, b):
        return a - b
    assert minus(2, 1) == 1 and checked()(lambda: -1)() == -1
'''


def test_a_callable_made_and_never_used_is_found_per_function():
    # `output_check` is made by `decorate` and read nowhere in it, its nested `wrapper` included
    assert S.unused_callables(DECORATOR) == [(2, 9, ["output_check"])]
    assert S.unused_callables(DECORATOR.replace("return output\n", "return output_check(output)\n")) == []
    # a function with nothing nested: its unused names are its own variables' business
    assert S.unused_callables("def f(x):\n    g = len(x)\n    return x\n") == []


def test_the_analysis_passes_the_value_through_the_unused_callable(tmp_path):
    got = clean_fixes(tmp_path, DECORATOR, DECORATOR_TESTS, ("tests/test_calc.py::test_the_returned_value_is_checked",))
    assert ("missing-call", 7, "output -> output_check(output)") in got


PIPE = '''\
def escaped(text, pos):
    """Is the character at `pos` escaped by an odd number of backslashes before it?"""
    backslashes = 0
    while pos >= 0 and text[pos] == "\\\\":
        backslashes += 1
        pos -= 1
    return backslashes % 2 == 1
'''

PIPE_TESTS = '''\
from calc import escaped


def test_an_escaped_pipe():
    assert escaped("a\\\\|b", 2)


def test_a_plain_pipe():
    assert not escaped("a|b", 1) and not escaped("a\\\\\\\\|b", 3)
'''


def test_a_step_taken_in_a_loop_is_tried_before_it():
    steps = T.updates(PIPE)
    assert steps == [(1, 7, "backslashes", "backslashes += 1"), (1, 7, "pos", "pos -= 1")]
    line = PIPE.splitlines(True)[3]
    assert T.update_edits(line, ["pos", "text"], steps, 4) == [
        ("transform", "insert `pos -= 1`", '    pos -= 1\n    while pos >= 0 and text[pos] == "\\\\":')]
    # another function's steps, or a line that cannot have a statement before it: none
    assert T.update_edits(line, ["pos"], steps, 9) == []
    assert T.update_edits("    elif pos:\n", ["pos"], steps, 4) == []


def test_the_analysis_inserts_the_missing_step(tmp_path):
    got = clean_fixes(tmp_path, PIPE, PIPE_TESTS, ("tests/test_calc.py::test_an_escaped_pipe",))
    assert ("transform", 4, "insert `pos -= 1`") in got


COLOR = '''\
def parse_legacy(value):
    if not value:
        raise ValueError("an empty color")
    value = value.strip()
    if value.startswith("#") and len(value) == 4:
        return tuple(int(c * 2, 16) for c in value[1:])
    return tuple(ord(c) % 256 for c in value[:3].ljust(3, "0"))
'''

COLOR_TESTS = '''\
import pytest

from calc import parse_legacy


@pytest.mark.parametrize(["value", "match"], [("transparent", 'forbids "transparent" as a value')])
def test_refused(value, match):
    with pytest.raises(ValueError, match=match):
        parse_legacy(value)


def test_parsed():
    assert parse_legacy("#abc") == (170, 187, 204)
    assert parse_legacy(" red ") == (114, 101, 100)
    with pytest.raises(ValueError):
        parse_legacy("")
'''


def test_a_probe_compares_a_variable_with_the_failing_tests_input_word():
    from repair_agent.in_sandbox import probe_edits as P

    assert P.probe_words(["transparent", "#fff", "a b", "transparent", "Red"]) == ["transparent", "Red"]
    frame = P.LineFrame(in_loop=False, handled=(), strings=("#",), numbers=(4,))
    probes = P.probe_conditions('    if value.startswith("#") and len(value) == 4:\n', ("value",), frame, (), ("transparent", "Red"))
    assert probes[:3] == ["value == 'transparent'", "value.lower() == 'transparent'", "value == 'Red'"]


def test_the_message_a_test_asks_for_may_be_one_of_its_parameters():
    from repair_agent.in_sandbox.guard_edits import parametrized_message

    text = 'forbids "transparent" as a value'
    assert parametrized_message([COLOR_TESTS], [{"value": "transparent", "match": text}]) == text
    # a real pattern, two failing tests that disagree, or no such parameter: no message
    assert parametrized_message([COLOR_TESTS], [{"match": "forbids (a|b)"}]) is None
    assert parametrized_message([COLOR_TESTS] * 2, [{"match": "a"}, {"match": "b"}]) is None
    assert parametrized_message([COLOR_TESTS], [{"value": "transparent"}]) is None


def test_the_analysis_guards_against_the_failing_tests_input(tmp_path):
    # the guard raises the message the test's parameter asks for
    m = localize(calc_sandbox(tmp_path, COLOR, COLOR_TESTS), ("tests/test_calc.py::test_refused[transparent-forbids \"transparent\" as a value]",),
                 ("src/**",), mutate=True).mutation
    assert m is not None
    texts = [f.text for f in m.fixes if f.clean]
    assert any("if value.lower() == 'transparent':" in t and "raise ValueError('forbids \"transparent\" as a value')" in t
               for t in texts), texts


NEAREST = '''\
import calendar


def last_day_of_month(year, month):
    return calendar.monthrange(year, month)[1]


def nearest_weekday(year, month, day):
    last = last_day_of_month(year, month)
    weekday = calendar.weekday(year, month, day)
    if weekday < 5:
        return day
    if weekday == 5:
        return day - 1 if day > 1 else day + 2
    return day + 1
'''

NEAREST_TESTS = '''\
from calc import nearest_weekday


def test_a_weekday_is_itself():
    assert nearest_weekday(2024, 1, 10) == 10


def test_saturday_moves_to_friday():
    assert nearest_weekday(2024, 1, 13) == 12


def test_a_day_past_the_month_end_is_its_last_weekday():
    assert nearest_weekday(2024, 4, 31) == 30
'''


def test_a_value_computed_and_never_read_clamps_the_variables_read_after_it():
    unused = T.unused_values(NEAREST)
    assert [(at, name) for _, _, at, name in unused] == [(9, "last")]   # `last` of the buggy function; `weekday` is read
    got = T.clamp_edits("    weekday = calendar.weekday(year, month, day)\n", ["year", "month", "day"], unused, 10)
    assert ("transform", "insert `day = min(day, last)`",
            "    day = min(day, last)\n    weekday = calendar.weekday(year, month, day)") in got
    assert len(got) == 6 and not T.clamp_edits("    last = 1\n", ["day"], unused, 9)   # not before its own assignment
    assert not T.clamp_edits("    weekday = calendar.weekday(year, month, day)\n", ["day"], unused, 4)   # another function
    # read anywhere in the function (a nested one too), declared global, or `_`: not unused
    assert not T.unused_values("def f(x):\n    y = x\n    def g():\n        return y\n    return g\n")
    assert not T.unused_values("def f(x):\n    global y\n    y = x\n") and not T.unused_values("def f(x):\n    _ = x\n")


def test_the_analysis_clamps_the_day_by_the_unused_last_day(tmp_path):
    fixes = clean_fixes(tmp_path, NEAREST, NEAREST_TESTS,
                        ("tests/test_calc.py::test_a_day_past_the_month_end_is_its_last_weekday",))
    assert ("transform", 10, "insert `day = min(day, last)`") in fixes


# the clamp a fix removed, where the bound is read later on: `last_day` is not unused, but named after `day`
NEAREST_READ = NEAREST.replace("last = ", "last_day = ").replace(
    "    return day + 1\n", "    return day + 1 if day < last_day else day - 2\n")


def test_a_value_named_after_a_variable_clamps_it_though_it_is_read():
    bounds = T.named_bounds(NEAREST_READ)
    assert [(at, name) for _, _, at, name in bounds] == [(9, "last_day")] and not T.unused_values(NEAREST_READ)
    line = "    weekday = calendar.weekday(year, month, day)\n"
    got = [what for _, what, _ in T.clamp_edits(line, ["year", "month", "day"], [], 10, bounds)]
    assert got == ["insert `day = min(day, last_day)`", "insert `day = max(day, last_day)`"]   # `year`, `month`: not its words
    assert not T.clamp_edits(line, ["day"], [], 9, bounds)   # not before its own assignment


def test_the_analysis_clamps_the_day_by_the_last_day_it_reads_later(tmp_path):
    fixes = clean_fixes(tmp_path, NEAREST_READ, NEAREST_TESTS,
                        ("tests/test_calc.py::test_a_day_past_the_month_end_is_its_last_weekday",))
    assert ("transform", 10, "insert `day = min(day, last_day)`") in fixes


JOIN = '''\
def join_path(base, path):
    return "{}/{}".format(base.rstrip("/"), path.lstrip())
'''

JOIN_TESTS = '''\
from calc import join_path


def test_plain():
    assert join_path("/a/", "b") == "/a/b"


def test_no_double_slash():
    assert join_path("/a", "/b") == "/a/b"


def test_many_slashes():
    assert join_path("/a//", "//b") == "/a/b"
'''


def test_a_bare_call_takes_the_argument_of_its_mirror_on_the_line():
    line = '    return "{}/{}".format(base.rstrip("/"), path.lstrip())'
    got = [e for e in S.scope_edits(line, ("base", "path"), (), {}) if e[0] == "more-arguments"]
    assert got == [("more-arguments", 'pass "/" to .lstrip()', '    return "{}/{}".format(base.rstrip("/"), path.lstrip("/"))')]
    # a call of another kind, or one that has its argument, gets nothing
    assert not [e for e in S.scope_edits("    return a.rstrip('/') + b.lower()", ("a", "b"), (), {}) if e[0] == "more-arguments"]
    assert not [e for e in S.scope_edits("    return a.rstrip('/') + b.lstrip('x')", ("a", "b"), (), {})
                if e[0] == "more-arguments"]


def test_the_analysis_passes_the_mirrors_argument(tmp_path):
    fixes = clean_fixes(tmp_path, JOIN, JOIN_TESTS, ("tests/test_calc.py::test_no_double_slash",
                                                     "tests/test_calc.py::test_many_slashes"))
    assert ("more-arguments", 2, 'pass "/" to .lstrip()') in fixes


SHOUT = '''\
class Frozen(str):
    pass


def shout(words, last=True):
    words = [w.upper() if len(w) > 3 else w for w in words]
    if last and words:
        if isinstance(words[-1], Frozen):
            words[-1] = words[-1].upper()
    return " ".join(words)
'''

SHOUT_TESTS = '''\
from calc import Frozen, shout


def test_the_last_short_word_is_shouted():
    assert shout(["go", "bar"]) == "go BAR"


def test_a_frozen_last_word_stays():
    assert shout(["go", Frozen("ABC")]) == "go ABC"


def test_long_words():
    assert shout(["hello", "world"]) == "HELLO WORLD"
'''


def test_the_conditions_of_a_function_are_its_branch_points():
    from repair_agent.in_sandbox import branch_edits
    assert branch_edits.branch_points(SHOUT) == [(5, 7, 8), (5, 8, 9)]
    assert branch_edits.branch_points("def f(x):\n    while x and (\n            x > 1):\n        x -= 1\n") == []   # on two lines


def test_a_condition_the_failing_test_took_the_other_way_is_mutated_beyond_the_ranked_lines(tmp_path, monkeypatch):
    # one line mutated by rank (every line ties: the passing tests run them all); the `if` whose body the
    # failing test skipped and a passing test ran is mutated besides, and its negation is the fix
    from repair_agent.hints import mutation
    monkeypatch.setattr(mutation, "MAX_LINES", 1)
    sandbox = calc_sandbox(tmp_path, SHOUT, SHOUT_TESTS)
    m = localize(sandbox, ("tests/test_calc.py::test_the_last_short_word_is_shouted",), ("src/**",), mutate=True).mutation
    assert m is not None and m.finished
    assert [ml.line for ml in m.lines][:2] == [6, 8]
    assert any(f.line == 8 and f.clean and "not" in f.text for f in m.fixes), [(f.line, f.what) for f in m.fixes]


LIKE = '''\
def coerce(data, kind):
    return kind(data)


def like(template, data):
    """`data` as a collection of the type `template` is (a list, a tuple or a set)."""
    return coerce(data, list)
'''

LIKE_TESTS = '''\
from calc import like


def test_a_tuple_template_gives_a_tuple():
    assert like((0,), [1, 2]) == (1, 2)


def test_a_list_template_gives_a_list():
    assert like([0], (1, 2)) == [1, 2]
'''


def test_a_built_in_type_passed_to_a_call_becomes_the_type_of_a_variable():
    got = [e for e in S.scope_edits("    return coerce(data, list)", ("template", "data"), ("coerce",), {})
           if e[0] == "type-of"]
    assert [w for _, w, _ in got] == ["list -> type(template)", "list -> type(data)"]
    assert got[0][2] == "    return coerce(data, type(template))"
    # a type test's fixed type is its point, and a call of the type itself is not an argument
    assert not [e for e in S.scope_edits("    return isinstance(data, list) and list(data)", ("data",), (), {})
                if e[0] == "type-of"]


def test_the_analysis_builds_the_type_of_the_template(tmp_path):
    got = clean_fixes(tmp_path, LIKE, LIKE_TESTS, ("tests/test_calc.py::test_a_tuple_template_gives_a_tuple",))
    assert ("type-of", 7, "list -> type(template)") in got
    assert ("type-of", 7, "list -> type(data)") not in got   # the list template's test refutes it


# `min -> max` beside a bound no number exceeds makes the line a constant: `max(n, maxsize)` is `maxsize`,
# green wherever the tests only ask for more than the code gives, and no fix.
UP_TO = '''\
from sys import maxsize


def up_to(items, start, stop):
    """The items up to the larger of start and stop, that one included."""
    n = min(max(start, stop), maxsize)
    return items[:n]
'''
UP_TO_TESTS = '''\
from calc import up_to


def test_the_larger_bound_is_included():
    assert up_to([1, 2, 3], 1, 2) == [1, 2, 3]


def test_past_the_end():
    assert up_to([5, 6], 3, 0) == [5, 6]
'''


def test_an_edit_that_makes_a_bound_a_constant_is_not_made():
    line = "    n = min(max(start, stop), maxsize)\n"
    got = [what for kind, what, _ in O.line_mutations(line, names=("start", "stop", "n")) if kind == "extreme"]
    assert got == ["max -> min"]   # not `min -> max`: `max(max(start, stop), maxsize)` is `maxsize`
    for line in ("    y = min(v, float('inf'))\n", "    y = max(v, -math.inf)\n", "    y = min(sys.maxsize, v)\n"):
        assert not [e for e in O.line_mutations(line, names=("v", "y")) if e[0] == "extreme"], line
    assert [w for k, w, _ in O.line_mutations("    y = min(v, limit)\n", names=("v", "y")) if k == "extreme"] == ["min -> max"]
    # only an edit that makes one: `max(v, maxsize)` is already a constant, `min(v, maxsize)` is not
    assert [w for k, w, _ in O.line_mutations("    y = max(v, maxsize)\n", names=("v", "y")) if k == "extreme"] == ["max -> min"]


def test_the_analysis_offers_the_bound_plus_one_and_not_the_constant(tmp_path):
    fixes = clean_fixes(tmp_path, UP_TO, UP_TO_TESTS, ("tests/test_calc.py::test_the_larger_bound_is_included",))
    assert ("argument", 6, "argument max(start, stop) + 1") in fixes
    assert not [f for f in fixes if f[0] == "extreme"], fixes
