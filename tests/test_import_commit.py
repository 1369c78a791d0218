"""`repair-agent import commit`: a scenario from a real fix commit of a repository this test builds
(tests/rangekit_project.py). The targets are found by running the commit's changed test files in a
container before and after its non-test changes; the scenario then passes the corpus check in
Docker. Commits that cannot make a scenario are reported, with the reason."""
from __future__ import annotations

from pathlib import Path

import pytest

from helpers import import_usable_commit
from rangekit_project import build_rangekit
from repair_agent.importers.commit import import_commit, split_commit
from repair_agent.importers.common import local_check
from repair_agent.scenarios.scenario import load_manifest

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def rangekit(tmp_path_factory):
    return build_rangekit(tmp_path_factory.mktemp("commit") / "rangekit")


def test_a_fix_commit_becomes_a_checked_scenario(rangekit, tmp_path, docker_client, sandbox_image):
    out = tmp_path / "out"
    result = import_usable_commit(rangekit.path, rangekit.fix_span, out, tmp_path / "c")
    # Found by running: the one test the commit added fails before its fix and passes after.
    assert result["target_tests"] == ["tests/test_core.py::test_span_counts_both_ends"]
    s = load_manifest(Path(result["manifest"]))
    assert "return high - low\n" in (s.repo / "src/rangekit/core.py").read_text()      # the parent's code
    assert "test_span_counts_both_ends" in (s.repo / "tests/test_core.py").read_text()  # + the commit's tests
    assert "+    return high - low + 1" in s.reference_fix.read_text()                   # the rest is the fix
    assert "tests/test_core.py" not in s.reference_fix.read_text()
    assert s.goal.text.startswith("fix span: count both ends")


def test_commits_that_cannot_make_a_scenario_are_reported(rangekit, tmp_path):
    check = local_check()
    root = import_commit(rangekit.path, rangekit.initial, tmp_path / "out", check=check)
    assert root.status == "skipped" and "root commit" in root.reason
    missing = import_commit(rangekit.path, "0" * 40, tmp_path / "out", check=check)
    assert missing.status == "skipped" and "no commit" in missing.reason


def test_the_split_is_by_path(rangekit):
    import git

    tests, fix, paths = split_commit(git.Repo(rangekit.path), rangekit.fix_in_range, rangekit.fix_span)
    assert paths == ["tests/test_core.py"] and "src/rangekit/core.py" in fix and "src/" not in tests


def test_the_changed_modules_can_be_the_pass_to_pass_list(rangekit, tmp_path):
    """--suite changed: the tests of the changed test modules that pass before and after the fix."""
    result = import_commit(rangekit.path, rangekit.fix_span, tmp_path / "out", check=local_check(),
                           suite="changed")
    assert result.status == "usable", (result.reason, result.problems)
    s = load_manifest(Path(result.manifest))
    assert s.spec.target_tests == ("tests/test_core.py::test_span_counts_both_ends",)
    assert s.spec.pass_to_pass == tuple(f"tests/test_core.py::{t}" for t in (
        "test_clamp_inside", "test_clamp_outside", "test_in_range_includes_high", "test_in_range_low_end",
        "test_span_is_positive"))
