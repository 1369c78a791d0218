"""Statements the mutation analysis inserts: transforms (`v = v.removesuffix('_id')`) and `else` arms:
where they go, what the failing tests' examples and the module's markers make of transforms, and
what the analysis and the search chooser do with them, on real pytest runs of small repositories in
the local sandbox."""
from __future__ import annotations

from repair_agent.choosers.search import Failure
from repair_agent.choosers.search.mutants import mutant_candidates, mutation_features
from repair_agent.choosers.search.patch import render_patch
from repair_agent.choosers.search.weights import Rule
from repair_agent.hints.localization import localize
from repair_agent.hints.mutation import MutantFix
from repair_agent.in_sandbox import branch_edits as B, transform_edits as T

from helpers import calc_sandbox


def test_examples_show_a_dropped_suffix_or_prefix_and_a_replaced_separator():
    assert T.example_transforms(["employee_id", "Employee"]) == [".removesuffix('_id')"]
    assert T.example_transforms(["v1.0", "1.0"]) == [".removeprefix('v')", ".replace('v', '')"]
    # the pairs agree on `+` -> `.`: most supported first
    got = T.example_transforms(["0.1.0+2+3+4", "0.1.0+2.3.4", "1+2", "1.2", "3+4+5", "3.4.5"])
    assert got[:2] == [".replace('+', '.')", ".replace('.', '+')"]
    assert T.example_transforms(["a-b-c", "abc"]) == [".replace('-', '')"]
    # letters or digits changed: a value, not a separator; too long a tail: not a small change
    assert T.example_transforms(["abc", "abd", "12", "13"]) == []
    assert T.example_transforms(["employee_identity", "employee"]) == []


def test_literals_come_from_test_code_and_a_class_of_examples():
    code = '''
class CoerceCase:
    examples = {"1.0+2.3": ("1.0+2+3",)}

    def test_it(self):
        assert f("x") == "y"
'''
    assert sorted(T.literals_in([code, "def broken(:"])) == ["1.0+2+3", "1.0+2.3", "x", "y"]


def test_a_variable_is_transformed_before_its_first_read_only():
    source = '''\
UTF8_BOM = "\\ufeff"
LONG_TEXT = "not a marker"


def humanize(word, sep=" "):
    """Docstring naming word."""
    word = word.replace("_", sep)
    word = word.strip()
    for part in word.split():
        print(part)
    return word


def coerce(rest):
    if rest:
        build = rest
    else:
        build = ""
    if build:
        return build
'''
    reads = T.first_reads(source)
    assert reads[7] == ["word", "sep"]   # the docstring names `word` but reads nothing
    assert 8 not in reads                # after its reassignment `word` is not transformed again
    assert 9 not in reads                # `for part in word.split()` reads `word` again
    assert reads[10] == ["part"]
    assert reads[19] == ["build"]        # assigned in both branches, read after them
    assert T.module_markers(source) == ["UTF8_BOM"]
    # a branch's first statement: what the branch reads that held a value before it
    branched = T.first_reads("def parse(line, strip):\n    if line[0] == '[':\n        return line\n"
                             "    else:\n        if strip:\n            for c in '#;':\n"
                             "                line = line.split(c)[0]\n        return None, line\n")
    assert branched[5] == ["strip", "line"]   # `else: line = line.strip()` forgotten for continuations
    assert branched[3] == branched[6] == ["line"] and branched[7] == ["c", "line"]
    assert T.constant_transforms(["UTF8_BOM"]) == [".removeprefix(UTF8_BOM)", ".removesuffix(UTF8_BOM)"]
    edits = T.transform_edits("    word = word.replace('_', sep)\n", ["word"], [".strip()"])
    assert edits == [("transform", "insert `word = word.strip()`",
                      "    word = word.strip()\n    word = word.replace('_', sep)")]
    assert T.transform_edits("    else:\n", ["x"], [".strip()"]) == []


