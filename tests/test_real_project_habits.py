"""Habits of real projects that the import of real fix commits met, each read or handled as the
project wrote it (docs/real-commits.md): the test helpers' imports, setup.py extras held in a name,
the Python a project was last tested on, pip's and pytest's own words for a failure, parameter ids
that carry a memory address, and the per-test limit fitted to how long the tests take."""
from __future__ import annotations

from pathlib import Path

import pytest

from repair_agent.importers.commit import TestRun, junit_key_to_nodeid, per_test_limit
from repair_agent.sandbox.declared import offered_python, read_declared
from repair_agent.sandbox.environment import EnvironmentSection, describe_failure
from verifier.junit import crash_cause, parse_junit_bytes
from verifier.spec import nodeid_to_junit_key

SETUP_PY = '''\
from setuptools import setup, find_packages

EXTRAS_REQUIRE = {
    "tests": ["pytest", "pytz", "simplejson"],
    "lint": ["flake8==6.0.0"],
}
EXTRAS_REQUIRE["dev"] = EXTRAS_REQUIRE["tests"] + EXTRAS_REQUIRE["lint"]

setup(
    name="marsh",
    install_requires=["packaging>=17.0"],
    extras_require=EXTRAS_REQUIRE,
    classifiers=CLASSIFIERS,
)
'''


def tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


def test_setup_py_extras_held_in_a_module_level_name_are_read(tmp_path):
    declared = read_declared(tree(tmp_path, {"setup.py": SETUP_PY.replace("CLASSIFIERS", "[]")}))
    assert declared.requirements == ["packaging>=17.0", "pytest", "pytz", "simplejson"]
    # A name assigned twice (or computed) is not guessed at: only the literal it was given once.
    twice = SETUP_PY.replace("CLASSIFIERS", "[]") + "\nEXTRAS_REQUIRE = {}\n"
    assert read_declared(tree(tmp_path / "b", {"setup.py": twice})).requirements == ["packaging>=17.0"]


def test_imports_of_test_helper_modules_count_not_only_test_files(tmp_path):
    declared = read_declared(tree(tmp_path, {
        "pkg/__init__.py": "", "tests/__init__.py": "",
        "tests/base.py": "import pytz\nimport simplejson\nfrom pkg import x\n",
        "tests/test_a.py": "from tests.base import x\n",
        "docs/conf.py": "import sphinx_rtd_theme\n"}))
    assert declared.guesses == ["pytz", "simplejson"]


@pytest.mark.parametrize("classifiers,requires,expected", [
    (["Programming Language :: Python :: 3.6", "Programming Language :: Python :: 3.7"], None, "3.9"),
    (["Programming Language :: Python :: 3.9", "Programming Language :: Python :: 3.10"], None, None),
    (["Programming Language :: Python :: 3.8"], None, None),           # inflection 0.5.1 runs on 3.11
    (["Programming Language :: Python :: 3.12"], None, None),
    (["Programming Language :: Python :: 3.7"], ">=3.10", None),     # requires-python wins
    ([], ">=3.12", "3.13"),
    ([], "<3.10", "3.9"),
    ([], "not a specifier", None),
    (["Programming Language :: Python :: 3 :: Only"], None, None),
])
def test_the_python_a_tree_points_to(classifiers, requires, expected):
    assert offered_python(classifiers, requires) == expected


def test_a_tree_whose_classifiers_stop_before_3_10_is_given_python_3_9(tmp_path):
    old = SETUP_PY.replace("CLASSIFIERS", '["Programming Language :: Python :: 3.7"]')
    assert read_declared(tree(tmp_path, {"setup.py": old})).python == "3.9"


def test_a_build_failure_is_named_by_the_backends_exception_not_pips_trailer():
    lines = ["  File \"/tmp/x/vcs_versioning/_get_version_impl.py\", line 306, in _version_missing",
             "      raise LookupError(error_msg)",
             "  LookupError: setuptools-scm was unable to detect version for /workspace.",
             "  note: This error originates from a subprocess, and is likely not a problem with pip.",
             "error: subprocess-exited-with-error", "╰─> See above for output."]
    said = describe_failure("install pip install --no-deps -e .", lines, EnvironmentSection())
    assert said == ("step 'install pip install --no-deps -e .' failed: LookupError: setuptools-scm was unable to "
                    "detect version for /workspace.")


