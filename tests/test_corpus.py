"""The scenario corpus is what its manifests say: for EVERY scenario, the buggy tree fails
exactly its target tests and nothing else (a test skipped there may stay skipped), and the
reference fix (kept next to the manifest, never in a workspace) makes the target and the full
suite pass inside the writable scope, or, for a handoff scenario, lies outside it. The rules
themselves, on small scenarios made for them, and the `repair-agent check` command: test_check.py."""
from __future__ import annotations

import difflib
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from repair_agent.scenarios.corpus import check_corpus, render_table
from repair_agent.scenarios.scenario import discover
from verifier.heldout import HeldoutSpec, run_probe_local

SCENARIOS, ERRORS = discover()
ROOT = Path(__file__).resolve().parents[1]


def _check_all(tmp_path, scenarios, **kwargs):
    """What `repair-agent check` does, on these scenarios."""
    t0 = time.monotonic()
    checks = check_corpus(scenarios, tmp_path, workers=2, **kwargs)
    wall = time.monotonic() - t0
    print(f"\ncorpus check ({kwargs.get('backend')}): {len(checks)} scenarios in {wall:.1f}s")
    print(render_table(checks))
    bad = {c.scenario: c.problems for c in checks if not c.ok}
    assert not bad, json.dumps(bad, indent=1)
    return checks


def test_corpus_size_and_every_manifest_loads():
    assert not ERRORS, ERRORS
    repos = {(s.source_repo or s.repo).name for s in SCENARIOS.values()}
    assert len(SCENARIOS) >= 24 and len(repos) >= 3, (len(SCENARIOS), repos)
    assert sum(s.expected == "handoff_requested" for s in SCENARIOS.values()) >= 1
    assert len({s.kind for s in SCENARIOS.values()}) >= 8
    for s in SCENARIOS.values():
        assert s.kind != "unspecified" and s.tags and s.reference_fix, s.name
        assert s.heldout is not None, f"{s.name}: no held-out checks"
        # The reference fix is kept outside the repository that is copied into a workspace.
        assert not s.reference_fix.is_relative_to(s.source_repo), s.name


def test_scenarios_json_lists_the_corpus():
    proc = subprocess.run([sys.executable, "-m", "repair_agent.cli", "scenarios", "--json"], capture_output=True,
                          text=True, timeout=120, check=True)
    listed = json.loads(proc.stdout)
    assert len(listed) >= 24
    assert len({s["repo_name"] for s in listed}) >= 3
    assert all(s["kind"] != "unspecified" and s["tags"] for s in listed)
    assert {s["name"] for s in listed} == set(SCENARIOS)


@pytest.mark.corpus
def test_heldout_checks_catch_the_bug_and_pass_the_fix():
    """Every held-out file fails its buggy tree somewhere and passes its reference fix everywhere
    (scripts/check_heldout.py, the scenario author's own check, on the whole corpus)."""
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "check_heldout.py")], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{len(SCENARIOS)}/{len(SCENARIOS)} held-out files" in proc.stdout, proc.stdout


def test_the_trap_is_a_trap(tmp_path):
    """The most obvious one-line fix of the trap scenario makes its target pass and breaks
    pass-to-pass tests, so a chooser that stops at a green target test is caught."""
    from verifier import Verifier

    trap = SCENARIOS["stockroom-business-days-trap"]
    assert trap.kind == "trap"
    source = (trap.repo / "stockroom/dates.py").read_text()
    assert source.count("while day < end:") == 1
    obvious = "".join(difflib.unified_diff(source.splitlines(keepends=True),
                                           source.replace("while day < end:", "while day <= end:").splitlines(keepends=True),
                                           "a/stockroom/dates.py", "b/stockroom/dates.py"))
    verifier = Verifier(trap.spec, trap.repo, tmp_path / "v", backend="local")
    verifier.prepare()
    assert verifier.run_tests(obvious, "target_test").ok
    full = verifier.run_tests(obvious, "full_suite")
    assert not full.ok and len(full.failing) >= 2, full.failing
    # The held-out checks catch it too: the obvious fix counts the start day.
    tree = tmp_path / "obvious" / trap.repo.name
    shutil.copytree(trap.repo, tree)
    (tree / "stockroom/dates.py").write_text(source.replace("while day < end:", "while day <= end:"))
    held = run_probe_local(HeldoutSpec.load(trap.heldout), tree)
    failed = {c.name for c in held.cases if not c.ok}
    assert not held.ok and {"friday_to_monday", "same_business_day_is_zero"} <= failed, failed


def _one_of_each_repository() -> list:
    """The first scenario (by name) of every repository, and every hand-off scenario: every project
    the corpus is written in, and the check's second path (the fix outside the scope, verified with
    the scope widened)."""
    chosen: dict[str, object] = {}
    for s in sorted(SCENARIOS.values(), key=lambda s: s.name):
        key = s.name if s.expected == "handoff_requested" else (s.source_repo or s.repo).name
        chosen.setdefault(key, s)
    return list(chosen.values())


# Every suite run checks one scenario of each repository and every hand-off in the real image (the
# verifier's paths; each check costs its containers); `pytest -m slow_corpus tests/test_corpus.py`
# and `repair-agent check` check all of them, and every sweep of the corpus runs all of them.
@pytest.mark.docker
@pytest.mark.corpus
@pytest.mark.parametrize("which", ["repositories", pytest.param("all", marks=pytest.mark.slow_corpus)])
def test_corpus_check_docker(tmp_path, docker_client, sandbox_image, which):
    """The property in the real sandbox image (Debian's pytest 7.2, Python 3.11), as runs see it."""
    scenarios = _one_of_each_repository() if which == "repositories" else list(SCENARIOS.values())
    repos = {(s.source_repo or s.repo).name for s in SCENARIOS.values()}
    assert which == "all" or {(s.source_repo or s.repo).name for s in scenarios} == repos
    assert which == "all" or {s.name for s in scenarios} >= {s.name for s in SCENARIOS.values()
                                                             if s.expected == "handoff_requested"}
    _check_all(tmp_path, scenarios, backend="docker", client=docker_client, image=sandbox_image)