NORMALIZED = '''\
UTF8_BOM = "\\ufeff"


def parse(data):
    rows = []
    for line in data.splitlines():
        rows.append(line.split("="))
    return rows


def slug(word):
    word = word.lower()
    return word.replace(" ", "-")
'''

NORMALIZED_TESTS = '''\
import pytest

from calc import parse, slug


def test_bom():
    assert parse("\\ufeffa=1") == [["a", "1"]]


def test_plain():
    assert parse("a=1\\nb=2") == [["a", "1"], ["b", "2"]]


def test_bom_inside_a_value_is_kept():
    assert parse("a=\\ufeff") == [["a", "\\ufeff"]]


@pytest.mark.parametrize("given, expected", [("post_id", "post"), ("my post", "my-post")])
def test_slug(given, expected):
    assert slug(given) == expected
'''


def test_the_analysis_inserts_the_transform_the_tests_agree_with_where_the_input_enters(tmp_path):
    # The attack on an inserted transform is one that turns the failing test green by changing more
    # than it must: `line.removeprefix(...)` on every line would eat a marker inside a value too. The
    # passing tests say which is clean; among clean ones the chooser prefers the first the tests reach.
    sandbox = calc_sandbox(tmp_path / "bom", NORMALIZED, NORMALIZED_TESTS)
    m = localize(sandbox, ("tests/test_calc.py::test_bom",), ("src/**",), mutate=True).mutation
    assert m is not None
    clean = [f for f in m.fixes if f.clean and f.family == "transform"]
    assert "    data = data.removeprefix(UTF8_BOM)" in [f.text.split("\n")[0] for f in clean]
    assert m.transforms_dropped > 0   # `rows` is a list where the test runs its line: no text transform
    # the parameter's transform runs before the loop's: it is the one the chooser puts first
    lines = {i + 1: t for i, t in enumerate(NORMALIZED.splitlines(keepends=True))}
    f = Failure(mutant_fixes={(x.path, x.line): [y for y in clean if y.line == x.line] for x in clean})
    first = [c for c in mutant_candidates("src/calc.py", lines, f)
             if (Rule.MUTANT_PREFERRED_INSERT, 1.0) in mutation_features(c, f)]
    assert [c.new_lines[0] for c in first] == ["    data = data.removeprefix(UTF8_BOM)\n"]

    # a parametrized test's own examples show what the missing call does
    sandbox = calc_sandbox(tmp_path / "slug", NORMALIZED, NORMALIZED_TESTS)
    m = localize(sandbox, ("tests/test_calc.py::test_slug[post_id-post]",), ("src/**",), mutate=True).mutation
    assert m is not None
    assert "    word = word.removesuffix('_id')" in [f.text.split("\n")[0] for f in m.fixes if f.clean]


def test_one_transform_before_several_lines_counts_once_among_clean_fixes():
    def fix(line, text, family="transform"):
        return MutantFix(path="m.py", line=line, text=f"    {text}\n    x = x + 1", what=f"insert `{text}`",
                         family=family, fixed=1, of=1, broken=0, checked=3, reached=line)
    lines = {n: "    x = x + 1\n" for n in range(1, 8)}
    same = [fix(n, "w = w.strip()") for n in (2, 3, 4, 5)]
    f = Failure(mutant_fixes={("m.py", x.line): [x] for x in same})
    assert len(mutant_candidates("m.py", lines, f)) == 4   # one fix as far as the tests can tell
    other = [fix(n, f"w = w.removesuffix('{n}')") for n in (2, 3, 4, 5)]
    f = Failure(mutant_fixes={("m.py", x.line): [x] for x in other})
    crowded = mutant_candidates("m.py", lines, f)           # four different ones: crowded, still each tried,
    assert len(crowded) == 4 and not any(                     # none standing out
        rule is Rule.MUTANT_CLEAN_FIX for c in crowded for rule, _ in mutation_features(c, f))