def test_a_pytest_crash_is_said_in_its_own_last_words():
    trace = ("Traceback (most recent call last):\n  File \"pytest_cov/engine.py\", line 260, in start\n"
             "    self.cov.erase()\nOSError: [Errno 30] Read-only file system: '/workspace/.coverage'\n")
    assert crash_cause(trace) == "OSError: [Errno 30] Read-only file system: '/workspace/.coverage'"
    assert crash_cause("ERROR: usage: pytest [options]\nERROR: unrecognized arguments: --cov\n  inifile: x\n") \
        == "ERROR: unrecognized arguments: --cov"
    assert crash_cause("") == "no output"


def test_a_parameter_shown_with_its_memory_address_has_the_same_key_in_every_run():
    junit = (b'<testsuites><testsuite><testcase classname="tests.test_time" '
             b'name="test_naturalday[args8-&lt;tests.test_time.FakeDate object at 0x7feb1ff26650&gt;]" time="0.25"/>'
             b'</testsuite></testsuites>')
    (case,), problem = parse_junit_bytes(junit)
    other_run = "tests/test_time.py::test_naturalday[args8-<tests.test_time.FakeDate object at 0x7f0012ab34cd>]"
    assert problem is None and case.key == nodeid_to_junit_key(other_run)
    assert case.seconds == 0.25
    # Short hex literals in ids are values, not addresses: they stay.
    assert nodeid_to_junit_key("t.py::test_x[0x1f]") == "t::test_x[0x1f]"


def test_the_per_test_limit_fits_the_slowest_passing_test():
    def run(seconds: dict[str, float], outcomes: dict[str, str]) -> TestRun:
        return TestRun(outcomes=outcomes, unimported={}, messages={}, seconds=seconds)

    assert per_test_limit(run({"a": 0.01, "b": 0.02}, {"a": "passed", "b": "passed"})) == 2.0
    assert per_test_limit(run({"a": 0.31}, {"a": "passed"})) == 7.0
    # A failing test's time (a timeout) says nothing about how long a passing one needs.
    assert per_test_limit(run({"a": 0.1, "b": 10.0}, {"a": "passed", "b": "failed"})) == 2.0
    assert per_test_limit(run({"a": 30.0}, {"a": "passed"})) == 60.0


def test_node_ids_are_read_from_the_report_whatever_verbosity_the_addopts_set():
    files = ["tests/test_x.py", "tests/test_x/test_deep.py"]
    assert junit_key_to_nodeid("tests.test_x.TestA.TestB::test_y[1-a.b]", files) == \
        "tests/test_x.py::TestA::TestB::test_y[1-a.b]"
    assert junit_key_to_nodeid("tests.test_x.test_deep::test_z", files) == "tests/test_x/test_deep.py::test_z"
    assert junit_key_to_nodeid("other.test_q::test_z", files) is None


def test_a_parameter_made_from_the_clock_is_the_same_test_under_a_new_id():
    from verifier.judge import Baseline, ProcessFacts, judge
    from verifier.junit import TestCase

    f = "tests.test_d::test_invalid_datetime"
    baseline = Baseline(all_tests=[f"{f}[04:48:56 2026-12-05]", f"{f}[12-05-2026]", "tests.test_d::test_t"],
                        target_keys=["tests.test_d::test_t"], known_failing=[],
                        pass_to_pass=[f"{f}[04:48:56 2026-12-05]", f"{f}[12-05-2026]"],
                        target_failures={"tests.test_d::test_t": "assert 1 == 2"})
    facts = ProcessFacts(exit_code=0, root="/p")
    later = [TestCase(key=f"{f}[04:50:05 2026-12-05]", outcome="passed"),
             TestCase(key=f"{f}[12-05-2026]", outcome="passed"), TestCase(key="tests.test_d::test_t", outcome="passed")]
    assert judge("full_suite", baseline, later, None, facts).ok
    # Paired, each is still judged by its outcome ...
    failing = [later[0].model_copy(update={"outcome": "failed"}), *later[1:]]
    verdict = judge("full_suite", baseline, failing, None, ProcessFacts(exit_code=1, root="/p"))
    assert not verdict.ok and not verdict.visible_ok
    # ... and a test that vanished with nothing new in its place is still missing.
    assert not judge("full_suite", baseline, later[1:], None, facts).ok


