"""`import commit --hidden-tests` / `import swebench --hidden-tests` (SWE-bench's protocol): the fix's
test changes are held back from the chooser. The workspace is the buggy tree without them; the
verifier's tree has them, so the targets name tests the chooser cannot see; the goal says how they
fail (pytest's one-line messages, never their source); test observations carry no pytest output.
Through the real CLI and Docker on rangekit's `fix span` commit: a run that first runs the hidden
target, then applies the real fix, reaches awaiting_release_confirmation, `correct`, and its journal
never holds the hidden test's source (the same run on the scenario imported without the flag does:
the check is not vacuous); a chooser that writes a file the hidden patch creates is refused, though
it cannot see it."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import runs_dir_with_cache
from hostile_choosers import unified
from rangekit_project import CORE_BUGGY, SPAN_TEST, build_rangekit
from repair_agent.choosers import BaselineChooser
from repair_agent.lifecycle.run import execute_run
from repair_agent.scenarios.scenario import BaselineRecipe, load_manifest
from repair_agent.loop.state import StopReason

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[1]
TARGET = "tests/test_core.py::test_span_counts_both_ends"
HIDDEN_SOURCE = "assert span(2, 7) == 6"  # the hidden test's own line
BUGGY = CORE_BUGGY.replace("low <= value < high", "low <= value <= high")  # rangekit at `fix in_range`
FIX = unified("src/rangekit/core.py", BUGGY, BUGGY.replace("return high - low", "return high - low + 1"))


class RunFirstThenFix:
    """Runs the target on the buggy tree (a failing observation), then applies `patch` and checks."""

    name = "run-first-then-fix"

    def __init__(self, patch: str):
        self.script = [{"tool": "run_target_test"}, {"tool": "apply_patch", "diff": patch},
                       {"tool": "run_target_test"}, {"tool": "run_full_suite"}, {"tool": "check_diff"}]

    def choose(self, view):
        if len(view.evidence) < len(self.script):
            return self.script[len(view.evidence)]
        return {"tool": "stop", "reason": "script complete", "summary": "done"}


def span_fixer() -> RunFirstThenFix:
    """For the CLI (`--chooser test_import_hidden:span_fixer`, tests/ on PYTHONPATH)."""
    return RunFirstThenFix(FIX)


def cli_import(*args: str, cache: Path) -> dict:
    proc = subprocess.run([sys.executable, "-m", "repair_agent", "import", *args, "--json"], cwd=ROOT,
                          capture_output=True, text=True, timeout=900,
                          env={**os.environ, "REPAIR_AGENT_CACHE_DIR": str(cache)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def rangekit(tmp_path_factory):
    return build_rangekit(tmp_path_factory.mktemp("hidden") / "rangekit")


@pytest.fixture(scope="module")
def imports(rangekit, tmp_path_factory, docker_client, sandbox_image):
    """The `fix span` commit imported twice through the CLI: with --hidden-tests and without."""
    base = tmp_path_factory.mktemp("hidden-imports")
    found = {}
    for mode, flags in (("hidden", ["--hidden-tests"]), ("visible", [])):
        (result,) = cli_import("commit", str(rangekit.path), rangekit.fix_span, "--out", str(base / mode), *flags,
                               cache=base / "cache")["results"]
        assert result["status"] == "usable", result
        found[mode] = result
    return found


@pytest.fixture(scope="module")
def run(docker_client, tmp_path_factory, baseline_cache):
    runs = runs_dir_with_cache(tmp_path_factory.mktemp("hidden-runs") / "runs", baseline_cache)

    def make(manifest: str, chooser):
        record = execute_run(load_manifest(Path(manifest)), chooser, backend="docker", runs_dir=runs,
                             client=docker_client)
        return record, (Path(record.run_dir) / "journal.jsonl").read_text()
    return make


def test_the_hidden_scenario_shows_the_chooser_the_buggy_tree_without_the_tests(imports):
    s = load_manifest(Path(imports["hidden"]["manifest"]))
    assert imports["hidden"]["target_tests"] == [TARGET]
    assert s.hidden_tests is not None and "+def test_span_counts_both_ends" in s.hidden_tests.read_text()
    # The workspace's tree: the parent's code and tests; the verifier's: the same + the commit's tests.
    assert "test_span_counts_both_ends" not in (s.workspace_tree / "tests/test_core.py").read_text()
    assert "test_span_counts_both_ends" in (s.repo / "tests/test_core.py").read_text()
    assert (s.workspace_tree / "src/rangekit/core.py").read_text() == (s.repo / "src/rangekit/core.py").read_text()
    assert "tests/test_core.py" in s.spec.protected
    # The goal says how the target fails on the buggy tree (as a problem statement), not its source.
    assert f"{TARGET}: assert 5 == 6" in s.goal.text and HIDDEN_SOURCE not in s.goal.text
    assert "return high - low + 1" not in s.goal.text
    visible = load_manifest(Path(imports["visible"]["manifest"]))
    assert visible.hidden_tests is None and visible.workspace_tree == visible.repo


def test_a_run_fixes_what_it_cannot_see_and_never_observes_the_hidden_source(imports, run):
    record, journal = run(imports["hidden"]["manifest"], RunFirstThenFix(FIX))
    assert record.status is StopReason.AWAITING_RELEASE_CONFIRMATION, record.detail
    assert record.correctness == "correct"
    assert "+    return high - low + 1" in (Path(record.run_dir) / "candidate.diff").read_text()
    # The first observation: the hidden target fails, with pytest's one-line message ...
    assert TARGET in journal and "assert 5 == 6" in journal
    # ... but never the hidden test's source, nor pytest's output quoting it.
    assert HIDDEN_SOURCE not in journal and "def test_span_counts_both_ends" not in journal
    # The same run with the tests visible shows pytest's output, which quotes the test.
    _, shown = run(imports["visible"]["manifest"], RunFirstThenFix(FIX))
    assert HIDDEN_SOURCE in shown


def test_the_cli_runs_and_releases_a_hidden_task(imports, tmp_path, baseline_cache):
    """`run` (its early sandbox builds the workspace) and `release --confirm` (re-verified on the tree
    with the hidden tests; the release clone is the chooser's tree + the verified diff)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tests"), "REPAIR_AGENT_RELEASER": "hidden-tester"}
    runs = runs_dir_with_cache(tmp_path / "runs", baseline_cache)  # the hidden tree's pristine suite ran once

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "repair_agent", "--runs-dir", str(runs), *args], cwd=ROOT,
                              env=env, capture_output=True, text=True, timeout=600)
    ran = cli("run", imports["hidden"]["manifest"], "--chooser", "test_import_hidden:span_fixer", "--json")
    out = json.loads(ran.stdout)
    assert out["status"] == "awaiting_release_confirmation", ran.stderr[-2000:]
    assert not (Path(out["run_dir"]) / "workspace/tests/test_core.py").read_text().count("span_counts")
    assert HIDDEN_SOURCE not in (Path(out["run_dir"]) / "journal.jsonl").read_text()
    released = cli("release", out["run_id"], "--confirm", "--yes")
    assert released.returncode == 0, released.stderr[-2000:]
    clone = Path(out["run_dir"]) / "release" / load_manifest(Path(imports["hidden"]["manifest"])).name
    assert "return high - low + 1" in (clone / "src/rangekit/core.py").read_text()
    assert "span_counts" not in (clone / "tests/test_core.py").read_text()