JOIN = '''\
def join(left, right, left_default=None, right_default=None):
    index = {}
    for item in left:
        index.setdefault(item, []).append(item)
    for item in right:
        if item in index:
            for left_match in index[item]:
                yield (left_match, item)


def first(items, default=None):
    for item in items:
        if item:
            return item
    return default
'''

JOIN_TESTS = '''\
from calc import join, first


def test_inner():
    assert list(join([1, 2], [2])) == [(2, 2)]


def test_unmatched_right():
    assert list(join([1], [3], left_default="-", right_default="+")) == [("-", 3)]


def test_first():
    assert first([0, 5]) == 5
'''


def test_an_else_arm_repeats_the_if_body_with_a_name_from_before_the_if():
    sites = B.else_sites(JOIN)
    # the `if` at line 6, whose body ends at line 8: its `yield` with the loop's `left_match` replaced,
    # the names sharing a word with it first
    assert [(at, end, indent) for at, end, indent, _ in sites] == [(6, 8, "        ")]
    arms = sites[0][3]
    assert arms[:2] == ["yield (left, item)", "yield (left_default, item)"] and "yield (right_default, item)" in arms
    # (`if item: return item` binds nothing in its body: no arm)
    edit = B.else_edit("                yield (left_match, item)\n", "        ", "yield (left_default, item)")
    assert edit == ("else-branch", "add `else: yield (left_default, item)`",
                    "                yield (left_match, item)\n        else:\n            yield (left_default, item)")


def test_the_analysis_finds_the_missing_else_and_the_chooser_prefers_the_closest_name(tmp_path):
    # The attack on an added arm is one that makes the failing test green with any value: here both
    # defaults are strings, so only the one the test expects passes; where two pass, the arm whose
    # name shares a word with the replaced one is tried first.
    sandbox = calc_sandbox(tmp_path, JOIN, JOIN_TESTS)
    m = localize(sandbox, ("tests/test_calc.py::test_unmatched_right",), ("src/**",), mutate=True).mutation
    assert m is not None
    clean = [f for f in m.fixes if f.clean]
    assert [f.what for f in clean] == ["add `else: yield (left_default, item)`"]
    assert [f.line for f in clean] == [8]   # after the body the failing test never ran (its `if` did)
    both = [MutantFix(path="src/calc.py", line=8, text=f"x\n        else:\n            yield ({n}, item)",
                      what=f"add `else: yield ({n}, item)`", family="else-branch", fixed=1, of=1, broken=0, checked=2)
            for n in ("left_default", "right_default")]
    f = Failure(mutant_fixes={("src/calc.py", 8): both})
    lines = {i + 1: t for i, t in enumerate(JOIN.splitlines(keepends=True))}
    made = mutant_candidates("src/calc.py", lines, f)
    preferred = [c.new_lines[-1] for c in made if (Rule.MUTANT_PREFERRED_INSERT, 1.0) in mutation_features(c, f)]
    assert preferred == ["            yield (left_default, item)\n"]


NESTED = '''\
def label(pairs, fallback):
    out = []
    for key, value in pairs:
        if key:
            name = key.upper()
            if value:
                tag = name
                out.append(tag)
    return out
'''

NESTED_TESTS = '''\
from calc import label


def test_named():
    assert label([("a", 1)], "?") == ["A"]


def test_unnamed_gets_the_fallback():
    assert label([("", 1)], "?") == ["?"]
'''


def test_an_if_nested_last_in_another_leaves_the_outer_if_its_arms(tmp_path):
    # both bodies end on the same line; the arm the test needs belongs to the outer `if`
    sites = B.else_sites(NESTED)
    assert sorted((at, end) for at, end, _, _ in sites) == [(4, 8), (6, 8)]
    m = localize(calc_sandbox(tmp_path, NESTED, NESTED_TESTS), ("tests/test_calc.py::test_unnamed_gets_the_fallback",),
                 ("src/**",), mutate=True).mutation
    assert m is not None
    assert "        else:\n            out.append(fallback)" in [f.text.split("\n", 1)[1] for f in m.fixes if f.clean]


