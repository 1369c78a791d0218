"""The programs that run inside the agent's sandbox (repair_agent/in_sandbox/), imported on the host:
their pure functions, and the rules that let them run there (Python 3.9 syntax, the standard
library and pytest only, nothing run at import)."""
from __future__ import annotations

import ast
from types import SimpleNamespace

import pytest

from repair_agent import in_sandbox
from repair_agent.hints import localization, mutation
from repair_agent.in_sandbox import mutants, operators, spectrum


# -- Ochiai: one implementation, the host's ranking is the sandbox's --------------------------------

SPECTRA = {"f1": [("src/a.py", 1), ("src/a.py", 2), ("src/a.py", 3), ("src/b.py", 9), ("lib/c.py", 1)],
           "f2": [("src/a.py", 2), ("src/a.py", 3), ("src/b.py", 9)],
           "p1": [("src/a.py", 1), ("src/a.py", 2)], "p2": [("src/a.py", 1), ("src/b.py", 9)],
           "other": [("src/a.py", 3), ("src/a.py", 4)]}


def test_ochiai_scores_and_orders_ties_by_failing_passing_path_and_line():
    scored = spectrum.ochiai(SPECTRA, {"f1", "f2"}, {"p1", "p2"}, lambda p: p.startswith("src/"))
    # a.py:3 run by both failing tests only: 1.0; b.py:9 and a.py:2 tie (2 failing, 1 passing): by path;
    # a.py:1 (1 failing, 2 passing); lib/ is out of scope; `other` counts on neither side (a.py:4 unlisted)
    assert scored == [("src/a.py", 3, 1.0, 2, 0), ("src/a.py", 2, 0.8165, 2, 1), ("src/b.py", 9, 0.8165, 2, 1),
                      ("src/a.py", 1, 0.4082, 1, 2)]
    assert spectrum.ochiai(SPECTRA, {"f1"}, set(), lambda p: False) == []


def test_the_host_ochiai_is_the_sandbox_one():
    outcomes = {"f1": "failed", "f2": "failed", "p1": "passed", "p2": "passed", "other": "failed"}
    lines, nf, np_ = localization.ochiai(SPECTRA, outcomes, {"f1", "f2"}, ("src/**",))
    assert (nf, np_) == (2, 2)
    assert [(s.path, s.line, s.score, s.failed, s.passed) for s in lines] == \
        spectrum.ochiai(SPECTRA, {"f1", "f2"}, {"p1", "p2"}, lambda p: p.startswith("src/"))


def test_the_mutation_analysis_mutates_the_best_lines_of_the_same_ranking():
    scored = spectrum.ochiai(SPECTRA, {"f1", "f2"}, {"p1", "p2"}, lambda p: True)
    # lib/c.py:1 (0.7071) is below three quarters of the best score, src/a.py:1 (0.4082) below half of it
    assert mutants.choose_lines(scored, 0.75, 40) == [("src/a.py", 3), ("src/a.py", 2), ("src/b.py", 9)]
    assert mutants.choose_lines(scored, 0.5, 40)[-1] == ("lib/c.py", 1)
    assert mutants.choose_lines(scored, 0.1, 2) == [("src/a.py", 3), ("src/a.py", 2)]
    assert mutants.choose_lines([], 0.1, 40) == []


# -- the traced run's choice of tests -----------------------------------------------------------------

def test_a_target_is_its_id_or_one_of_its_parameters():
    assert spectrum.is_target("t.py::test_a", ["t.py::test_a"])
    assert spectrum.is_target("t.py::test_a[1-2]", ["t.py::test_a"])
    assert not spectrum.is_target("t.py::test_ab", ["t.py::test_a"])


def test_spread_keeps_an_even_sample_in_order():
    assert spectrum.spread(list(range(10)), 3) == [0, 3, 6]
    assert spectrum.spread([1, 2], 5) == [1, 2]
    assert spectrum.spread([1, 2, 3], 0) == []


def _select(items, **kw):
    settings = {"targets": ["a.py::t"], "files": ["a.py"], "pool": set(), "max_others": 2, "min_near": 3}
    settings.update(kw)
    return spectrum.select_tests(items, lambda i: i, **settings)