@pytest.mark.parametrize("answer", [
    {"__tuple__": ["c", "d", "e"]},                                   # nth_combination_with_replacement(...)
    {"__dict__": {"a": {"__tuple__": [1, 2]}, "b": [1.5, None]}},      # a dict of string keys, nested
    [{"__tuple__": [1, "x"]}, 3],
])
def test_a_derived_case_expects_what_the_reference_answered_for_tuples_and_dicts(answer):
    import tomllib

    from repair_agent.importers.derived import heldout_text
    from verifier.heldout import HeldoutCase, same

    request = {"paths": ["."], "cases": [{"name": "c1", "setup": "from m import f", "expr": "f(1)"}]}
    text = heldout_text(request, [{"name": "c1", "value": answer}])
    (case,) = tomllib.loads(text)["case"]
    # The verifier reads the expectation back and compares it with the probe's answer, as written.
    assert same(HeldoutCase.model_validate(case).expected_plain(), answer)


def test_an_answer_json_cannot_say_makes_no_derived_case():
    from repair_agent.importers.derived import heldout_text

    request = {"paths": ["."], "cases": [{"name": "c1", "setup": "from m import f", "expr": "f(1)"}]}
    assert heldout_text(request, [{"name": "c1", "value": {"__set__": [1, 2]}}]) is None
    assert heldout_text(request, [{"name": "c1", "value": {"__float__": "nan"}}]) is None


CLOCK_CODE = '''\
import datetime


def age(born, today=None):
    today = today or datetime.date(2020, 1, 1)
    return today.year - born.year
'''
CLOCK_TESTS = '''\
import datetime

from clocky import age


def test_age_defaults_to_today():
    assert age(datetime.date(2000, 1, 1)) == datetime.date.today().year - 2000
'''
CLOCK_FIX = '''\
--- a/src/clocky/__init__.py
+++ b/src/clocky/__init__.py
@@ -2,5 +2,5 @@ import datetime
 
 
 def age(born, today=None):
-    today = today or datetime.date(2020, 1, 1)
+    today = today or datetime.date.today()
     return today.year - born.year
'''


def test_a_real_fix_that_reads_the_clock_is_checked_with_that_granted_and_said(tmp_path):
    from repair_agent.scenarios.corpus import check_scenario, render_table
    from repair_agent.scenarios.scenario import load_manifest

    repo = tree(tmp_path / "clocky", {"src/clocky/__init__.py": CLOCK_CODE, "tests/test_age.py": CLOCK_TESTS,
                                      "pyproject.toml": "[tool.pytest.ini_options]\npythonpath = ['src']\n"})
    (tmp_path / "fix.diff").write_text(CLOCK_FIX)
    (tmp_path / "clocky.scenario.toml").write_text(
        'name = "clocky"\nrepo = "clocky"\nreference_fix = "fix.diff"\n[goal]\ntext = "age uses today"\n'
        'failure_signature = "assert"\n[acceptance]\ntarget_tests = ["tests/test_age.py::test_age_defaults_to_today"]\n'
        'writable = ["src/**"]\n')
    assert repo.is_dir()
    check = check_scenario(load_manifest(tmp_path / "clocky.scenario.toml"), tmp_path / "state", backend="local")
    # The gate would stop a candidate making this fix until a person grants it; the project's own
    # fix is run with it granted, and the check says what a candidate would need.
    assert check.ok, check.problems
    assert len(check.reference_grants) == 1 and check.reference_grants[0].startswith("code:clock@src/clocky/__init__.py")
    assert "the reference fix needs a grant" in render_table([check])


def test_a_frame_in_a_test_module_is_never_read_as_a_shorter_writable_path():
    from repair_agent.choosers.search.failure import writable_path

    # With the whole tree writable (`**`, an import's default), `tests/test_number.py` used to map to
    # `test_number.py`, a file that does not exist, and the search chooser spent a step reading it.
    assert writable_path("tests/test_number.py", ("**",)) is None
    assert writable_path("pkg/tests/test_core.py", ("**",)) is None
    assert writable_path("src/humanize/number.py", ("**",)) == "src/humanize/number.py"
    assert writable_path("/code/proj/src/x.py", ("src/**",)) == "src/x.py"