def test_the_baseline_chooser_repairs_the_hidden_task(imports, run):
    """Search, read, patch, check in the workspace without the tests: awaiting confirmation, correct."""
    recipe = BaselineRecipe(search="return high - low", replace="return high - low + 1", path_glob="src/**")
    record, journal = run(imports["hidden"]["manifest"], BaselineChooser(recipe))
    assert record.status is StopReason.AWAITING_RELEASE_CONFIRMATION, record.detail
    assert record.correctness == "correct"
    assert "+    return high - low + 1" in (Path(record.run_dir) / "candidate.diff").read_text()
    assert HIDDEN_SOURCE not in journal


def test_a_file_the_hidden_patch_creates_stays_protected(rangekit, tmp_path, run):
    """A fix commit whose test module is new and outside tests/ (no default protection covers it): the
    chooser does not see it, and writing a file at its path is refused all the same."""
    repo = tmp_path / "rangekit"
    subprocess.run(["git", "clone", "--quiet", str(rangekit.path), str(repo)], check=True)
    git = ["git", "-C", str(repo), "-c", "user.name=Dev", "-c", "user.email=dev@example.invalid"]
    subprocess.run([*git, "checkout", "--quiet", "-b", "alt", rangekit.fix_in_range], check=True)
    core = repo / "src/rangekit/core.py"
    core.write_text(core.read_text().replace("return high - low", "return high - low + 1"))
    (repo / "src/rangekit/test_span.py").write_text("from rangekit.core import span\n" + SPAN_TEST)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "--quiet", "-m", "fix span, tested beside the code"], check=True)
    (result,) = cli_import("commit", str(repo), "alt", "--out", str(tmp_path / "out"), "--hidden-tests",
                           cache=tmp_path / "cache")["results"]
    assert result["status"] == "usable" and result["target_tests"] == ["src/rangekit/test_span.py::test_span_counts_both_ends"]
    s = load_manifest(Path(result["manifest"]))
    assert not (s.workspace_tree / "src/rangekit/test_span.py").exists() and (s.repo / "src/rangekit/test_span.py").exists()
    forged = unified("src/rangekit/test_span.py", None, "def test_span_counts_both_ends():\n    pass\n")
    record, journal = run(result["manifest"], RunFirstThenFix(forged))
    assert record.status is not StopReason.AWAITING_RELEASE_CONFIRMATION
    assert "protected: src/rangekit/test_span.py" in journal


def test_import_swebench_hidden_tests(rangekit, tmp_path, docker_client, sandbox_image):
    repos = tmp_path / "repos"
    subprocess.run(["git", "clone", "--quiet", str(rangekit.path), str(repos / "rangekit")], check=True)
    instance = {"instance_id": "rangekit__rangekit-4", "repo": "rangekit/rangekit", "base_commit": rangekit.fix_in_range,
                "patch": rangekit.diff(rangekit.fix_in_range, rangekit.fix_span, "src"),
                "test_patch": rangekit.diff(rangekit.fix_in_range, rangekit.fix_span, "tests"),
                "FAIL_TO_PASS": [TARGET], "PASS_TO_PASS": [],
                "problem_statement": "span(2, 7) is 5; there are six integers from 2 to 7."}
    (tmp_path / "i.jsonl").write_text(json.dumps(instance) + "\n")
    (result,) = cli_import("swebench", str(tmp_path / "i.jsonl"), "--repos", str(repos), "--out", str(tmp_path / "out"),
                           "--hidden-tests", cache=tmp_path / "cache")["results"]
    assert result["status"] == "usable", result
    assert result["heldout_cases"] == 1  # span(2, 7), answered by the gold patch
    s = load_manifest(Path(result["manifest"]))
    assert "test_span_counts_both_ends" not in (s.workspace_tree / "tests/test_core.py").read_text()
    assert "test_span_counts_both_ends" in (s.repo / "tests/test_core.py").read_text()
    assert s.goal.text.startswith("span(2, 7) is 5")