def test_the_targets_come_first_then_an_even_spread_of_their_files_tests():
    items = ["a.py::x1", "a.py::x2", "a.py::t[0]", "a.py::x3", "a.py::x4", "b.py::y1"]
    assert _select(items, min_near=2) == ["a.py::t[0]", "a.py::x1", "a.py::x3"]


def test_the_rest_of_the_suite_fills_up_only_when_the_targets_files_hold_too_few():
    items = ["a.py::t", "a.py::x1", "b.py::y1", "b.py::y2", "c.py::z1"]
    assert _select(items, max_others=3) == ["a.py::t", "a.py::x1", "b.py::y1", "b.py::y2"]
    assert _select(items, max_others=3, min_near=1) == ["a.py::t", "a.py::x1"]
    # a suite that names its tests lends only those
    assert _select(items, max_others=3, pool={"a.py::x1", "c.py::z1"}) == ["a.py::t", "a.py::x1", "c.py::z1"]


def test_select_keeps_pytest_items(tmp_path):
    items = [SimpleNamespace(nodeid=n) for n in ("a.py::x", "a.py::t")]
    assert spectrum.select_tests(items, lambda i: i.nodeid, ["a.py::t"], ["a.py"], set(), 60, 3) == items[::-1]


def test_written_tests_counts_test_functions_as_written(tmp_path):
    f = tmp_path / "test_x.py"
    f.write_text("def test_a():\n    pass\n\n\nasync def test_b():\n    pass\n\ndef helper():\n    pass\n")
    assert spectrum.written_tests(str(f)) == 2
    assert spectrum.written_tests(str(tmp_path / "missing.py")) == 0


@pytest.mark.parametrize("name, expected", [
    ("src/pkg/mod.py", "src/pkg/mod.py"), ("mod.py", "mod.py"), ("tests/helpers.py", None),
    ("src/pkg/tests/x.py", None), ("src/test_mod.py", None), ("src/mod_test.py", None), ("conftest.py", None),
    ("venv/lib/site-packages/x.py", None)])
def test_only_the_repositorys_own_code_is_traced(tmp_path, name, expected):
    root = str(tmp_path.resolve()) + "/"
    assert spectrum.repo_path(root + name, (root,)) == expected


def test_code_outside_the_tree_or_from_a_string_is_never_traced(tmp_path):
    root = str(tmp_path.resolve()) + "/"
    assert spectrum.repo_path("<string>", (root,)) is None
    assert spectrum.repo_path("/elsewhere/mod.py", (root,)) is None


def test_the_tracer_records_the_lines_of_the_repositorys_code_only(tmp_path):
    import sys

    (tmp_path / "mod.py").write_text("def f(x):\n    y = x + 1\n    return y\n")
    code = compile((tmp_path / "mod.py").read_text(), str(tmp_path / "mod.py"), "exec")
    namespace: dict = {}
    exec(code, namespace)
    current: list = [set()]
    tracer = spectrum.make_tracer((str(tmp_path.resolve()) + "/",), current)
    sys.settrace(tracer)
    try:
        namespace["f"](1)
    finally:
        sys.settrace(None)
    assert current[0] == {("mod.py", 2), ("mod.py", 3)}


# -- the mutants of a line ---------------------------------------------------------------------------

SOURCE = "def clamp(x, lo, hi):\n    if x > hi:\n        return lo\n    items = [x][0:1]\n    return not x\n"


def _mutants_of(line: int, max_per_line: int = 200) -> list[tuple[str, str, str]]:
    scopes, _ = mutants.functions_of(SOURCE)
    return mutants.line_mutants(SOURCE.splitlines(keepends=True)[line - 1], mutants.variables(scopes, line),
                                ("clamp",), operators.analysis_mutations, max_per_line)


def test_the_analysis_runs_every_edit_the_catalogue_makes_of_a_line():
    from repair_agent.choosers.search.catalogue import line_mutations
    text = SOURCE.splitlines(keepends=True)[1]
    names = tuple(mutants.variables(mutants.functions_of(SOURCE)[0], 2))
    catalogue = {new.rstrip("\n") for _, _, new in line_mutations(text, (), names, ("clamp",))}
    assert catalogue and catalogue <= {new.rstrip("\n") for new, _, _ in _mutants_of(2)}


