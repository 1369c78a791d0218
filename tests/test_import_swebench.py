"""`repair-agent import swebench`: a JSONL file this test writes over a git repository it builds
(tests/rangekit_project.py), imported through the real CLI, validated by the corpus check in
Docker, and one imported scenario run end to end by the search chooser.

Of the instances, two are good, one names a FAIL_TO_PASS test that already passes, one has a gold
patch that fixes nothing, one names a repository with no local clone, and one line is not JSON:
the last four are reported with their instance id (or line) and skipped, never listed as usable.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rangekit_project import build_rangekit
from repair_agent.choosers import SearchChooser
from repair_agent.importers.swebench import SwebenchInstance
from repair_agent.lifecycle.run import execute_run
from repair_agent.scenarios.scenario import load_manifest
from repair_agent.loop.state import StopReason

ROOT = Path(__file__).resolve().parents[1]
P2P = ["tests/test_core.py::test_clamp_inside", "tests/test_core.py::test_clamp_outside",
       "tests/test_core.py::test_in_range_low_end", "tests/test_core.py::test_span_is_positive"]
IN_RANGE = "tests/test_core.py::test_in_range_includes_high"
SPAN = "tests/test_core.py::test_span_counts_both_ends"


def _instances(rk) -> list[dict]:
    in_range_fix = rk.diff(rk.initial, rk.fix_in_range, "src")
    in_range_tests = rk.diff(rk.initial, rk.fix_in_range, "tests")
    span_fix = rk.diff(rk.fix_in_range, rk.fix_span, "src")
    span_tests = rk.diff(rk.fix_in_range, rk.fix_span, "tests")
    docstring_only = span_fix.replace("-    return high - low\n+    return high - low + 1\n",
                                      "-    return high - low\n+    return (high - low)\n")
    assert docstring_only != span_fix
    return [
        # Lists JSON-encoded as strings, as the published datasets have them, plus fields with no use here.
        {"instance_id": "rangekit__rangekit-1", "repo": "rangekit/rangekit", "base_commit": rk.initial,
         "patch": in_range_fix, "test_patch": in_range_tests, "FAIL_TO_PASS": json.dumps([IN_RANGE]),
         "PASS_TO_PASS": json.dumps(P2P), "version": "0.1", "environment_setup_commit": rk.initial,
         "hints_text": "", "problem_statement": "in_range(10, 0, 10) is False, but the docstring says both "
                                                "ends are included."},
        {"instance_id": "rangekit__rangekit-2", "repo": "rangekit/rangekit", "base_commit": rk.fix_in_range,
         "patch": span_fix, "test_patch": span_tests, "FAIL_TO_PASS": [IN_RANGE], "PASS_TO_PASS": P2P[:1],
         "problem_statement": "in_range excludes the upper bound (already fixed at this commit)."},
        {"instance_id": "rangekit__rangekit-3", "repo": "rangekit/rangekit", "base_commit": rk.fix_in_range,
         "patch": docstring_only, "test_patch": span_tests, "FAIL_TO_PASS": [SPAN], "PASS_TO_PASS": P2P,
         "problem_statement": "span(2, 7) is 5; there are six integers from 2 to 7."},
        {"instance_id": "rangekit__rangekit-4", "repo": "rangekit/rangekit", "base_commit": rk.fix_in_range,
         "patch": span_fix, "test_patch": span_tests, "FAIL_TO_PASS": json.dumps([SPAN]),
         "PASS_TO_PASS": json.dumps(P2P), "problem_statement": "span(2, 7) is 5; there are six integers "
                                                               "from 2 to 7."},
        {"instance_id": "other__missing-5", "repo": "other/missing", "base_commit": rk.initial,
         "patch": in_range_fix, "test_patch": in_range_tests, "FAIL_TO_PASS": [IN_RANGE], "PASS_TO_PASS": [],
         "problem_statement": "no clone of this repository exists"},
        # Found as DIR/rangekit (there is no DIR/fork__rangekit), which lacks this commit.
        {"instance_id": "fork__rangekit-6", "repo": "fork/rangekit", "base_commit": "f" * 40,
         "patch": in_range_fix, "test_patch": in_range_tests, "FAIL_TO_PASS": [IN_RANGE], "PASS_TO_PASS": [],
         "problem_statement": "a base commit the clone does not have"},
    ]


@pytest.fixture(scope="module")
def imported(tmp_path_factory, docker_client, sandbox_image):
    base = tmp_path_factory.mktemp("swebench")
    repos = base / "repos"
    rk = build_rangekit(repos / "rangekit__rangekit")
    (repos / "rangekit").symlink_to(repos / "rangekit__rangekit")
    jsonl = base / "instances.jsonl"
    lines = [json.dumps(i) for i in _instances(rk)]
    jsonl.write_text("\n".join(lines[:4] + ["{not json", *lines[4:]]) + "\n")
    out = base / "out"
    before = subprocess.run(["git", "-C", str(rk.path), "status", "--porcelain"], capture_output=True, text=True).stdout
    proc = subprocess.run([sys.executable, "-m", "repair_agent", "import", "swebench", str(jsonl), "--repos",
                           str(repos), "--out", str(out), "--json"], cwd=ROOT, capture_output=True, text=True,
                          timeout=900, env={**os.environ, "REPAIR_AGENT_CACHE_DIR": str(base / "cache")})
    after = subprocess.run(["git", "-C", str(rk.path), "status", "--porcelain"], capture_output=True, text=True).stdout
    assert before == after == ""  # the clone is read, never written
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout)
    return out, {r["instance_id"]: r for r in summary["results"]}, summary


def test_good_instances_are_usable_and_listed(imported):
    out, by_id, summary = imported
    assert summary["usable"] == 2 and summary["skipped"] == 5
    for iid in ("rangekit__rangekit-1", "rangekit__rangekit-4"):
        assert by_id[iid]["status"] == "usable", by_id[iid]
        assert Path(by_id[iid]["manifest"]).parent == out
    listed = subprocess.run([sys.executable, "-m", "repair_agent", "scenarios", "--scenarios-dir", str(out), "--json"],
                            cwd=ROOT, capture_output=True, text=True, timeout=120)
    names = {s["name"] for s in json.loads(listed.stdout)}
    assert {"rangekit__rangekit-1", "rangekit__rangekit-4"} <= names
    assert not names & {"rangekit__rangekit-2", "rangekit__rangekit-3"}
    # version and environment_setup_commit choose the environment (see test_import_environment.py).
    assert by_id["rangekit__rangekit-1"]["ignored_fields"] == ["hints_text"]


def test_bad_instances_are_reported_with_their_id_and_skipped(imported):
    out, by_id, _ = imported
    assert by_id["rangekit__rangekit-2"]["status"] == "skipped"
    assert "already passes" in by_id["rangekit__rangekit-2"]["reason"]
    assert any(IN_RANGE in p for p in by_id["rangekit__rangekit-2"]["problems"])  # the id as the instance wrote it
    assert by_id["rangekit__rangekit-3"]["status"] == "skipped"
    assert "gold" in by_id["rangekit__rangekit-3"]["reason"]
    assert "no local clone of other/missing" in by_id["other__missing-5"]["reason"]
    assert by_id["line-5"]["status"] == "skipped" and "not JSON" in by_id["line-5"]["reason"]
    assert f"no commit {'f' * 40!r} in {out.parent / 'repos' / 'rangekit'}" in by_id["fork__rangekit-6"]["reason"]
    # Refused scenarios are kept to inspect, out of the listed directory.
    assert (out / "rejected" / "rangekit__rangekit-3.scenario.toml").is_file()
    assert not (out / "rangekit__rangekit-3.scenario.toml").exists()


def test_the_scenario_is_the_instance(imported):
    out, _, _ = imported
    s = load_manifest(out / "rangekit__rangekit-1.scenario.toml")
    assert s.spec.target_tests == (IN_RANGE,) and s.spec.pass_to_pass == tuple(P2P)
    assert "tests/test_core.py" in s.spec.protected
    assert s.goal.text.startswith("in_range(10, 0, 10) is False")
    # The buggy tree: base_commit + test_patch, and no history to read the fix from.
    assert not (s.repo / ".git").exists()
    assert "low <= value < high" in (s.repo / "src/rangekit/core.py").read_text()
    assert "test_in_range_includes_high" in (s.repo / "tests/test_core.py").read_text()
    # The gold patch is the reference fix, outside the tree a workspace is copied from.
    assert s.reference_fix is not None and not s.reference_fix.is_relative_to(s.repo)
    assert "low <= value <= high" in s.reference_fix.read_text()


def test_imported_scenario_runs_end_to_end(imported, docker_client, tmp_path):
    out, _, _ = imported
    record = execute_run(load_manifest(out / "rangekit__rangekit-1.scenario.toml"), SearchChooser(),
                         backend="docker", runs_dir=tmp_path / "runs", client=docker_client)
    assert record.status is StopReason.AWAITING_RELEASE_CONFIRMATION, record.detail
    assert record.u_trajectory[-1] == 0
    diff = (Path(record.run_dir) / "candidate.diff").read_text()
    assert "+    return low <= value <= high" in diff
    # The person's choice: the verified diff as a patch file instead of a branch.
    patch = tmp_path / "in_range.patch"
    proc = subprocess.run([sys.executable, "-m", "repair_agent", "--runs-dir", str(tmp_path / "runs"), "release",
                           record.run_id, "--confirm", "--yes", "--patch-file", str(patch)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert patch.read_text() == diff and str(patch) in proc.stdout and "src/rangekit/core.py" in proc.stdout


def test_instance_lists_may_be_json_strings_or_lists_and_must_be_node_ids():
    base = {"instance_id": "x", "repo": "a/b", "base_commit": "abcd", "patch": "p", "test_patch": "t",
            "problem_statement": "s"}
    a = SwebenchInstance.model_validate({**base, "FAIL_TO_PASS": '["t.py::a"]', "PASS_TO_PASS": "[]"})
    b = SwebenchInstance.model_validate({**base, "FAIL_TO_PASS": ["t.py::a"], "PASS_TO_PASS": []})
    assert a.FAIL_TO_PASS == b.FAIL_TO_PASS == ["t.py::a"] and a.PASS_TO_PASS == []
    for bad in ('["test_a (mod.TestX)"]', "not json", "[]"):
        with pytest.raises(ValueError):
            SwebenchInstance.model_validate({**base, "FAIL_TO_PASS": bad, "PASS_TO_PASS": []})
