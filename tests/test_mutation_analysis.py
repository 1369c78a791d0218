"""Mutation analysis with the target-test observation: real pytest on real small repositories in the
local sandbox, and what the search chooser makes of its result."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from repair_agent.loop.actions import RunTargetTest
from repair_agent.choosers.search import Failure, SearchChooser
from repair_agent.choosers.search.weights import WEIGHTS, Rule
from repair_agent.choosers.search.mutants import mutant_candidates, mutation_features
from repair_agent.choosers.search.ranking import rank_candidates
from repair_agent.hints.localization import localize
from repair_agent.hints import mutation
from repair_agent.in_sandbox import mutants
from repair_agent.hints.mutation import MutantFix
from repair_agent.loop.plain import read_description

from helpers import CALC, CALC_TESTS, calc_sandbox, target_observation

# A loop whose `i += 1` mutated to `i -= 1` never ends; the bug is the `+ 1` of the return.
STEPS = '''\
def count_up(n):
    i = 0
    steps = 0
    while i < n:
        i += 1
        steps += 1
    return steps + 1
'''

STEPS_TESTS = '''\
from calc import count_up


def test_three():
    assert count_up(3) == 3


def test_four():
    assert count_up(4) == 4
'''


def test_a_mutant_that_turns_the_failing_target_green_is_reported_and_checked(tmp_path):
    sandbox = calc_sandbox(tmp_path)
    loc = localize(sandbox, ("tests/test_calc.py::test_clamp_high",), ("src/**",), mutate=True)
    m = loc.mutation
    assert m is not None and loc.note is None and m.cut == 0
    # `return lo` -> `return hi` fixes the target and breaks none of the three passing tests
    assert [(f.path, f.line, f.text, f.fixed, f.of, f.broken, f.checked) for f in m.fixes if f.clean] == [
        ("src/calc.py", 5, "        return hi", 1, 1, 0, 3)]
    # every line the failing test ran was mutated; of the mutants of `if x < lo` only one changes what
    # it shows: the guard before it that returns early when `lo` is 0 (`if not lo: return None`)
    by_line = {ml.line: ml for ml in m.lines}
    assert set(by_line) == {2, 4, 5} and by_line[5].fixing == 1 and by_line[2].changed == 1 < by_line[2].tried
    assert m.tried == sum(ml.tried for ml in m.lines)
    # every mutant the analysis had is accounted for: run, cut by a limit, or not compiling
    assert m.queued == m.tried + m.cut + m.not_compiling and m.deferred == 0
    assert m.lines_unread == 0 and m.lines_without_edits == 0
    assert "src/calc.py:5  lo -> hi  -> return hi  (1/1 failing pass, 0/3 passing broke)" in loc.render()
    # nothing a mutant did reaches the agent's working tree
    status = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=sandbox.workspace,
                            capture_output=True, text=True, check=True).stdout
    assert status == "" and (sandbox.workspace / "src/calc.py").read_text() == CALC


def test_the_analysis_accounts_for_the_mutants_a_limit_left_unrun(tmp_path, monkeypatch):
    monkeypatch.setattr(mutation, "MAX_MUTANTS", 3)
    sandbox = calc_sandbox(tmp_path)
    m = localize(sandbox, ("tests/test_calc.py::test_clamp_high",), ("src/**",), mutate=True).mutation
    assert m is not None and m.tried == 3 and m.cut > 0
    assert m.queued == m.tried + m.cut + m.not_compiling


def test_a_cache_that_cannot_be_cleared_leaves_every_mutant_undone(tmp_path):
    # The analysis clears the caches a module holds after each swap; a module-level object whose
    # `cache_clear` wants an argument made the clear raise after the mutant's code was put in, and that
    # mutant stayed in the live function for every mutant after it (each "undone" to the one before).
    registry = "\n\nclass Registry:\n    def cache_clear(self, name):\n        raise KeyError(name)\n\n\nREGISTRY = Registry()\n"
    sandbox = calc_sandbox(tmp_path, CALC + registry)
    m = localize(sandbox, ("tests/test_calc.py::test_clamp_high",), ("src/**",), mutate=True).mutation
    assert m is not None and m.session_exit in (0, 1) and m.deferred == 0
    assert [(f.line, f.text, f.broken) for f in m.fixes if f.clean] == [(5, "        return hi", 0)]
    assert m.queued == m.tried + m.cut + m.not_compiling


STOPS = '''\
def step(n):
    if n > 3:
        raise KeyboardInterrupt("too far")
    return n + 1
'''

STOPS_TESTS = '''\
import pytest

from calc import step


def test_three():
    assert step(3) == 3


def test_past_three():
    with pytest.raises(KeyboardInterrupt):
        step(5)
'''


def test_an_error_of_the_projects_own_class_is_not_named(tmp_path):
    # The result is read by people who must not learn a held-out project's names: an exception of a
    # class the project defines is reported by where it reached the analysis, not by its name.
    source = "class Halt(KeyboardInterrupt):\n    pass\n\n\n" + STOPS.replace("KeyboardInterrupt(", "Halt(")
    sandbox = calc_sandbox(tmp_path, source, STOPS_TESTS.replace("KeyboardInterrupt", "calc.Halt").replace(
        "from calc import step", "import calc\nfrom calc import step"))
    m = localize(sandbox, ("tests/test_calc.py::test_three",), ("src/**",), mutate=True).mutation
    assert m is not None and m.errors >= 1 and m.error.startswith("an exception of the project's at mutants.py:")
    assert "Halt" not in m.error


def test_a_mutant_that_raises_what_pytest_lets_through_ends_that_mutant_only(tmp_path):
    # `n > 3` -> `n >= 3` raises KeyboardInterrupt in the target; pytest lets that through its run of the
    # test, and it used to end the whole loop (pytest's session swallowed it) after that one mutant
    sandbox = calc_sandbox(tmp_path, STOPS, STOPS_TESTS)
    m = localize(sandbox, ("tests/test_calc.py::test_three",), ("src/**",), mutate=True).mutation
    assert m is not None and m.errors >= 1 and m.error.startswith("KeyboardInterrupt at mutants.py:")
    assert m.queued == m.tried + m.cut + m.not_compiling + m.errors
    assert "    return n" in [f.text for f in m.fixes if f.clean]


SCORE = '''\
def score(values, weight, bonus):
    total = 0
    count = 0
    for v in values:
        if v > 10:
            total += v * weight - 1
        elif v < 0:
            total -= v // 2 + bonus
        else:
            total += v + bonus * 2
        count += 1
    if count > 3 and total > 100:
        total = total - count * 3
    return total + 1
'''

SCORE_TESTS = '''\
from calc import score


def test_small():
    assert score([1, 2], 1, 0) == 3


def test_big():
    assert score([20], 2, 0) == 40


def test_negative():
    assert score([-4], 1, 1) == 2
'''


def test_two_processes_share_the_mutants_and_find_what_one_finds(tmp_path, monkeypatch):
    # Past MIN_SHARED queued mutants the analysis forks (where it has two CPUs): each process runs every
    # other mutant of each line, and the parent adds up what the child sent. The result is the one
    # process's: the same mutants run, the same clean fixes, in each line's order, the same counts.
    from repair_agent.in_sandbox.workers import available_cpus
    runs = {}
    for workers in (1, 2):
        monkeypatch.setattr(mutation, "WORKERS", workers)
        sandbox = calc_sandbox(tmp_path / str(workers), SCORE, SCORE_TESTS)
        runs[workers] = localize(sandbox, ("tests/test_calc.py::test_small",), ("src/**",), mutate=True).mutation
    one, two = runs[1], runs[2]
    assert one is not None and two is not None and one.queued >= mutants.MIN_SHARED
    assert one.workers == 1 and two.workers == min(2, available_cpus()) and two.workers_lost == 0
    assert two.tried == one.tried == one.queued and two.cut == one.cut == 0 and two.errors == 0
    assert sorted((ml.line, ml.tried, ml.fixing) for ml in two.lines) == sorted((ml.line, ml.tried, ml.fixing) for ml in one.lines)
    # a mutant stopped by its time limit (a wall clock: on a loaded machine one run may hit it and the other
    # not) is neither refuted nor counted as changing the failure the same way: the only leeway allowed
    slack = one.timed_out + two.timed_out
    by_line = {ml.line: ml for ml in one.lines}
    assert sum(abs(ml.changed - by_line[ml.line].changed) for ml in two.lines) <= slack
    assert sum(len(set(ml.refuted) ^ set(by_line[ml.line].refuted)) for ml in two.lines) <= slack
    clean = sorted([(f.line, f.what, f.checked) for f in one.fixes if f.clean], key=lambda x: x[0])   # stable
    assert len(clean) >= 3 and all(checked == 2 for _, _, checked in clean)
    assert sorted([(f.line, f.what, f.checked) for f in two.fixes if f.clean], key=lambda x: x[0]) == clean


def test_a_mutant_that_never_ends_is_stopped_and_the_analysis_goes_on(tmp_path, monkeypatch):
    monkeypatch.setattr("repair_agent.hints.mutation.PER_MUTANT_S", 0.5)
    sandbox = calc_sandbox(tmp_path, STEPS, STEPS_TESTS)
    loc = localize(sandbox, ("tests/test_calc.py::test_three", "tests/test_calc.py::test_four"), ("src/**",),
                   mutate=True)
    m = loc.mutation
    assert m is not None and loc.lines
    by_line = {ml.line: ml for ml in m.lines}
    # `i += 1` -> `i -= 1` loops: stopped once for both targets (the second is not run on it), counted
    # as changing what the tests show; the lines after it were still mutated
    assert by_line[5].tried >= 2 and by_line[5].changed >= 1
    # with no passing test to check it against, the fix is a lead, not a clean fix
    assert (7, "    return steps", 2, 2, None, False) in [
        (f.line, f.text, f.fixed, f.of, f.broken, f.clean) for f in m.fixes if f.line == 7]


def test_the_analysis_runs_only_when_asked(tmp_path):
    sandbox = calc_sandbox(tmp_path)
    assert localize(sandbox, ("tests/test_calc.py::test_clamp_high",), ("src/**",)).mutation is None
    # the search chooser asks for it; a plug-in that says nothing (no describe()) does not
    assert read_description(SearchChooser(0), 5.0, None).mutation_analysis is True

    class Quiet:
        name = "quiet"

    class Vague:  # an attribute is no wish: only describe() is asked
        name, mutation_analysis = "vague", True

    assert read_description(Quiet(), 5.0, None).mutation_analysis is False
    # a model chooser asks when its settings say so
    from repair_agent.choosers.model import ModelChooser
    assert read_description(ModelChooser(base_url="http://127.0.0.1:9/v1", model="m", api_key="k"), 5.0, None).mutation_analysis is False
    assert read_description(ModelChooser(base_url="http://127.0.0.1:9/v1", model="m", api_key="k", mutation_analysis=True),
                         5.0, None).mutation_analysis is True
    assert read_description(Vague(), 5.0, None).mutation_analysis is False


def test_the_search_chooser_tries_a_clean_mutant_first_even_outside_its_catalogue():
    lines = {i + 1: t for i, t in enumerate(CALC.splitlines(keepends=True))}
    base = dict(message="assert 0 == 5", got=0, expected=5, have_values=True, callees=["clamp"],
                assert_lines=["assert clamp(9, 0, 5) == 5"], expected_literals={"5"},
                suspicious={("src/calc.py", 5): 1.0, ("src/calc.py", 4): 0.7, ("src/calc.py", 2): 0.6})
    # (a made-up result: which edit the analysis reports is up to the analysis; this is what the chooser does with it)
    fix = MutantFix(path="src/calc.py", line=2, text="    if x <= lo:", what="< -> <=", fixed=1, of=1, broken=0, checked=2)
    plain = rank_candidates(Failure(**base), {"src/calc.py": lines}, [], "clamp caps at hi", seed=0)
    told = rank_candidates(Failure(**base, mutant_fixes={("src/calc.py", 2): [fix]}), {"src/calc.py": lines}, [],
                           "clamp caps at hi", seed=0)
    assert told[0].line == 2 and told[0].new_lines == ("    if x <= lo:\n",) and told[0].score >= WEIGHTS.rule[Rule.MUTANT_CLEAN_FIX]
    assert [c.new_lines for c in plain].index(("    if x <= lo:\n",)) > 2   # it came far down before
    # an edit no catalogue rule makes becomes a candidate of its own
    odd = MutantFix(path="src/calc.py", line=5, text="        return min(hi, x)", what="x", fixed=1, of=1, broken=0, checked=2)
    told = rank_candidates(Failure(**base, mutant_fixes={("src/calc.py", 5): [odd]}), {"src/calc.py": lines}, [],
                           "clamp caps at hi", seed=0)
    assert (told[0].line, told[0].kind, told[0].new_lines) == (5, "mutant", ("        return min(hi, x)\n",))
    # ... unless it writes the value the failing test expects into the code
    literal = MutantFix(path="src/calc.py", line=5, text="        return 5", what="lo -> 5", fixed=1, of=1, broken=0, checked=2)
    told = rank_candidates(Failure(**base, mutant_fixes={("src/calc.py", 5): [literal]}), {"src/calc.py": lines}, [],
                           "clamp caps at hi", seed=0)
    assert all(c.new_lines != ("        return 5\n",) for c in told)


@pytest.mark.parametrize("broken", [1, None])
def test_a_mutant_that_breaks_passing_tests_or_fixes_part_is_only_a_lead(broken):
    lines = {i + 1: t for i, t in enumerate(CALC.splitlines(keepends=True))}
    # an edit no catalogue rule makes: it becomes a candidate only when it is clean
    fix = MutantFix(path="src/calc.py", line=5, text="        return min(hi, x)", what="x", fixed=1,
                    of=1 if broken else 2, broken=broken, checked=2 if broken else 0)
    told = rank_candidates(Failure(message="assert 0 == 5", suspicious={("src/calc.py", 5): 1.0}, mutant_fixes={("src/calc.py", 5): [fix]}),
                           {"src/calc.py": lines}, [], "clamp", seed=0)
    assert all(c.new_lines != ("        return min(hi, x)\n",) for c in told)
    # a catalogue edit that fixed part of the failing targets, unchecked, gains a little; one that broke a passing test, nothing
    fix = fix.model_copy(update={"text": "        return hi"})
    plain = rank_candidates(Failure(message="assert 0 == 5", suspicious={("src/calc.py", 5): 1.0}), {"src/calc.py": lines}, [], "clamp", seed=0)
    told = rank_candidates(Failure(message="assert 0 == 5", suspicious={("src/calc.py", 5): 1.0}, mutant_fixes={("src/calc.py", 5): [fix]}),
                           {"src/calc.py": lines}, [], "clamp", seed=0)
    gain = next(c.score for c in told if c.new_lines == ("        return hi\n",)) - \
        next(c.score for c in plain if c.new_lines == ("        return hi\n",))
    assert gain == (0.0 if broken else 0.75)


# A method, a cached function and a plain one take a mutant into the live function (the cache
# emptied each time); a lambda, which no `def` holds, by importing the mutated module again.
KINDS = '''\
import functools

LIMIT = 4


class Box:
    def size(self, n):
        return n * 2 + 1


@functools.lru_cache(maxsize=None)
def square(n):
    return n * n + 1


def under_limit(n):
    return n < LIMIT


triple = lambda n: n * 3 + 1  # noqa: E731
'''

KINDS_TESTS = '''\
from calc import Box, square, triple, under_limit


def test_size():
    assert Box().size(3) == 6


def test_square():
    assert square(3) == 9


def test_limit():
    assert under_limit(4)


def test_triple():
    assert triple(2) == 6
'''


def test_methods_cached_functions_and_module_constants_are_all_mutated(tmp_path):
    sandbox = calc_sandbox(tmp_path, KINDS, KINDS_TESTS)
    targets = tuple(f"tests/test_calc.py::test_{t}" for t in ("size", "square", "limit", "triple"))
    m = localize(sandbox, targets, ("src/**",), mutate=True).mutation
    assert m is not None
    fixes = {(f.line, f.text, f.fixed, f.of) for f in m.fixes}
    assert {(8, "        return n * 2", 1, 4), (13, "    return n * n", 1, 4),
            (17, "    return n <= LIMIT", 1, 4), (20, "triple = lambda n: n * 3  # noqa: E731", 1, 4)} <= fixes
    # a constant runs at import, never inside a test: the spectrum does not list it; with no clean fix
    # among the lines it does list, the round of lines that ran at import edits it, its module run again
    assert (3, "LIMIT = 5", 1, 4) in fixes and m.at_import == 1


def test_the_model_prompt_shows_the_clean_fix_first():
    from repair_agent.choosers.model.prompt import render_evidence
    from repair_agent.hints.localization import Localization
    from repair_agent.hints.mutation import MutationAnalysis
    from repair_agent.loop.state import Evidence

    fixes = (MutantFix(path="src/a.py", line=3, text="    return a - b", what="+ -> -", fixed=1, of=1, broken=2, checked=5),
             MutantFix(path="src/a.py", line=7, text="    if x <= 0:", what="< -> <=", fixed=1, of=1, broken=0, checked=5))
    ev = Evidence(id="E1", step=1, tool="run_target_test", action=RunTargetTest(), status="failed", source="x",
                  started_at="t", duration_s=0.1, summary="s", diff_sha256="d", fingerprint="f", result_sha256="r",
                  localization=Localization(failing_tests=1, passing_tests=5,
                                            mutation=MutationAnalysis(fixes=fixes, tried=40, cut=3)))
    text = render_evidence(ev, 0)
    assert "mutation analysis: 40 one-token mutant(s)" in text and "3 not run (limit reached)" in text
    assert text.index("src/a.py:7  < -> <=") < text.index("src/a.py:3  + -> -")   # the clean one first
    assert "(1/1 failing pass, 0/5 passing broke)" in text


def test_a_process_stopped_early_leaves_its_last_snapshot():
    from repair_agent.hints.localization import _mutation_result
    from repair_agent.hints.mutation import MARKER, MutationAnalysis
    snapshot = MutationAnalysis(tried=7, finished=False).model_dump_json()
    whole = MutationAnalysis(tried=9).model_dump_json()
    found, note = _mutation_result(f"spectrum\n{MARKER}{snapshot}\n{MARKER}{whole}\n", False, 120.0)
    assert found is not None and found.tried == 9 and note is None
    found, note = _mutation_result(f"spectrum\n{MARKER}{snapshot}\n{MARKER}{whole[:20]}", False, 120.0)   # cut off
    assert found is not None and found.tried == 7 and "stopped early" in note
    assert _mutation_result("spectrum only\n", True, 120.0) == (None, "the mutation analysis timed out after 120s")


GUARDED = '''\
class DuplicateKey(Exception):
    pass


def index(pairs):
    table = {}
    for key, value in pairs:
        table[key] = value
    return table


def first_word(text) -> str:
    words = text.split()
    return words[0]


def head(items):
    first = items[0]
    return first


def minutes(text):
    hours, mins = text.split(":")
    return int(mins) + int(hours) * 60


def repeat(text, times):
    return text * times
'''

GUARDED_TESTS = '''\
import pytest

from calc import DuplicateKey, first_word, head, index, minutes, repeat


def test_a_key_given_twice_is_refused():
    with pytest.raises(DuplicateKey):
        index([("a", 1), ("a", 2)])


def test_index():
    assert index([("a", 1), ("b", 2)]) == {"a": 1, "b": 2}


def test_no_word():
    assert first_word("   ") == ""


def test_first_word():
    assert first_word("to be") == "to"


def head_error(items):
    with pytest.raises(ValueError):   # an IndexError escapes instead
        head(items)


def test_no_head():
    head_error([])


def test_head():
    assert head([3]) == 3


def test_sixty_minutes_is_no_minute():
    with pytest.raises(ValueError):
        minutes("1:60")


def test_minutes():
    assert minutes("1:30") == 90 and minutes("0:59") == 59


def test_negative_times_are_refused():
    with pytest.raises(ValueError):
        repeat("a", -1)


def test_repeat():
    assert repeat("ab", 2) == "abab" and repeat("a", 0) == ""
'''


@pytest.mark.parametrize("target, guard", [
    ("test_a_key_given_twice_is_refused", "        if key in table:\n            raise DuplicateKey('invalid input')\n"),
    ("test_no_word", "    if not words:\n        return ''\n"),
    ("test_no_head", "    if not items:\n        raise ValueError('invalid input')\n"),
    ("test_sixty_minutes_is_no_minute", "    if int(mins) >= 60:\n        raise ValueError('invalid input')\n"),
    ("test_negative_times_are_refused", "    if times < 0:\n        raise ValueError('invalid input')\n")])
def test_a_missing_guard_is_found_by_the_analysis_and_becomes_a_candidate(tmp_path, target, guard):
    # The attack on a guard is a guard that satisfies the failing test by breaking the others; the
    # analysis checks every guard against the passing tests, so only the one they agree with is clean.
    sandbox = calc_sandbox(tmp_path, GUARDED, GUARDED_TESTS)
    loc = localize(sandbox, (f"tests/test_calc.py::{target}",), ("src/**",), mutate=True)
    m = loc.mutation
    assert m is not None and loc.note is None
    clean = [f for f in m.fixes if f.clean]
    assert [f.text.split("\n")[:2] for f in clean] == [guard.rstrip("\n").split("\n")], [f.what for f in clean]
    assert all(f.family == "guard" for f in clean)
    # the chooser proposes it as it is: the guard's lines, then the line it guards
    f = Failure(mutant_fixes={(clean[0].path, clean[0].line): [clean[0]]})
    lines = {i + 1: t for i, t in enumerate(GUARDED.splitlines(keepends=True))}
    made = mutant_candidates("src/calc.py", lines, f)
    assert len(made) == 1 and "".join(made[0].new_lines) == guard + lines[clean[0].line]
    assert (Rule.MUTANT_CLEAN_FIX, 1.0) in mutation_features(made[0], f)


def test_guards_whose_condition_held_just_where_the_tests_need_it_run_first(tmp_path, monkeypatch):
    # One traced run evaluates every guard's condition at its line before any guard runs: `int(mins) >= 60`
    # holds in the failing test and in no passing one, so with one mutant allowed it is the one run (the
    # first edit of each line would run first otherwise); a guard whose condition never held where the
    # failing test ran its line cannot change it, and is not run at all.
    monkeypatch.setattr(mutation, "MAX_MUTANTS", 1)
    sandbox = calc_sandbox(tmp_path, GUARDED, GUARDED_TESTS)
    m = localize(sandbox, ("tests/test_calc.py::test_sixty_minutes_is_no_minute",), ("src/**",), mutate=True).mutation
    assert m is not None and m.tried == 1 and m.guards_first == 1 and m.guards_dropped > 0 and m.conditions_s > 0
    assert [f.what for f in m.fixes if f.clean] == ["guard `if int(mins) >= 60: raise ValueError('invalid input')`"]


def test_the_condition_trace_records_where_a_condition_held_and_never_consumes_an_iterator():
    import os
    import sys

    from repair_agent.in_sandbox.mutants import ConditionTrace, compile_condition

    def lookup(key, table):
        return key in table

    line = lookup.__code__.co_firstlineno + 1
    here = os.path.realpath(lookup.__code__.co_filename)
    keys = [("f.py", line, cond) for cond in ("key in table", "key > 2", "key.missing", "key not in table")]
    traced = ConditionTrace({here: {line: [(k, *compile_condition(k[2])) for k in keys]}})
    stream = iter([1, 2])
    for test, args in (("t1", (3, [3])), ("t2", (1, [3])), ("t3", (1, stream))):
        traced.test = test
        previous = sys.gettrace()
        sys.settrace(traced.call)
        try:
            lookup(*args)
        finally:
            sys.settrace(previous)
    assert traced.reached[("f.py", line)] == {"t1", "t2", "t3"}
    assert traced.held[keys[0]] == {"t1", "t3"} and traced.held[keys[3]] == {"t2", "t3"}   # an iterator: unknown, so held
    assert list(stream) == [2]                    # consumed by `lookup` alone, not by the trace
    assert traced.held[keys[1]] == {"t1"} and traced.held[keys[2]] == {"t1", "t2", "t3"}   # raising counts as held


def test_a_project_that_imports_from_the_working_tree_itself_is_mutated_in_memory(tmp_path):
    # Installed in development mode, a project's tests import its modules from the working tree, not
    # from the copy the analysis runs in: the live functions are still found (once, not once per
    # mutant: a miss used to rescan every module for each mutant until the time ran out).
    from repair_agent.sandbox import LocalSandbox, create_workspace

    repo = tmp_path / "pristine"
    (repo / "src").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "pyproject.toml").write_text(f'[tool.pytest.ini_options]\npythonpath = ["{tmp_path / "ws" / "src"}"]\n')
    (repo / "src/calc.py").write_text(CALC)
    (repo / "tests/test_calc.py").write_text(CALC_TESTS)
    base = create_workspace(repo, tmp_path / "ws", for_container=False)
    (tmp_path / "out").mkdir()
    sandbox = LocalSandbox(tmp_path / "ws", base, output_dir=tmp_path / "out")
    loc = localize(sandbox, ("tests/test_calc.py::test_clamp_high",), ("src/**",), mutate=True)
    m = loc.mutation
    assert m is not None and m.cut == 0 and m.tried > 10
    assert [(f.line, f.text) for f in m.fixes if f.clean] == [(5, "        return hi")]
    assert (tmp_path / "ws/src/calc.py").read_text() == CALC


def test_guards_before_one_line_count_as_one_clean_fix_when_the_tests_tell_fixes_apart():
    def guard(cond, line=3):
        return MutantFix(path="m.py", line=line, text=f"    if {cond}:\n        return None\n    return xs[0]",
                         what=f"guard `if {cond}: return None`", family="guard", fixed=1, of=1, broken=0, checked=4)
    lines = {1: "def first(xs):\n", 2: "    '''The first of xs, or None.'''\n", 3: "    return xs[0]\n"}
    same_line = [guard("xs is None"), guard("not xs"), guard("len(xs) == 0"), guard("xs == []")]
    f = Failure(mutant_fixes={("m.py", 3): same_line})
    assert len(mutant_candidates("m.py", lines, f)) == 4   # one fix as far as the tests can tell: not crowded
    # four clean edits of different kinds are crowded: the tests do not tell them apart
    other = [MutantFix(path="m.py", line=3, text=f"    return xs[{k}]", what=f"0 -> {k}", family="constant",
                       fixed=1, of=1, broken=0, checked=4) for k in (1, 2, 3)]
    f = Failure(mutant_fixes={("m.py", 3): same_line[:1] + other})
    crowded = mutant_candidates("m.py", lines, f)
    # each is still tried (a guard is no catalogue edit: it would be tried nowhere else), none stands out
    assert len(crowded) == 4
    assert all((Rule.MUTANT_CROWDED_FIX, 1.0) in mutation_features(c, f) for c in crowded)
    assert not any(rule is Rule.MUTANT_CLEAN_FIX for c in crowded for rule, _ in mutation_features(c, f))


def test_the_analysis_says_where_its_time_went_and_compiles_no_mutant_it_will_not_run(tmp_path, monkeypatch):
    sandbox = calc_sandbox(tmp_path / "timed")
    m = localize(sandbox, ("tests/test_calc.py::test_clamp_high",), ("src/**",), mutate=True).mutation
    assert m is not None and m.cut == 0 and m.compile_s > 0 and m.targets_s > 0 and m.check_s > 0
    assert m.collect_s + m.baseline_s + m.compile_s + m.targets_s + m.check_s <= m.duration_s + 0.01
    # no time left: every mutant is counted as not run, and none is compiled (on a large module the
    # compiles of mutants that were never going to run kept the analysis busy long after its time)
    monkeypatch.setattr(mutation, "BUDGET_S", 0.0)
    m = localize(calc_sandbox(tmp_path / "none"), ("tests/test_calc.py::test_clamp_high",), ("src/**",),
                 mutate=True).mutation
    assert m is not None and m.tried == 0 and m.cut > 10 and m.compile_s == 0


# -- the traceback's lines, and the slips between sibling calls ---------------------------------------

# One test alone runs 50 lines before the wrong one: every line ties in the spectrum, and the line a
# key function crashed on comes last in reading order, past the analysis's 40 lines.
LONG_STRETCH = "def keyed(items, key):\n    total = 0\n" + "".join(f"    total += {n}\n" for n in range(50)) + '''\
    out = []
    for item in items:
        out.append(key(items))
    return out


def to_number(text):
    return float(text)
'''

LONG_STRETCH_TESTS = '''\
from calc import keyed, to_number


def test_keyed():
    assert keyed([1, 2], lambda x: -x) == [-1, -2]


def test_number():
    assert to_number("7") == 7


def test_number_text():
    assert str(to_number("7")) == "7"
'''


def test_the_line_a_failing_target_crashed_on_is_mutated_even_past_the_tied_lines(tmp_path):
    sandbox = calc_sandbox(tmp_path / "crash", LONG_STRETCH, LONG_STRETCH_TESTS)
    m = localize(sandbox, ("tests/test_calc.py::test_keyed",), ("src/**",), mutate=True).mutation
    assert m is not None
    crash = LONG_STRETCH.splitlines().index("        out.append(key(items))") + 1
    assert ("src/calc.py", crash) in [(x.path, x.line) for x in m.lines]
    assert len(m.lines) == mutation.MAX_LINES   # the tie is cut: the crash line displaced another
    assert "        out.append(key(item))" in [f.text for f in m.fixes if f.clean]


def test_a_builtin_or_method_call_may_be_the_sibling_a_slip_replaced(tmp_path):
    # `float(text)` where `int(text)` was meant: the generator's slip, undone
    sandbox = calc_sandbox(tmp_path / "slip", LONG_STRETCH, LONG_STRETCH_TESTS)
    m = localize(sandbox, ("tests/test_calc.py::test_number_text",), ("src/**",), mutate=True).mutation
    assert m is not None
    assert [f.text for f in m.fixes if f.clean] == ["    return int(text)"]
    from repair_agent.in_sandbox.operators import line_mutations
    whats = {w for _, w, _ in line_mutations("    m = PATTERN.subn(r'x', fix, text.title())  # float(x)\n")}
    assert {"subn() -> sub()", "title() -> capitalize()"} <= whats
    assert not any("float" in w for w in whats)                   # a comment is not code
    # `min` -> `max` is a name swap and a slip: one edit
    assert [new for _, _, new in line_mutations("    return min(xs)\n")].count("    return max(xs)") == 1
    assert "int() -> float()" not in {w for _, w, _ in line_mutations("    n = obj.int(x)\n")}   # a method named int
    # a method confused with another of its type, beyond the generator's one slip each
    assert "time() -> timetz()" in {w for _, w, _ in line_mutations("        return dt.time()\n")}
    assert "upper() -> capitalize()" in {w for _, w, _ in line_mutations("    add(x.upper())\n")}
    assert not any("timetz" in w for _, w, _ in line_mutations("    t = time(x)\n"))   # a function, not a method


SLOW_TESTS = '''\
import time

from calc import keyed


def test_keyed():
    time.sleep(0.02)
    assert keyed([1, 2], lambda x: -x) == [-1, -2]


def test_keyed_words():
    time.sleep(0.02)
    assert keyed(["a"], str.upper) == ["A"]
'''


def test_short_of_time_a_mutant_stops_at_a_target_that_fails_as_before(tmp_path, monkeypatch):
    # Two slow failing targets and some 300 mutants cannot all run both targets in 4 s: once the pace
    # says so, a mutant whose first target fails as before does not run the second.
    monkeypatch.setattr("repair_agent.hints.mutation.BUDGET_S", 4.0)
    monkeypatch.setattr("repair_agent.hints.mutation.WORKERS", 1)   # two processes run them all in 4 s
    sandbox = calc_sandbox(tmp_path, LONG_STRETCH, SLOW_TESTS)
    targets = ("tests/test_calc.py::test_keyed", "tests/test_calc.py::test_keyed_words")
    m = localize(sandbox, targets, ("src/**",), mutate=True).mutation
    assert m is not None and m.cut > 0 and m.stopped_early > 0
    assert ("        out.append(key(item))", 2, 2) in [(f.text, f.fixed, f.of) for f in m.fixes]
    # with time to spare every target runs on every mutant
    monkeypatch.setattr("repair_agent.hints.mutation.BUDGET_S", 30.0)
    sandbox = calc_sandbox(tmp_path / "quick", LONG_STRETCH, SLOW_TESTS.replace("time.sleep(0.02)", "pass"))
    m = localize(sandbox, targets, ("src/**",), mutate=True).mutation
    assert m is not None and m.cut == 0 and m.stopped_early == 0


def test_an_edit_the_analysis_ran_and_a_target_still_failed_on_is_tried_last(tmp_path):
    from repair_agent.choosers.search import parse_failure
    from repair_agent.in_sandbox.mutants import edit_key

    sandbox = calc_sandbox(tmp_path)
    loc = localize(sandbox, ("tests/test_calc.py::test_clamp_high",), ("src/**",), mutate=True)
    by_line = {ml.line: ml for ml in loc.mutation.lines}
    # `return lo` -> `return x` leaves clamp(9, 0, 5) at 9; `return hi` is the fix, never refuted
    assert edit_key("        return x\n") in by_line[5].refuted
    assert edit_key("        return hi") not in by_line[5].refuted and by_line[5].fixing == 1
    assert len(by_line[5].refuted) == by_line[5].tried - by_line[5].fixing
    ev = target_observation("E       assert 0 == 5\n", loc)
    told = parse_failure(ev, "clamp caps at hi", ("src/**",))
    lines = {i + 1: t for i, t in enumerate(CALC.splitlines(keepends=True))}
    ranked = rank_candidates(told, {"src/calc.py": lines}, [], "clamp caps at hi", seed=0)
    refuted = [edit_key("".join(c.new_lines)) in told.refuted.get((c.path, c.line), ()) for c in ranked]
    # every edit the analysis ran without a fix comes after every edit it did not run (or that fixed)
    assert any(refuted) and refuted == sorted(refuted)
    assert ranked[0].new_lines == ("        return hi\n",)
    # a line where no mutant changed anything tells nothing: its mutants may not have taken effect
    quiet = loc.mutation.model_copy(update={"lines": tuple(ml.model_copy(update={"changed": 0}) for ml in loc.mutation.lines)})
    assert parse_failure(ev.model_copy(update={"localization": loc.model_copy(update={"mutation": quiet})}),
                         "clamp caps at hi", ("src/**",)).refuted == {}


def test_the_chooser_reads_the_clean_fix_by_the_crash_before_those_far_from_it():
    # guards of a guessed condition may be clean far from the fault; the line the test crashed on
    # (an IndexError under the missing check) is where the fault showed
    from repair_agent.choosers.search.reads import clean_fix_lines

    def clean(line: int) -> list[MutantFix]:
        return [MutantFix(path="v.py", line=line, text="x", what="guard", fixed=1, of=1, broken=0, checked=1)]
    f = Failure(frames=[("v.py", 362)], suspicious={("v.py", 105): 0.9, ("v.py", 308): 0.9, ("v.py", 361): 0.5},
                mutant_fixes={("v.py", n): clean(n) for n in (105, 308, 316, 361)})
    assert clean_fix_lines(f) == [("v.py", 361), ("v.py", 105), ("v.py", 308), ("v.py", 316)]
    # a fix that broke passing tests is no read
    f.mutant_fixes[("v.py", 400)] = [MutantFix(path="v.py", line=400, text="x", what="y", fixed=1, of=1, broken=2, checked=3)]
    assert ("v.py", 400) not in clean_fix_lines(f)


def test_a_form_feed_in_the_module_does_not_shift_the_lines_the_analysis_edits(tmp_path):
    # str.splitlines also splits on \x0c (a page break, common between sections of older modules):
    # every line after one would be taken for the line above it, and every edit of it be garbled
    src = "def first(x):\n    return x\n\x0c\n\ndef at_least(a, b):\n    return a > b\n"
    tests = "from calc import at_least\n\n\ndef test_equal():\n    assert at_least(2, 2)\n"
    m = localize(calc_sandbox(tmp_path, src, tests), ("tests/test_calc.py::test_equal",), ("src/**",), mutate=True).mutation
    assert m is not None
    assert "    return a >= b" in [f.text for f in m.fixes if f.fixed]


FAILURES = '''\
import pytest


def deep(n, x):
    if n == 0:
        raise ValueError("out of range: %d" % x)
    return deep(n - 1, x) + 1


def test_assert():
    assert [1, 2, {"a": 3}] == [1, 2, {"a": 4}]


def test_raises():
    with pytest.raises(KeyError, match="x"):
        pass


def test_chain():
    try:
        deep(20, 5)
    except ValueError as e:
        raise RuntimeError("wrapped") from e


@pytest.mark.parametrize("x", [1])
def test_param(x):
    assert deep(0, x) == x, "custom message"


def test_explicit():
    pytest.fail("explicit")
'''

STYLES = '''\
import json, sys
import pytest
from repair_agent.in_sandbox.mutants import _failure

got = {}


class Grab:
    def pytest_runtest_logreport(self, report):
        if report.failed:
            got[report.nodeid] = _failure(report.longrepr)


pytest.main(["-q", "-p", "no:cacheprovider", "--tb=" + sys.argv[1], sys.argv[2]], plugins=[Grab()])
print(json.dumps(got))
'''


def test_the_mutants_traceback_style_keeps_every_failure_message(tmp_path):
    # the analysis runs its session with --tb=line (cheaper on deep stacks); what it keeps of a failure,
    # the crash message, must read as under pytest's default style
    (tmp_path / "test_failures.py").write_text(FAILURES)
    (tmp_path / "styles.py").write_text(STYLES)
    root = Path(__file__).resolve().parents[1]

    def messages(style: str) -> dict:
        proc = subprocess.run([sys.executable, str(tmp_path / "styles.py"), style, str(tmp_path / "test_failures.py")],
                              capture_output=True, text=True, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(root)})
        return json.loads(proc.stdout.strip().splitlines()[-1])

    line, auto = messages("line"), messages("auto")
    assert len(line) == 5 and line == auto
    assert any("out of range" not in m and "wrapped" in m for m in line.values())


# Every test that splits on a pipe runs `escaped`, so the spectrum ties its line with the others the
# failing test runs, and the line order puts it last: with two lines a round it is not among the chosen.
SPLIT = '''\
def split(text):
    cells, start = [], 0
    for pos, ch in enumerate(text):
        if ch == "|" and not escaped(text, pos):
            cells.append(text[start:pos])
            start = pos + 1
    cells.append(text[start:])
    return [c.replace("\\\\|", "|") for c in cells]


def escaped(text, pos):
    return pos > 0 and text[pos] == "\\\\"
'''

SPLIT_TESTS = '''\
from calc import split


def test_escaped():
    assert split("a\\\\|b|c") == ["a|b", "c"]


def test_plain():
    assert split("a|b") == ["a", "b"]


def test_three():
    assert split("a|b|c") == ["a", "b", "c"]
'''


def test_with_no_clean_fix_among_the_chosen_lines_the_analysis_goes_on_down_the_ranking(tmp_path, monkeypatch):
    monkeypatch.setattr(mutation, "MAX_LINES", 2)
    runs = {}
    for rounds in (0, 3):
        monkeypatch.setattr(mutation, "WIDER_ROUNDS", rounds)
        sandbox = calc_sandbox(tmp_path / str(rounds), SPLIT, SPLIT_TESTS)
        loc = localize(sandbox, ("tests/test_calc.py::test_escaped",), ("src/**",), mutate=True)
        assert loc.mutation is not None and len(loc.lines) == 8
        runs[rounds] = loc.mutation
    # the two best-ranked lines alone: no mutant of them fixes the target
    assert runs[0].wider == 0 and {ml.line for ml in runs[0].lines} == {2, 3}
    assert not any(f.clean for f in runs[0].fixes)
    # a round of the next two lines finds the call that reads the pipe instead of the character before it
    # (its fix is reported and checked like any other), and the rounds stop there with lines still unrun
    wide = runs[3]
    assert wide.wider == 1 and {2, 3, 4, 5} <= {ml.line for ml in wide.lines} and 12 not in {ml.line for ml in wide.lines}
    assert [(f.line, f.text.strip(), f.checked) for f in wide.fixes if f.clean] == [
        (4, 'if ch == "|" and not escaped(text, pos - 1):', 2)]
    assert wide.queued == wide.tried + wide.cut + wide.not_compiling and wide.errors == 0
