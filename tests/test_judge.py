"""The verdict as a pure function: JUnit cases, canaries, the probe's answers in each environment
and host facts, no container. Each forged or inconsistent channel must turn the verdict red, and
held-out checks and generated inputs decide `correct`, never the conditions."""
from __future__ import annotations

import pytest

from verifier import canary
from verifier.behaviour import EnvironmentRun, environment_problems, judge_behaviour, stable_cases
from verifier.generated import GeneratedCase
from verifier.heldout import HeldoutCase, HeldoutSpec, judge_heldout, parse_probe_output, same
from verifier.judge import Baseline, ProcessFacts, judge
from verifier.junit import TestCase, parse_junit_bytes

T = "tests.test_a::test_target"
P = "tests.test_a::test_other"
BASELINE = Baseline(all_tests=[T, P], target_keys=[T], pass_to_pass=[P], known_failing=[],
                    target_failures={T: "assert 1 == 2"})
ROOT = "/home/dev/project"
PASSED = [TestCase(key=T, outcome="passed"), TestCase(key=P, outcome="passed")]
FACTS = ProcessFacts(exit_code=0, root=ROOT)


def test_honest_run_is_green():
    j = judge("full_suite", BASELINE, PASSED, None, FACTS)
    assert j.ok and j.targets_ok and j.visible_ok, j.problems


@pytest.mark.parametrize("facts, expect", [
    (ProcessFacts(exit_code=1, root=ROOT), "pytest exit code 1, but its report says no test failed"),
    (ProcessFacts(exit_code=0, root=ROOT, leftover_processes=["python3 -c spin"]), "outlived"),
    (ProcessFacts(exit_code=0, root=ROOT, result_problem="result file junit.xml refused: a symlink"), "symlink"),
    (ProcessFacts(exit_code=None, root=ROOT, timed_out=True), "timed out"),
], ids=["exit-code", "leftover", "symlink", "timeout"])
def test_host_facts_decide_too(facts, expect):
    j = judge("full_suite", BASELINE, PASSED, None, facts)
    assert not j.ok and any(expect in p for p in j.problems), j.problems


def test_a_pristine_suite_that_leaves_processes_is_not_held_against_the_candidate():
    leaves = BASELINE.model_copy(update={"leaves_processes": True})
    facts = ProcessFacts(exit_code=0, root=ROOT, leftover_processes=["sleep 100"])
    assert judge("full_suite", leaves, PASSED, None, facts).ok


def test_exit_code_must_agree_with_the_canaries_failures():
    # Canaries that must fail make pytest exit 1; a process exiting 0 with them reported failed lied.
    assert judge("full_suite", BASELINE, PASSED, None, ProcessFacts(exit_code=1, root=ROOT), canary_failures=2).ok
    j = judge("full_suite", BASELINE, PASSED, None, ProcessFacts(exit_code=0, root=ROOT), canary_failures=2)
    assert not j.ok and any("some tests failed" in p for p in j.problems)


def test_integrity_problems_fail_every_condition_even_with_green_tests():
    j = judge("target_test", BASELINE, PASSED, None, FACTS, integrity=["a canary test that must fail was reported passed"])
    assert not j.ok and not j.targets_ok and j.visible_ok


def _canary_cases(canaries, outcome_of):
    return [TestCase(key=c.key, outcome=outcome_of(c), message=f"AssertionError: {c.token}") for c in canaries]


def test_canaries_must_come_out_as_planned():
    canaries = canary.plan("tests/test_a.py")
    assert {c.must for c in canaries} == {"pass", "fail"} and len({c.name for c in canaries}) == len(canaries)
    honest = _canary_cases(canaries, lambda c: "failed" if c.must == "fail" else "passed")
    rest, problems = canary.judge(canaries, PASSED + honest)
    assert rest == PASSED and problems == []
    everything_passes = _canary_cases(canaries, lambda c: "passed")
    assert any("must fail was reported passed" in p for p in canary.judge(canaries, PASSED + everything_passes)[1])
    assert any("was not reported" in p for p in canary.judge(canaries, PASSED)[1])
    # A failure without the canary's own token is not its failure (a forged report of some failure).
    forged = [TestCase(key=c.key, outcome="failed" if c.must == "fail" else "passed", message="AssertionError")
              for c in canaries]
    assert any("must fail" in p for p in canary.judge(canaries, forged)[1])


def test_canaries_are_never_the_same_twice():
    names = {c.name for _ in range(50) for c in canary.plan("tests/test_a.py")}
    tokens = {c.token for _ in range(50) for c in canary.plan("tests/test_a.py")}
    assert len(names) > 100 and len(tokens) > 100


def _run(name, rows, describe="another place"):
    return EnvironmentRun(name=name, describe=describe, rows=rows)


