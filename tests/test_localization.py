"""Spectrum-based localization: real pytest on a real small repository, in the local sandbox."""
from __future__ import annotations

import subprocess

import pytest

from repair_agent.loop.actions import RunTargetTest
from repair_agent.hints.localization import Localization, localize, ochiai
from repair_agent.sandbox import LocalSandbox

from helpers import calc_sandbox

@pytest.fixture
def sandbox(tmp_path) -> LocalSandbox:
    return calc_sandbox(tmp_path)


def test_the_buggy_line_ranks_first_and_the_tree_stays_clean(sandbox):
    loc = localize(sandbox, ("tests/test_calc.py::test_clamp_high",), ("src/**",))
    # the two mean() tests fail too, but they are not targets: counted on neither side
    assert loc.note is None and loc.failing_tests == 1 and loc.passing_tests == 3
    # `return lo` only the failing test runs; `if x > hi` one passing test runs too; `if x < lo` two
    assert [(s.path, s.line, s.score, s.failed, s.passed) for s in loc.lines] == [
        ("src/calc.py", 5, 1.0, 1, 0), ("src/calc.py", 4, 0.7071, 1, 1), ("src/calc.py", 2, 0.5774, 1, 2)]
    # nothing the traced run did reaches the agent's working tree (no cache, no bytecode, no file)
    status = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=sandbox.workspace,
                            capture_output=True, text=True, check=True).stdout
    assert status == ""
    assert "src/calc.py:5  score 1.00" in loc.render()


def test_no_failing_target_is_said_as_such(sandbox):
    loc = localize(sandbox, ("tests/test_calc.py::test_span",), ("src/**",))
    assert loc.lines == () and loc.note == "no target test failed in the traced run" and loc.passing_tests == 3


def test_a_broken_interpreter_is_a_note_not_an_error(sandbox, monkeypatch):
    monkeypatch.setattr(sandbox, "python", "/nonexistent/python")
    loc = localize(sandbox, ("tests/test_calc.py::test_clamp_high",), ("src/**",))
    assert loc.lines == () and loc.note


def test_ochiai_prefers_lines_only_failing_tests_run():
    spectra = {"f": [("src/a.py", 1), ("src/a.py", 2), ("src/a.py", 3)],
               "p1": [("src/a.py", 1), ("src/a.py", 2)], "p2": [("src/a.py", 1)], "q": [("src/a.py", 3)]}
    outcomes = {"f": "failed", "p1": "passed", "p2": "passed", "q": "failed"}
    lines, nf, np_ = ochiai(spectra, outcomes, {"f"}, ("src/**",))
    assert (nf, np_) == (1, 2)   # q failed but is not a target: counted on neither side
    assert [(s.line, s.score) for s in lines] == [(3, 1.0), (2, round(1 / 2 ** 0.5, 4)), (1, round(1 / 3 ** 0.5, 4))]
    assert ochiai(spectra, outcomes, {"f"}, ("lib/**",))[0] == []   # outside the writable scope: never listed


def test_the_model_prompt_shows_the_localization():
    from repair_agent.choosers.model.prompt import render_evidence
    from repair_agent.hints.localization import SuspiciousLine
    from repair_agent.loop.state import Evidence

    ev = Evidence(id="E1", step=1, tool="run_target_test", action=RunTargetTest(), status="failed", source="x",
                  started_at="t", duration_s=0.1, summary="s", diff_sha256="d", fingerprint="f", result_sha256="r",
                  localization=Localization(failing_tests=1, passing_tests=3,
                                            lines=(SuspiciousLine(path="src/a.py", line=7, score=0.9,
                                                                  failed=1, passed=0),)))
    assert "src/a.py:7  score 0.90" in render_evidence(ev, 0)


def test_other_tests_are_capped_at_a_fixed_number_and_the_target_always_runs(sandbox, monkeypatch):
    monkeypatch.setattr("repair_agent.hints.localization.MAX_OTHER_TESTS", 2)
    loc = localize(sandbox, ("tests/test_calc.py::test_clamp_high",), ("src/**",))
    # 5 other tests, 2 kept (evenly spread: test_clamp_low and test_span), the target first; without
    # test_clamp_mid nothing tells `if x > hi` from `return lo` any more
    assert loc.failing_tests == 1 and loc.passing_tests == 2 and loc.note is None
    assert {s.line for s in loc.lines if s.score == 1.0} == {4, 5}


def _split_target_file(sandbox) -> None:
    """test_clamp_high alone in its own file, committed as the pristine tree."""
    ws = sandbox.workspace
    text = (ws / "tests/test_calc.py").read_text()
    high = "\n\ndef test_clamp_high():\n    assert clamp(9, 0, 5) == 5\n"
    (ws / "tests/test_calc.py").write_text(text.replace(high, "\n"))
    (ws / "tests/test_high.py").write_text("from calc import clamp\n" + high)


def test_a_target_file_without_other_tests_borrows_passing_tests_from_the_rest_of_the_suite(sandbox):
    _split_target_file(sandbox)
    loc = localize(sandbox, ("tests/test_high.py::test_clamp_high",), ("src/**",))
    # the other file's clamp and span tests pass (the mean tests fail and count on neither side);
    # without them every line test_clamp_high runs would score 1.0
    assert loc.note is None and loc.failing_tests == 1 and loc.passing_tests == 3
    assert [(s.line, s.score) for s in loc.lines][:2] == [(5, 1.0), (4, 0.7071)]


def test_a_suite_that_names_its_tests_lends_only_those(sandbox):
    _split_target_file(sandbox)
    loc = localize(sandbox, ("tests/test_high.py::test_clamp_high",), ("src/**",),
                   suite=("tests/test_calc.py::test_clamp_low",))
    assert loc.failing_tests == 1 and loc.passing_tests == 1
    assert {s.line for s in loc.lines if s.score == 1.0} == {4, 5}   # clamp_low never reaches `if x > hi`


def test_a_target_file_with_enough_other_tests_borrows_nothing(sandbox):
    (sandbox.workspace / "tests/test_extra.py").write_text(
        "from calc import clamp\n\n\ndef test_clamp_top():\n    assert clamp(5, 0, 5) == 5\n")
    loc = localize(sandbox, ("tests/test_calc.py::test_clamp_high",), ("src/**",))
    assert loc.passing_tests == 3   # test_calc.py's own five others (two of them failing) only
