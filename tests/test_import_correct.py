"""`correct` for an imported task (repair_agent/importers/derived.py): `import commit` derives held-out
cases from the fix's own tests (each literal call of a function the fix changed, expected = the
reference fix's answer, found in the import's container), and the verifier then judges a green
candidate on them and on generated variants of them against the reference fix, as for a corpus
scenario. Through the real CLI and Docker on rangekit's `fix span` commit: the real fix is
`correct`; a candidate that special-cases the tested literal (`span(2, 7)`) passes the target and
is `plausible`, the report naming the first disagreement."""
from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from helpers import import_usable_commit, runs_dir_with_cache
from rangekit_project import build_rangekit
from repair_agent.choosers import BaselineChooser
from repair_agent.importers.common import local_check
from repair_agent.importers.derived import derive_heldout, literal_calls, module_of, touched_functions
from repair_agent.lifecycle.run import execute_run
from repair_agent.scenarios.scenario import BaselineRecipe, load_manifest
from repair_agent.loop.state import StopReason

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def imported(tmp_path_factory, docker_client, sandbox_image):
    """rangekit's `fix span` commit imported through the CLI (Docker): the usable scenario."""
    base = tmp_path_factory.mktemp("import-correct")
    rangekit = build_rangekit(base / "rangekit")
    out = base / "out"
    return import_usable_commit(rangekit.path, rangekit.fix_span, out, base / "c")


@pytest.fixture(scope="module")
def run_with(imported, docker_client, tmp_path_factory, baseline_cache):
    runs = runs_dir_with_cache(tmp_path_factory.mktemp("import-correct-runs") / "runs", baseline_cache)

    def run(replace: str):
        recipe = BaselineRecipe(search="return high - low", replace=replace, path_glob="src/**")
        return execute_run(load_manifest(Path(imported["manifest"])), BaselineChooser(recipe), backend="docker",
                           runs_dir=runs, client=docker_client)
    return run


def test_the_import_derives_held_out_cases_from_the_fix_tests_literal_calls(imported):
    assert imported["heldout_cases"] == 1
    scenario = load_manifest(Path(imported["manifest"]))
    assert scenario.heldout is not None and scenario.heldout.parent == scenario.repo.parent  # never in the workspace
    (case,) = tomllib.loads(scenario.heldout.read_text())["case"]
    # The call the added test makes, answered by the reference fix (high - low + 1) in the container.
    assert case == {"name": "test_span_counts_both_ends.1", "setup": "from rangekit.core import span",
                    "expr": "span(2, 7)", "expect_json": "6"}


def test_the_real_fix_is_correct(run_with):
    record = run_with("return high - low + 1")
    assert record.status is StopReason.AWAITING_RELEASE_CONFIRMATION, record.detail
    assert record.correctness == "correct"


def test_a_fix_that_special_cases_the_tested_literal_is_plausible(run_with):
    record = run_with("return 6 if (low, high) == (2, 7) else high - low")
    # The target test passes (the loop's conditions hold) ...
    assert record.status is StopReason.AWAITING_RELEASE_CONFIRMATION, record.detail
    # ... but generated variants of span(2, 7) disagree with the reference fix.
    assert record.correctness == "plausible"
    report = (Path(record.run_dir) / "report.md").read_text()
    assert "first disagreement:" in report and "span(" in report


def test_a_call_the_reference_answers_differently_twice_is_left_out(tmp_path):
    """Locally (the probe in a plain subprocess): a touched function whose answer changes between two
    askings gives no case; a deterministic one does, with the reference's answer."""
    (tmp_path / "fixed/tests").mkdir(parents=True)
    (tmp_path / "fixed/mod.py").write_text("import time\n\n\ndef now(x):\n    return time.time_ns() + x\n\n\n"
                                           "def half(x):\n    return x / 2\n")
    (tmp_path / "fixed/tests/test_mod.py").write_text("from mod import half, now\n\n\ndef test_it():\n"
                                                      "    assert now(1) > 0\n    assert half(3) == 1.5\n")
    fix = ("--- a/mod.py\n+++ b/mod.py\n@@ -4,6 +4,6 @@\n def now(x):\n-    return time.time_ns()\n"
           "+    return time.time_ns() + x\n \n \n def half(x):\n-    return x // 2\n+    return x / 2\n")
    dest = tmp_path / "case.heldout.toml"
    assert derive_heldout(tmp_path / "fixed", tmp_path / "fixed", ["tests/test_mod.py::test_it"], fix,
                          local_check(), dest) == 1
    (case,) = tomllib.loads(dest.read_text())["case"]
    assert case["expr"] == "half(3)" and case["expect_json"] == "1.5"


def test_touched_functions_and_literal_calls(tmp_path):
    (tmp_path / "src/pkg").mkdir(parents=True)
    (tmp_path / "src/pkg/mod.py").write_text("def a(x):\n    return x + 1\n\n\ndef b(x):\n    return x\n")
    fix = ("--- a/src/pkg/mod.py\n+++ b/src/pkg/mod.py\n@@ -1,2 +1,2 @@\n def a(x):\n-    return x\n"
           "+    return x + 1\n")
    assert touched_functions(fix, tmp_path) == {"a": ("src", "pkg.mod")}   # b is untouched
    assert module_of("pkg/__init__.py") == (".", "pkg") and module_of("README.md") is None
    test = ("import pkg.mod\nfrom pkg.mod import a\n\n\ndef test_x():\n    v = 3\n    assert a(1) == 2\n"
            "    assert pkg.mod.a(x=[1, 'q']) == 0\n    assert a(v) == 4\n    assert a(*[1]) == 2\n\n\n"
            "class TestY:\n    def test_y(self):\n        assert a(-2.5) == -1.5\n\n\ndef test_other():\n    a(9)\n")
    calls = literal_calls(test, {(None, "test_x"), ("TestY", "test_y")}, {"a": ("src", "pkg.mod")})
    # Only literal arguments, only the named tests; a name or a starred argument is no probe.
    assert calls == [("test_x", "a(1)"), ("test_x", "a(x=[1, 'q'])"), ("TestY.test_y", "a(-2.5)")]