REDUCE = '''\
def reduceby(key, binop, seq, init=None):
    d = {}
    for item in seq:
        k = key(item)
        if k not in d:
            if init is None:
                d[k] = item
            else:
                d[k] = init()
        d[k] = binop(d[k], item)
    return d
'''

REDUCE_TESTS = '''\
from calc import reduceby


def test_without_init_the_first_item_starts_its_group():
    assert reduceby(len, max, ["a", "bb", "c"]) == {1: "c", 2: "bb"}
    assert reduceby(len, lambda a, b: a + b, ["a", "bb", "c"]) == {1: "ac", 2: "bb"}


def test_with_init():
    assert reduceby(len, lambda a, b: a + b, ["a", "c"], init=str) == {1: "ac"}
'''


def test_a_branch_that_falls_through_the_rest_of_its_loop_may_lack_a_continue(tmp_path):
    # both arms of the inner `if` fall through to `d[k] = binop(...)`: a `continue` may end either;
    # a branch ending the loop's body (nothing after it) or ending in a return never gets one
    assert B.jump_sites(REDUCE) == {7: " " * 16, 9: " " * 16}
    assert B.jump_sites("def f(xs):\n    for x in xs:\n        if x:\n            print(x)\n") == {}
    assert B.jump_sites("def f(xs):\n    for x in xs:\n        if x:\n            return x\n        print(x)\n") == {}
    m = localize(calc_sandbox(tmp_path, REDUCE, REDUCE_TESTS),
                 ("tests/test_calc.py::test_without_init_the_first_item_starts_its_group",), ("src/**",), mutate=True).mutation
    assert m is not None
    clean = [(f.line, f.what) for f in m.fixes if f.clean]
    assert (7, "add `continue`") in clean, clean


CARET = '''\
class Version:
    def __init__(self, major, minor, patch):
        self.major = major
        self.minor = minor
        self.patch = patch

    def next_major(self):
        return Version(self.major + 1, 0, 0)

    def next_minor(self):
        return Version(self.major, self.minor + 1, 0)

    def next_patch(self):
        return Version(self.major, self.minor, self.patch + 1)


def caret_high(target):
    if target.major:
        high = target.next_major()
    else:
        high = target.next_patch()
    return (high.major, high.minor, high.patch)
'''

CARET_TESTS = '''\
from calc import Version, caret_high


def test_a_major_version_allows_the_next_major():
    assert caret_high(Version(1, 2, 3)) == (2, 0, 0)


def test_zero_major_and_minor_allow_the_next_patch():
    assert caret_high(Version(0, 0, 3)) == (0, 0, 4)


def test_zero_major_allows_the_next_minor():
    assert caret_high(Version(0, 2, 3)) == (0, 3, 0)
'''


def test_a_missing_case_repeats_an_arm_with_a_word_its_siblings_vary():
    # `next_major` has siblings `next_minor` and `next_patch` in the file: the arm `if target.major:
    # high = target.next_major()` is repeated as an `elif` with `major` replaced by each of their
    # words, wherever every name the new arm uses exists in the file
    sites = B.elif_sites(CARET)
    assert [(first, last, end, indent, body) for first, last, end, indent, body, _ in sites] == [
        (18, 21, 19, "    ", "        ")]
    assert sites[0][5] == [("target.minor", "high = target.next_minor()"), ("target.patch", "high = target.next_patch()")]
    edit = B.elif_edit("        high = target.next_major()\n", "    ", "        ", "target.minor", "high = target.next_minor()")
    assert edit == ("elif-branch", "add `elif target.minor: high = target.next_minor()`",
                    "        high = target.next_major()\n    elif target.minor:\n        high = target.next_minor()")
    # a word no other name of the file varies (`target` alone), or an arm whose condition would repeat
    # one of the chain's: nothing
    assert B.elif_sites("def f(x, y):\n    if x.size:\n        return x.size\n    return y\n") == []
    assert B.elif_sites("def f(x):\n    if x.a_b:\n        return 1\n    elif x.a_c:\n        return 2\n"
                        "    return x.a_d\n") == [
        (2, 5, 3, "    ", "        ", [("x.a_d", "return 1")]), (2, 5, 5, "    ", "        ", [("x.a_d", "return 2")])]
    # an arm whose body shares its header's line has no indentation of its own to repeat
    assert B.elif_sites("def f(x):\n    if x.a_b: return 1\n    elif x.a_c: return 2\n    return x.a_d\n") == []


