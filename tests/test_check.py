"""`repair-agent check` and the corpus check's rules, on small scenarios written for them.

The skip rule, the same in the verifier, the corpus check and the condition text: a test skipped
on the pristine (buggy) tree for its environment may stay skipped; a test that passed there and
skips now fails, like any test that stops passing; a target must fail on the buggy tree, not skip.
Everything runs the real verifier (local backend: plain subprocesses, no containers) on real
pytest, through the same `check_corpus` the command calls.
"""
from __future__ import annotations

import difflib
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from repair_agent.scenarios.corpus import check_corpus
from repair_agent.scenarios.scenario import load_manifest

ROOT = Path(__file__).resolve().parents[1]

CALC = '''\
FEATURE = "on"


def add(a, b):
    return a - b


def sub(a, b):
    return a - b
'''
TESTS = '''\
import pytest

from pkg import calc


def test_add():
    assert calc.add(2, 3) == 5


def test_sub():
    assert calc.sub(5, 3) == 2


@pytest.mark.skipif(True, reason="needs a device this environment lacks")
def test_needs_a_device():
    assert False


def test_feature():
    if not calc.FEATURE:
        pytest.skip("the feature is off")
    assert calc.FEATURE == "on"


def test_add_when_it_works():
    if calc.add(1, 1) != 2:
        pytest.skip("add does not work here")
    assert calc.add(2, 2) == 4
'''


def _fix(*edits: tuple[str, str]) -> str:
    old_lines = CALC.splitlines(keepends=True)
    new = CALC
    for a, b in edits:
        new = new.replace(a, b)
    return "".join(difflib.unified_diff(old_lines, new.splitlines(keepends=True), "a/src/pkg/calc.py", "b/src/pkg/calc.py"))


def _manifest(name: str, fix: str, target: str = "tests/test_calc.py::test_add") -> str:
    return textwrap.dedent(f'''\
        name = "{name}"
        repo = "calc"
        reference_fix = "{fix}"
        kind = "operator"
        tags = ["operator"]

        [goal]
        text = "add(2, 3) is -1"
        failure_signature = "assert -1 == 5"

        [acceptance]
        target_tests = ["{target}"]
        writable = ["src/**"]
        test_timeout_s = 60
        ''')