def test_an_answer_that_changes_with_the_environment_is_an_integrity_problem():
    v = lambda x: {"value": x}  # noqa: E731
    pristine = [_run("check", {"a": v(1), "b": v(2), "c": {"timed_out": True}}), _run("moved", {"a": v(1), "b": v(3)})]
    comparable = stable_cases(pristine)
    assert comparable == {"a"}  # b differs on the pristine tree itself; c timed out
    same_everywhere = [_run("check", {"a": v(5), "b": v(1)}), _run("moved", {"a": v(5.0), "b": v(9)})]
    assert environment_problems(same_everywhere, comparable) == []
    time_bomb = [_run("check", {"a": v(5)}), _run("moved", {"a": v(4)}, "the clock +20 years")]
    problems = environment_problems(time_bomb, comparable)
    assert len(problems) == 1 and "the clock +20 years" in problems[0] and "'a'" not in problems[0]
    gone = [_run("check", {"a": v(5)}), EnvironmentRun(name="moved", describe="x", rows=None, problem="exit 1")]
    assert "gave no answer" in environment_problems(gone, comparable)[0]


SPEC = HeldoutSpec(setup="", case=(HeldoutCase(name="a", expr="f(1)", expect=90.0),
                                    HeldoutCase(name="b", expr="f(2)", raises="ValueError")))


def test_held_out_checks_and_generated_inputs_decide_correct_not_the_conditions():
    bad = [_run("check", {"a": {"value": {"__unjudgeable__": "x.F"}}, "b": {"raised": ["builtins.ValueError"]}})]
    behaviour = judge_behaviour(SPEC, bad, set(), None, [])
    assert behaviour.correctness(True) == "plausible" and behaviour.correctness(False) is None
    good = [_run("check", {"a": {"value": 90}, "b": {"raised": ["m.E", "builtins.ValueError"]}})]
    assert judge_behaviour(SPEC, good, set(), None, []).correctness(True) == "correct"
    reference = {"gen:a:0": {"name": "gen:a:0", "value": 1}}
    cases = [GeneratedCase(name="gen:a:0", setup="", expr="f(3)", source="a")]
    wrong = [_run("check", {"a": {"value": 90}, "b": {"raised": ["builtins.ValueError"]}, "gen:a:0": {"value": 2}})]
    judged = judge_behaviour(SPEC, wrong, set(), reference, cases)
    assert judged.correctness(True) == "plausible" and "f(3)" in judged.generated.summary
    assert judge_heldout(SPEC, {"results": good[0].rows and list(
        {"name": n, **r} for n, r in good[0].rows.items())}, None).ok


def test_held_out_judge_refuses_duplicates_unknowns_and_missing_output():
    dup = judge_heldout(SPEC, {"results": [{"name": "a", "value": 90.0}, {"name": "a", "value": 90.0},
                                           {"name": "b", "raised": ["builtins.ValueError"]}]}, None)
    assert not dup.ok and "twice" in dup.problem
    unknown = judge_heldout(SPEC, {"results": [{"name": "a", "value": 90.0}, {"name": "b", "raised": ["ValueError"]},
                                               {"name": "zzz", "value": 1}]}, None)
    assert not unknown.ok
    data, problem = parse_probe_output("\x1eRA-PROBE {\"results\": []}\n\x1eRA-PROBE {\"results\": []}\n")
    assert data is None and "found 2" in problem


@pytest.mark.parametrize("expected, got, equal", [
    (90, 90.0, True), (0.1 + 0.2, 0.3, True), (True, 1, False), (1, True, False), ([1, 2], {"__tuple__": [1, 2]}, True),
    ("90", 90, False), ({"__dict__": {"a": 1}}, {"__dict__": {"a": 1}}, True), (90.0, {"__unjudgeable__": "F"}, False),
])
def test_plain_data_equality(expected, got, equal):
    assert same(expected, got) is equal


def test_junit_with_an_entity_bomb_is_refused():
    bomb = (b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;">]>'
            b'<testsuites><testcase classname="x" name="&b;"/></testsuites>')
    cases, problem = parse_junit_bytes(bomb)
    assert cases == [] and "does not parse" in problem


def test_the_chooser_reads_pytest_output_without_the_canaries():
    canaries = canary.plan("tests/test_a.py")
    fail = next(c for c in canaries if c.must == "fail")
    text = "\n".join([
        "FF.", "=================================== FAILURES ===================================",
        "___________________________ test_target ___________________________", "    assert 1 == 2",
        f"___________________________ {fail.name} ___________________________",
        f"E       AssertionError: {fail.token}", "tests/test_a.py:48: AssertionError",
        "=========================== short test summary info ============================",
        "FAILED tests/test_a.py::test_target - assert 1 == 2",
        f"FAILED tests/test_a.py::{fail.name} - AssertionError: {fail.token}",
        f"{1 + sum(c.must == 'fail' for c in canaries)} failed, {5 + sum(c.must == 'pass' for c in canaries)} passed in 0.12s"])
    shown = canary.scrub(text, canaries)
    assert all(c.name not in shown and c.token not in shown for c in canaries)
    assert "test_target" in shown and "assert 1 == 2" in shown and shown.endswith("1 failed, 5 passed in 0.12s")