def test_the_analysis_adds_the_missing_case_of_a_chain(tmp_path):
    # no one-token edit passes: `next_patch` -> `next_minor` in the `else` fixes the failing test and
    # breaks the zero-minor one; only the new arm is clean
    m = localize(calc_sandbox(tmp_path, CARET, CARET_TESTS), ("tests/test_calc.py::test_zero_major_allows_the_next_minor",),
                 ("src/**",), mutate=True).mutation
    assert m is not None
    clean = [f for f in m.fixes if f.clean]
    assert [(f.family, f.line, f.what) for f in clean] == [
        ("elif-branch", 19, "add `elif target.minor: high = target.next_minor()`")]


TWO_PLACES = '''\
def needs_reorder(qty, point):
    return qty < point


def low_stock(items, point):
    return [name for name, qty in items if qty < point]
'''

TWO_PLACES_TESTS = '''\
from calc import low_stock, needs_reorder


def test_at_the_reorder_point_it_is_time_to_reorder():
    assert needs_reorder(5, 5)


def test_the_low_stock_list_holds_an_item_at_its_reorder_point():
    assert low_stock([("tea", 5), ("rice", 9)], 5) == ["tea"]


def test_below_and_above():
    assert needs_reorder(3, 5) and not needs_reorder(7, 5)
    assert low_stock([("rice", 9)], 5) == []
'''


def test_two_edits_that_each_fix_some_failing_targets_are_tried_together(tmp_path):
    # each `<` -> `<=` alone turns one of the two failing targets green; no single edit turns both:
    # the pair is a clean fix of its own, as one block from the first edited line to the second
    targets = ("tests/test_calc.py::test_at_the_reorder_point_it_is_time_to_reorder",
               "tests/test_calc.py::test_the_low_stock_list_holds_an_item_at_its_reorder_point")
    m = localize(calc_sandbox(tmp_path, TWO_PLACES, TWO_PLACES_TESTS), targets, ("src/**",), mutate=True).mutation
    assert m is not None
    clean = [f for f in m.fixes if f.clean]
    # (`<=` and `< point + 1` at each line: four pairs, each clean)
    assert [(f.family, f.line, f.span) for f in clean] == [("pair", 2, 5)] * 4
    assert clean[0].what == "< -> <=; < -> <="
    assert clean[0].text == "\n".join(TWO_PLACES.replace("< point", "<= point").splitlines()[1:6])
    assert m.pairs == 4
    # the chooser offers each as one candidate replacing the five lines, the first the analysis ran first,
    # and counts them as one clean fix (not a crowd)
    f = Failure(mutant_fixes={("src/calc.py", 2): tuple(clean)})
    lines = {i + 1: t for i, t in enumerate(TWO_PLACES.splitlines(keepends=True))}
    made = mutant_candidates("src/calc.py", lines, f)
    assert [(c.line, c.span) for c in made] == [(2, 5)] * 4
    assert mutation_features(made[0], f) == [(Rule.MUTANT_CLEAN_FIX, 1.0), (Rule.MUTANT_PREFERRED_INSERT, 1.0)]
    patch = render_patch({"src/calc.py": lines}, None, made[0])
    assert [ln for ln in patch.splitlines() if ln.startswith(("+ ", "- "))] == [
        "-    return qty < point", "+    return qty <= point",
        "-    return [name for name, qty in items if qty < point]", "+    return [name for name, qty in items if qty <= point]"]
    # unless every line of the block was read
    del lines[4]
    assert mutant_candidates("src/calc.py", lines, f) == []