def test_a_line_s_likeliest_edits_run_first_and_broad_ones_last():
    got = _mutants_of(2)
    families = [family for _, _, family in got]
    assert families[0] == "boundary" and families.index("variable") > families.index("comparison")
    assert ("    if x >= hi:\n", "> -> >=", "boundary") in got and ("    if lo > hi:\n", "x -> lo", "variable") in got
    assert len({new for new, _, _ in got}) == len(got)   # no edit twice
    assert "statement-removed" not in families and len(_mutants_of(2, 3)) == 3   # a header is never removed


def test_a_negated_condition_is_negated_by_dropping_its_not_never_by_wrapping_it():
    from repair_agent.choosers.search.catalogue import line_mutations
    edits = lambda text: {what: new for _, what, new in line_mutations(text, (), ("ok", "x"), ())}
    negated = edits("        if not self.ok:\n")
    assert negated["drop `not`"] == "        if self.ok:" and "negate the condition" not in negated
    assert edits("        if not x and self.ok:\n")["negate the condition"] == "        if not (not x and self.ok):"
    assert edits("        if self.ok:\n")["negate the condition"] == "        if not (self.ok):"


def test_a_statement_may_be_removed_a_return_never_and_a_def_is_not_mutated():
    assert _mutants_of(4)[-1] == ("    pass\n", "statement removed", "statement-removed")
    assert all(w != "statement removed" for _, w, _ in _mutants_of(3))
    assert ("    return x\n", "drop `not`", "boolean") in _mutants_of(5)
    assert _mutants_of(1) == []


def test_mutants_run_one_of_every_line_first_then_the_lines_the_failing_tests_react_to():
    stats = {0: [0, 0], 1: [0, 0], 2: [0, 0]}   # line -> [changed, tried]
    order = mutants.live_first([["a1", "a2", "a3"], ["b1"], ["c1", "c2", "c3"]], lambda i: tuple(stats[i]))
    first = [next(order) for _ in range(3)]
    assert first == ["a1", "b1", "c1"]   # a time limit never cuts every edit of the last lines
    # the failing test reacted to c1 only (its message changed): line c's mutants come next
    stats.update({0: [0, 1], 1: [0, 1], 2: [1, 1]})
    assert next(order) == "c2"
    stats[2] = [1, 2]   # c2 changed nothing: 2/4 is still above a's 1/3
    assert next(order) == "c3"
    stats[2] = [1, 3]
    assert list(order) == ["a2", "a3"]


def test_the_functions_of_a_file_and_their_variables():
    scopes, defs = mutants.functions_of(SOURCE)
    assert defs == [("clamp", 1, 5, 1)]
    assert mutants.variables(scopes, 3) == ["x", "lo", "hi", "items"] and mutants.variables(scopes, 9) == []
    assert mutants.functions_of("def (:\n") == ([], [])


def test_in_a_long_function_the_variables_bound_nearest_above_a_line_come_first():
    # only the first MAX_NAMES become swaps: `nodes > levels` must be able to become `level > levels`
    src = "def walk(tree, levels):\n" + "".join(f"    v{n} = {n}\n" for n in range(20)) + (
        "    for group in tree:\n        level, nodes = group\n        if nodes > levels:\n"
        "            done = True\n")
    scopes, _ = mutants.functions_of(src)
    names = mutants.variables(scopes, 24)   # the `if`
    assert names[:5] == ["tree", "levels", "level", "nodes", "group"]
    assert names[-1] == "done" and names.index("v19") < names.index("v0")


def test_code_in_finds_a_nested_function_by_name_and_line():
    code = compile("def f():\n    def g():\n        return 1\n    return g\n", "m.py", "exec")
    assert mutants.code_in(code, "g", 2).co_name == "g" and mutants.code_in(code, "g", 3) is None


# -- what makes them runnable in the sandbox ----------------------------------------------------------

MODULES = ("spectrum", "mutants", "operators", "statement_edits", "swaps", "condition_edits", "scope_edits", "guard_edits",
           "transform_edits", "effect_edits", "branch_edits")


