"""The acceptance spec's pass-to-pass list: with one, the suite condition is "these tests pass" and
only the targets and the listed tests run; without one, the whole suite decides, as before.

The baseline and the verdict are pure functions of JUnit cases (fast tests); one Docker test runs
the real verifier on a repository whose unlisted test fails on every tree.
"""
from __future__ import annotations

import difflib
from pathlib import Path

import pytest

from verifier import Verifier
from verifier.judge import BaselineError, ProcessFacts, judge, make_baseline
from verifier.junit import TestCase
from verifier.spec import AcceptanceSpec

T = "tests.test_a::test_target"
P = "tests.test_a::test_listed"
S = "tests.test_a::test_listed_skips_here"
U = "tests.test_a::test_unlisted"
FACTS = ProcessFacts(exit_code=0, root="/workspace")


def case(key: str, outcome: str = "passed", message: str = "") -> TestCase:
    return TestCase(key=key, outcome=outcome, message=message)


PRISTINE = [case(T, "failed", "assert 1 == 2"), case(P), case(S, "skipped", "no device")]


def test_listed_baseline_holds_the_targets_and_the_list_only():
    b = make_baseline(PRISTINE, [T], [P, S])
    assert b.listed and b.all_tests == sorted([T, P, S])
    assert b.pass_to_pass == [P] and b.known_skipped == [S] and b.known_failing == []
    assert b.target_failures == {T: "assert 1 == 2"}


@pytest.mark.parametrize("cases, listed, message", [
    ([case(T, "failed"), case(P, "failed", "boom")], [P], "pass-to-pass tests fail on the pristine repository"),
    ([case(T, "failed"), case(P, "error", "fixture")], [P], "pass-to-pass tests fail on the pristine repository"),
    ([case(T, "failed")], [P], "pass-to-pass tests not collected on the pristine repository"),
    ([case(T), case(P)], [P], "target tests already pass"),
    ([case(T, "skipped"), case(P)], [P], "target tests are skipped"),
    ([case(P)], [P], "target tests not collected"),
], ids=["listed-fails", "listed-errors", "listed-missing", "target-passes", "target-skips", "target-missing"])
def test_a_baseline_that_contradicts_the_spec_is_refused(cases, listed, message):
    with pytest.raises(BaselineError, match=message):
        make_baseline(cases, [T], listed)


def test_whole_suite_baseline_keeps_failing_tests_as_known_failing():
    b = make_baseline([*PRISTINE, case(U, "failed", "env")], [T], None)
    assert not b.listed and b.known_failing == [U] and U in b.all_tests


def test_listed_suite_green_when_the_targets_and_the_list_pass():
    b = make_baseline(PRISTINE, [T], [P, S])
    j = judge("full_suite", b, [case(T), case(P), case(S, "skipped")], None, FACTS)
    assert j.ok and j.targets_ok, j.problems
    # A test skipped on the pristine tree may also pass now.
    assert judge("full_suite", b, [case(T), case(P), case(S)], None, FACTS).ok


@pytest.mark.parametrize("cases, expect", [
    ([case(T), case(P, "skipped"), case(S, "skipped")], "not passing"),       # newly skipped
    ([case(T), case(P, "failed", "x"), case(S, "skipped")], "not passing"),   # regression
    ([case(T), case(P), case(S, "failed", "x")], "skipped on the pristine tree"),  # skipped, now fails
    ([case(T), case(S, "skipped")], "not reported"),                          # a listed test missing
    ([case(T), case(P), case(S, "skipped"), case(U)], "unknown test"),        # more ran than was selected
], ids=["newly-skipped", "regression", "skip-then-fail", "missing", "unselected"])
def test_listed_suite_red(cases, expect):
    b = make_baseline(PRISTINE, [T], [P, S])
    j = judge("full_suite", b, cases, None, FACTS)
    assert not j.ok and any(expect in p for p in j.problems), j.problems


def test_the_spec_selects_targets_then_the_list_without_duplicates():
    spec = AcceptanceSpec(scenario="x", target_tests=("tests/test_a.py::test_target",),
                          pass_to_pass=("tests/test_a.py::test_listed", "tests/test_a.py::test_target"))
    assert spec.suite_selection == ("tests/test_a.py::test_target", "tests/test_a.py::test_listed")
    assert AcceptanceSpec(scenario="x", target_tests=("tests/test_a.py::test_target",)).suite_selection == ()


# -- the real verifier, in Docker -------------------------------------------------------------

LIB = "def inc(x):\n    return x + 2\n\n\ndef dec(x):\n    return x - 1\n"
TESTS = '''\
import os

from lib import dec, inc


def test_inc():
    assert inc(1) == 2


def test_dec():
    assert dec(3) == 2


def test_needs_the_network():
    assert os.environ.get("SOME_SERVICE_URL"), "no service here"
'''


def _diff(new: str) -> str:
    return "".join(difflib.unified_diff(LIB.splitlines(True), new.splitlines(True), "a/src/lib.py", "b/src/lib.py"))


@pytest.mark.docker
def test_listed_suite_in_docker_ignores_unlisted_failures_and_catches_listed_ones(docker_client, sandbox_image,
                                                                                  tmp_path: Path):
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "src/lib.py").write_text(LIB)
    (repo / "tests/test_lib.py").write_text(TESTS)
    (repo / "pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["src"]\n')
    spec = AcceptanceSpec(scenario="p2p", target_tests=("tests/test_lib.py::test_inc",),
                          pass_to_pass=("tests/test_lib.py::test_dec",))
    fix = _diff(LIB.replace("x + 2", "x + 1"))
    breaks_dec = _diff(LIB.replace("x + 2", "x + 1").replace("x - 1", "x - 2"))
    with Verifier(spec, repo, tmp_path / "state", backend="docker", client=docker_client, image=sandbox_image,
                  pool_size=0) as v:
        b = v.prepare()
        # Only the targets and the list ran: the environment-dependent failure is not in the baseline.
        assert b.listed and b.all_tests == ["tests.test_lib::test_dec", "tests.test_lib::test_inc"]
        good = v.run_tests(fix, "full_suite")
        assert good.ok and good.collected == 2 and good.passed == 2, good.problems
        bad = v.run_tests(breaks_dec, "full_suite")
        assert not bad.ok and "tests.test_lib::test_dec" in bad.failing
        # The unlisted test fails on every tree here (it needs a service): under the whole-suite rule
        # it would be a known failure; under the list it is not run at all.
        assert "tests.test_lib::test_needs_the_network" not in {*good.failing, *bad.failing}