@pytest.fixture
def scenarios_dir(tmp_path) -> Path:
    """Scenarios on one repository whose pristine tree skips test_needs_a_device and test_add_when_it_works."""
    d = tmp_path / "scenarios"
    (d / "calc/src/pkg").mkdir(parents=True)
    (d / "calc/tests").mkdir()
    (d / "calc/src/pkg/__init__.py").write_text("")
    (d / "calc/src/pkg/calc.py").write_text(CALC)
    (d / "calc/tests/test_calc.py").write_text(TESTS)
    (d / "calc/pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["src"]\n')
    (d / "fixes").mkdir()
    (d / "fixes/good.diff").write_text(_fix(("return a - b\n\n\ndef sub", "return a + b\n\n\ndef sub")))
    # Fixes add, and turns the feature off: test_feature, passing before, now skips.
    (d / "fixes/skips.diff").write_text(_fix(("return a - b\n\n\ndef sub", "return a + b\n\n\ndef sub"),
                                             ('FEATURE = "on"', 'FEATURE = ""')))
    # Fixes add, and breaks sub: a plain regression.
    (d / "fixes/breaks.diff").write_text(_fix(("return a - b\n\n\ndef sub", "return a + b\n\n\ndef sub"),
                                              ("return a - b\n", "return b - a\n")))
    # Fixes add for (2, 3) and (1, 1) but not (2, 2): test_add_when_it_works, skipped before, now runs and fails.
    (d / "fixes/unskips.diff").write_text(_fix(("return a - b\n\n\ndef sub",
                                                "return a + b if a != b or a == 1 else 0\n\n\ndef sub")))
    (d / "calc-unskips-and-fails.scenario.toml").write_text(_manifest("calc-unskips-and-fails", "fixes/unskips.diff"))
    (d / "calc-env-skip.scenario.toml").write_text(_manifest("calc-env-skip", "fixes/good.diff"))
    (d / "calc-newly-skips.scenario.toml").write_text(_manifest("calc-newly-skips", "fixes/skips.diff"))
    (d / "calc-breaks-sub.scenario.toml").write_text(_manifest("calc-breaks-sub", "fixes/breaks.diff"))
    (d / "calc-skipped-target.scenario.toml").write_text(
        _manifest("calc-skipped-target", "fixes/good.diff", target="tests/test_calc.py::test_add_when_it_works"))
    return d


def _check(scenarios_dir: Path, tmp_path: Path, name: str):
    (result,) = check_corpus([load_manifest(scenarios_dir / f"{name}.scenario.toml")], tmp_path / "state",
                             backend="local")
    return result


def test_a_test_skipped_on_the_pristine_tree_may_stay_skipped(scenarios_dir, tmp_path):
    c = _check(scenarios_dir, tmp_path, "calc-env-skip")
    assert c.ok and c.buggy_tree_ok and c.reference_fix_ok and c.scope_ok, c.problems
    # One stays skipped, the other passes once add is fixed: both are fine.
    assert c.skipped_on_pristine == ["tests.test_calc::test_add_when_it_works", "tests.test_calc::test_needs_a_device"]
    assert c.known_failing == []


def test_a_test_that_newly_skips_fails_the_check(scenarios_dir, tmp_path):
    c = _check(scenarios_dir, tmp_path, "calc-newly-skips")
    assert not c.ok and c.reference_fix_ok is False
    assert any("full_suite" in p and "tests.test_calc::test_feature [skipped" in p for p in c.problems), c.problems


def test_a_regression_in_another_test_fails_the_check(scenarios_dir, tmp_path):
    c = _check(scenarios_dir, tmp_path, "calc-breaks-sub")
    assert not c.ok and c.reference_fix_ok is False
    assert any("tests.test_calc::test_sub [failed" in p for p in c.problems), c.problems


def test_a_test_skipped_on_the_pristine_tree_may_not_fail(scenarios_dir, tmp_path):
    c = _check(scenarios_dir, tmp_path, "calc-unskips-and-fails")
    assert not c.ok and c.buggy_tree_ok and c.reference_fix_ok is False
    assert any("tests.test_calc::test_add_when_it_works [failed" in p for p in c.problems), c.problems


def test_a_target_must_fail_on_the_buggy_tree_not_skip(scenarios_dir, tmp_path):
    c = _check(scenarios_dir, tmp_path, "calc-skipped-target")
    assert not c.ok and any("skip" in p for p in c.problems), c.problems


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "repair_agent", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def test_check_command_table_json_and_exit_code(scenarios_dir, tmp_path):
    (scenarios_dir / "broken.scenario.toml").write_text('name = "broken"\n')
    # The table needs only the rows it reads: the other rules' verdicts are the tests above.
    for name in ("calc-env-skip", "calc-unskips-and-fails", "calc-skipped-target"):
        (scenarios_dir / f"{name}.scenario.toml").unlink()
    # --scenarios-dir without names: that directory's scenarios only (not the built-in corpus).
    table = _cli("check", "--sandbox", "local", "--scenarios-dir", str(scenarios_dir), cwd=tmp_path)
    assert table.returncode == 1, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["scenario", "buggy", "fails", "targets", "only", "reference", "fix", "passes",
                                "scope", "verdict", "tests", "wall"]
    assert lines[4] == "0/3 scenario(s) pass the corpus check", table.stdout
    rows = {line.split()[0]: line.split()[1:5] for line in lines[1:4]}
    buggy = "yes"  # the buggy tree skips test_needs_a_device, which may stay skipped
    # (the whole table on failure: its problem lines say why a column reads NO)
    assert rows["calc-breaks-sub"] == [buggy, "NO", "yes", "FAIL"], table.stdout
    assert rows["calc-newly-skips"] == [buggy, "NO", "yes", "FAIL"], table.stdout
    assert rows["broken"] == ["-", "-", "-", "FAIL"]
    assert "field 'goal': Field required" in table.stdout
    assert "discount-bug" not in table.stdout

    js = _cli("check", "--sandbox", "local", "--scenarios-dir", str(scenarios_dir), "calc-breaks-*", "--json",
              cwd=tmp_path)
    assert js.returncode == 1, js.stderr
    (only,) = json.loads(js.stdout)
    assert only["scenario"] == "calc-breaks-sub" and only["ok"] is False and only["buggy_tree_ok"] is True

    good = _cli("check", "--sandbox", "local", "discount-bug", "stockroom-holidays-out-of-scope", "--json",
                cwd=tmp_path)
    assert good.returncode == 0, good.stderr
    assert [(c["scenario"], c["ok"], c["scope_ok"]) for c in json.loads(good.stdout)] == [
        ("discount-bug", True, True), ("stockroom-holidays-out-of-scope", True, True)]


def test_check_command_usage_errors(tmp_path):
    missing = _cli("check", "--sandbox", "local", "--scenarios-dir", str(tmp_path / "nope"), cwd=tmp_path)
    assert missing.returncode == 2 and "no such scenario directory" in missing.stderr
    unknown = _cli("check", "--sandbox", "local", "no-such-scenario", cwd=tmp_path)
    assert unknown.returncode == 2 and "matches no scenario" in unknown.stderr


def test_sweep_refuses_runs_dir_instead_of_ignoring_it(tmp_path):
    for args in (["sweep", "--runs-dir", str(tmp_path / "r"), "--out", str(tmp_path / "s")],
                 ["--runs-dir", str(tmp_path / "r"), "sweep", "--out", str(tmp_path / "s")]):
        proc = _cli(*args, "--scenarios", "discount-bug", "--budgets", "2", "--seeds", "1", cwd=tmp_path)
        assert proc.returncode == 2 and "sweep does not take --runs-dir" in proc.stderr, proc.stderr
        assert str(tmp_path / "s" / "runs") in proc.stderr
        assert not (tmp_path / "r").exists() and not (tmp_path / "s").exists()