@pytest.mark.parametrize("name", MODULES)
def test_python_3_9_syntax_the_standard_library_and_pytest_only(name):
    tree = ast.parse(in_sandbox.source(name), feature_version=(3, 9))
    # TYPE_CHECKING imports, and operators.py's import of its sibling (relative on the host, by the name
    # in_sandbox.program loads it under in the sandbox)
    guarded = {id(n) for node in tree.body if isinstance(node, (ast.If, ast.Try)) for n in ast.walk(node)}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and id(node) not in guarded:
            assert node.level == 0 and node.module.split(".")[0] in ("__future__", "dataclasses", "typing", "_pytest")
        if isinstance(node, ast.Import):
            assert all(a.name.split(".")[0] not in ("repair_agent", "verifier", "pydantic") for a in node.names)


@pytest.mark.parametrize("name", MODULES)
def test_nothing_runs_at_import(name):
    tree = ast.parse(in_sandbox.source(name))
    for node in tree.body:
        if isinstance(node, ast.Expr):
            assert isinstance(node.value, ast.Constant)   # the docstring
        elif isinstance(node, ast.If):
            assert ast.unparse(node.test) == "TYPE_CHECKING"
        elif isinstance(node, ast.Try):   # a sibling's import, by one name or the other
            assert all(isinstance(n, (ast.ImportFrom, ast.Import, ast.ExceptHandler, ast.Name)) or n is node
                       for b in node.body + node.handlers for n in [b] + list(getattr(b, "body", [])))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            value = node.value
            assert value is not None and not any(
                isinstance(n, ast.Call) and ast.unparse(n.func) not in ("TypeVar", "frozenset", "re.compile")
                for n in ast.walk(value)), ast.unparse(node)
        else:
            assert isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)), ast.unparse(node)


def test_the_programs_load_the_modules_and_call_their_mains_only():
    for program in (localization.SPECTRUM_PROGRAM, localization.MUTATION_PROGRAM):
        ast.parse(program, feature_version=(3, 9))
        assert program.rstrip().splitlines()[-1].startswith(("spectrum.main(", "mutants.main("))
    assert repr(in_sandbox.source("mutants")) in localization.MUTATION_PROGRAM
    assert repr(in_sandbox.source("mutants")) not in localization.SPECTRUM_PROGRAM


def test_the_programs_fit_in_one_argument_and_run_as_they_are(tmp_path):
    import subprocess
    import sys

    # the kernel refuses an argument over 128 KiB (MAX_ARG_STRLEN); the mutation analysis's modules
    # together have outgrown it, so the sandbox is handed them compressed
    assert len(in_sandbox.packed(localization.MUTATION_PROGRAM).encode()) < 128 * 1024
    text = in_sandbox.packed("import sys\nprint('ran', sys.argv[1:], __name__)\n")
    out = subprocess.run([sys.executable, "-B", "-c", text, "{}"], capture_output=True, text=True, cwd=tmp_path, check=True)
    assert out.stdout == "ran ['{}'] __main__\n"


def test_the_host_reads_the_markers_the_programs_print():
    assert localization.MARKER == spectrum.MARKER == "@@ra-spectrum@@"
    assert mutation.MARKER == mutants.MARKER == "@@ra-mutants@@"


def test_the_settings_the_host_sends_are_the_ones_the_analysis_reads():
    keys = set(mutation.mutation_args([], 1.0))
    text = in_sandbox.source("mutants")
    read = {n.slice.value for n in ast.walk(ast.parse(text))
            if isinstance(n, ast.Subscript) and ast.unparse(n.value) in ("m", "self.m")
            and isinstance(n.slice, ast.Constant)}
    assert read <= keys and read >= keys - {"writable"}
    assert 'self.m["writable"]' in text


