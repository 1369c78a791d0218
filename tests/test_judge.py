"""The verdict as a pure function: constructed record streams, JUnit cases, held-out results and
host facts, no container. Each forged or inconsistent channel must turn the verdict red."""
from __future__ import annotations

import json

import pytest

from verifier.heldout import HeldoutCase, HeldoutSpec, judge_heldout, parse_probe_output, same
from verifier.judge import GUARD_MARKER, Baseline, GuardRecords, ProcessFacts, judge
from verifier.junit import TestCase, parse_junit_bytes

T = "tests.test_a::test_target"
P = "tests.test_a::test_other"
BASELINE = Baseline(all_tests=[T, P], target_keys=[T], pass_to_pass=[P], known_failing=[],
                    target_failures={T: "assert 1 == 2"})
ROOT = "/workspace"


def stream(*records: dict, pid: int = 7) -> GuardRecords:
    lines = []
    for seq, rec in enumerate(records, 1):
        lines.append(GUARD_MARKER + json.dumps({"seq": seq, "pid": pid, **rec}))
    return GuardRecords.parse("\n".join(lines))


def honest(*extra: dict) -> GuardRecords:
    return stream({"kind": "start", "cwd": ROOT}, {"kind": "collected", "rootdir": ROOT},
                  {"kind": "call", "nodeid": "tests/test_a.py::test_target", "raised": None},
                  {"kind": "call", "nodeid": "tests/test_a.py::test_other", "raised": None},
                  *extra, {"kind": "finished", "exitstatus": 0}, {"kind": "exit", "code": 0})


PASSED = [TestCase(key=T, outcome="passed"), TestCase(key=P, outcome="passed")]
FACTS = ProcessFacts(exit_code=0, root=ROOT)


def test_honest_run_is_green():
    j = judge("full_suite", BASELINE, PASSED, None, honest(), FACTS, None)
    assert j.ok and j.targets_ok and j.correctness == "unchecked", j.problems


@pytest.mark.parametrize("guard, expect", [
    (honest({"kind": "refused", "event": "os.fork", "origin": "/workspace/src/x.py", "why": "no"}), "refused os.fork"),
    (honest({"kind": "integrity", "change": "class _pytest.python.Function: runtest"}), "altered"),
    (honest({"kind": "value_type", "detail": "F overrides ['__eq__']"}), "value types"),
    (stream({"kind": "start", "cwd": "/tmp/clean"}, {"kind": "collected", "rootdir": ROOT},
            {"kind": "call", "nodeid": "tests/test_a.py::test_target", "raised": None},
            {"kind": "call", "nodeid": "tests/test_a.py::test_other", "raised": None},
            {"kind": "finished"}, {"kind": "exit", "code": 0}), "not in the candidate tree"),
    (stream({"kind": "start", "cwd": ROOT}, {"kind": "finished"}), "did not end through"),
    (GuardRecords.parse("\n".join(GUARD_MARKER + json.dumps(r) for r in honest().records[:3]) + "\n"
                        + GUARD_MARKER + json.dumps({"kind": "call", "nodeid": "tests/test_a.py::test_target",
                                                     "raised": None, "seq": 3, "pid": 7}) + "\n"
                        + "\n".join(GUARD_MARKER + json.dumps(r) for r in honest().records[3:])), "forged"),
    (GuardRecords(records=honest().records + [{"kind": "start", "cwd": ROOT, "seq": 8, "pid": 99}]), "processes"),
], ids=["refusal", "integrity", "lying-type", "re-executed-elsewhere", "os-exit", "forged-line", "second-process"])
def test_any_doubt_in_the_stream_is_red(guard, expect):
    j = judge("full_suite", BASELINE, PASSED, None, guard, FACTS, None)
    assert not j.ok and not j.targets_ok
    assert any(expect in p for p in j.problems), j.problems


def test_reported_passed_but_the_function_raised_is_red():
    guard = stream({"kind": "start", "cwd": ROOT}, {"kind": "collected", "rootdir": ROOT},
                   {"kind": "call", "nodeid": "tests/test_a.py::test_target", "raised": "AssertionError"},
                   {"kind": "call", "nodeid": "tests/test_a.py::test_other", "raised": None},
                   {"kind": "finished"}, {"kind": "exit", "code": 0})
    j = judge("full_suite", BASELINE, PASSED, None, guard, FACTS, None)
    assert not j.targets_ok and any("report rewriting" in p for p in j.problems)


@pytest.mark.parametrize("facts, expect", [
    (ProcessFacts(exit_code=1, root=ROOT), "exit code the host saw"),
    (ProcessFacts(exit_code=0, root=ROOT, leftover_processes=["python3 -c spin"]), "outlived"),
    (ProcessFacts(exit_code=0, root=ROOT, result_problem="result file junit.xml refused: a symlink"), "symlink"),
], ids=["exit-code", "leftover", "symlink"])
def test_host_facts_decide_too(facts, expect):
    j = judge("full_suite", BASELINE, PASSED, None, honest(), facts, None)
    assert not j.ok and any(expect in p for p in j.problems), j.problems


SPEC = HeldoutSpec(setup="", case=(HeldoutCase(name="a", expr="f(1)", expect=90.0),
                                    HeldoutCase(name="b", expr="f(2)", raises="ValueError")))


def test_held_out_checks_make_a_green_suite_plausible_only():
    bad = judge_heldout(SPEC, {"results": [{"name": "a", "value": {"__unjudgeable__": "x.F"}},
                                           {"name": "b", "raised": ["builtins.ValueError"]}]}, None)
    j = judge("full_suite", BASELINE, PASSED, None, honest(), FACTS, bad)
    assert not j.ok and not j.targets_ok and j.correctness == "plausible"
    good = judge_heldout(SPEC, {"results": [{"name": "a", "value": 90},
                                            {"name": "b", "raised": ["m.E", "builtins.ValueError"]}]}, None)
    assert good.ok and judge("full_suite", BASELINE, PASSED, None, honest(), FACTS, good).correctness == "correct"


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
