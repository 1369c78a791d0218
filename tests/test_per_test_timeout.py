"""A test that hangs fails alone, with its id, and every other test keeps its result."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from helpers import LOOP
from verifier import AcceptanceSpec, Verifier

TESTS = '''\
from pkg.loop import label, settle


def test_settle_negative():
    assert settle(-3) == "settled"


def test_label():
    assert label(7) == "#7"
'''
FIX = '''\
--- a/src/pkg/loop.py
+++ b/src/pkg/loop.py
@@ -1,5 +1,5 @@
 def settle(balance):
-    while balance != 0:      # the bug: a negative balance never reaches 0
+    while balance > 0:
         balance -= 1
     return "settled"
 
'''


@pytest.mark.parametrize("backend", ["local", pytest.param("docker", marks=pytest.mark.docker)])
def test_a_hanging_test_fails_alone(tmp_path, backend, request):
    repo = tmp_path / "repo"
    (repo / "src/pkg").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "src/pkg/__init__.py").write_text("")
    (repo / "src/pkg/loop.py").write_text(LOOP)
    (repo / "tests/test_loop.py").write_text(TESTS)
    (repo / "pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["src"]\n')
    spec = AcceptanceSpec(scenario="loop", target_tests=("tests/test_loop.py::test_settle_negative",),
                          test_timeout_s=60, per_test_timeout_s=1.5)
    engine = {}
    if backend == "docker":
        engine = {"client": request.getfixturevalue("docker_client"), "image": request.getfixturevalue("sandbox_image")}
    with Verifier(spec, repo, tmp_path / "state", backend=backend, **engine) as v:
        started = time.monotonic()
        baseline = v.prepare()
        assert time.monotonic() - started < 30  # the hang cost its own limit, not the run's deadline
        assert baseline.all_tests == ["tests.test_loop::test_label", "tests.test_loop::test_settle_negative"]
        assert "tests.test_loop::test_label" in baseline.pass_to_pass  # the other test kept its result
        assert "Timeout" in baseline.target_failures["tests.test_loop::test_settle_negative"]  # pytest-timeout's words
        verdict = v.run_tests(FIX, "full_suite")
        assert verdict.ok and verdict.passed == verdict.collected == 2, verdict.problems
    assert Path(tmp_path / "state").is_dir()