def test_guards_raise_what_the_failing_tests_expected_or_return_the_functions_neutral_value():
    from repair_agent.in_sandbox import guard_edits as g
    for message in ("failed: DID NOT RAISE <class 'pkg.errors.ParseError'>", "failed: DID NOT RAISE ParseError",
                    "AssertionError: ParseError not raised"):
        assert g.expected_exception(["failed: assert 1 == 2", message]) == "ParseError"
    assert g.expected_exception(["failed: assert 1 == 2"]) is None
    # another exception escaped: the test's code says which one it expected
    assert g.expected_in_tests(["    with pytest.raises(errors.ParseError):\n        parse(x)\n"]) == "ParseError"
    assert g.expected_in_tests(["        self.assertRaises(KeyError, f, 1)\n"]) == "KeyError"
    assert g.expected_in_tests(["pytest.raises(KeyError)", "pytest.raises(ValueError)"]) is None   # which one?
    assert g.expected_in_tests(["    try:\n        parse(x)\n    except ParseError as e:\n        return e\n"]) == "ParseError"
    assert g.expected_in_tests(["    except Exception:\n        pass\n"]) is None
    # the failures a missing check leaves: an exception where a value was asserted, or none where one was expected
    assert g.raised_instead(["failed: assert 1 == 2", "failed: TypeError: '<' not supported"])
    assert g.raised_instead(["failed: Failed: DID NOT RAISE ParseError"])
    assert not g.raised_instead(["failed: assert [] == [1]", "failed: AssertionError: 3 != 4"])
    lines = ["def f(path, n):\n", "    raise ParseError(path, n,\n", "        'split')\n", "    raise ParseError(path, n, 'x')\n"]
    assert g.raise_statement("ParseError", lines) == "raise ParseError(path, n, 'x')"   # built as the file builds it
    assert g.raise_statement("ValueError", lines) == "raise ValueError('invalid input')"
    assert g.raise_statement("Unheard", lines) is None   # a name the file cannot raise
    # the message the tests ask for, when it is plain text: the guard's exception carries it
    assert g.expected_message(['    with pytest.raises(ValueError, match="timezone minute"):\n']) == "timezone minute"
    assert g.expected_message(["        self.assertRaisesRegex(KeyError, r'dup \\(key\\)', f)\n"]) == "dup (key)"
    assert g.expected_message(['pytest.raises(ValueError, match=r"^bad .*")']) is None   # a real pattern
    assert g.expected_message(['match="one"', 'match="two"']) is None and g.expected_message(["pytest.raises(E)"]) is None
    said = ["    raise ValueError('Datetime not a date')\n"]
    assert g.raise_statement("ValueError", said, "timezone minute") == "raise ValueError('timezone minute')"
    # a message the file already raises: its check is there, a new guard would only copy it
    said.append("        raise ValueError('bad timezone minute')\n")
    assert g.raise_statement("ValueError", said, "timezone minute") == "raise ValueError('Datetime not a date')"
    # built with more than a message: as the file builds it
    assert g.raise_statement("ParseError", lines, "bad") == "raise ParseError(path, n, 'x')"
    assert g.neutral_returns(["def f(x) -> bool:\n", "    return x\n"]) == ("False", "None")
    assert g.neutral_returns(["def f(x):\n", "    if x:\n", "        return []\n", "    return x\n"]) == ("[]", "None")
    ctx = g.GuardContext(None, ("False",))
    assert [w for _, w, _ in g.guard_edits("    return item.due < today\n", ("item", "today"), ctx)][:2] == [
        "guard `if item.due is None: return False`", "guard `if not item.due: return False`"]
    assert g.guard_edits("    else:\n", ("x",), ctx) == [] and g.guard_edits("        'split')\n", ("x",), ctx) == []
    raising = g.GuardContext("raise KeyError(key)", ())
    # range checks, only where the guard raises: on the numbers the line reads, bounded by its own integers
    minute = "    offset = int(tzm) + int(tzh) * 60\n"
    checks = [w for _, w, _ in g.guard_edits(minute, ("tzm", "tzh"), raising) if "<" in w or ">" in w]
    assert "guard `if int(tzm) >= 60: raise KeyError(key)`" in checks and "guard `if int(tzh) < 0: raise KeyError(key)`" in checks
    assert not any("if tzm " in w for w in checks)   # the text itself is no number: its int() is
    assert not [w for _, w, _ in g.guard_edits(minute, ("tzm", "tzh"), ctx) if "<" in w or ">" in w]
    assert g.guard_edits("    table[key] = value\n", ("table", "key", "value"), raising)[0][2] == (
        "    if key in table:\n        raise KeyError(key)\n    table[key] = value")
