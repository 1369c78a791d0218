"""The real-suites corpus (sandbox_repos/real-suites, its README says why each scenario is there):
real bugs in PyPI projects whose own code or own test suites start processes and threads, import
ctypes, socket or subprocess, read /proc and /etc, set a trace function, read frames, compile
strings (a vendored six) and run doctests. The verifier's old in-process guard refused every one
of these suites; the Docker test asserts that `repair-agent check` now passes every scenario, i.e.
that a project's pristine suite is judged as a person's pytest would run it.

The fast tests read the manifests as plain TOML (loading one would fetch its sdist)."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from collections import Counter
from pathlib import Path

import pytest

from repair_agent.scenarios.scenario import SCENARIO_PATH_ENV, discover

ROOT = Path(__file__).resolve().parents[1]
SUITES = ROOT / "sandbox_repos" / "real-suites"
OTHER_CORPORA = [ROOT / "sandbox_repos" / d for d in ("real", "dev", "dev2", "dev3", "dev4", "dev5", "dev6", "dev7", "holdout", "holdout2")]

# What the corpus exists to prove runs: each entry needs at least one scenario with one of its tags.
MUST_COVER = {
    "a module importing ctypes, socket or subprocess at import time": {"imports:ctypes", "imports:socket",
                                                                       "imports:subprocess"},
    "a vendored six": {"vendored:six"},
    "code reading /proc or /etc": {"reads:proc", "reads:etc"},
    "sys.settrace": {"code:settrace"},
    "a suite using threads": {"suite:threads"},
    "a suite starting processes": {"suite:subprocesses", "suite:processes"},
    "doctests run by pytest": {"suite:doctest"},
    "a doctest as a target test": {"target:doctest"},
}


def _manifests() -> dict[str, dict]:
    return {p.name: tomllib.loads(p.read_text()) for p in sorted(SUITES.glob("*.scenario.toml"))}


def _changed(diff: str, sign: str) -> list[str]:
    return [line[1:] for line in diff.splitlines() if line.startswith(sign) and not line.startswith(sign * 3)]


def _files(diff: str) -> set[str]:
    return {line[len("+++ b/"):].strip() for line in diff.splitlines() if line.startswith("+++ b/")}


def _project(raw: dict) -> str:
    return next(t for t in raw["tags"] if t.startswith("project:"))


def test_the_corpus_is_pinned_tagged_and_each_fix_mirrors_its_bug():
    found = _manifests()
    assert len(found) >= 7 and "toolz-drop-off-by-one.scenario.toml" in found, sorted(found)
    per_project = Counter(_project(raw) for raw in found.values())
    assert len(per_project) >= 7 and "project:toolz" in per_project, per_project
    for name, raw in found.items():
        assert name == f"{raw['name']}.scenario.toml", name
        assert "repo" not in raw and raw["source"]["pypi"].count("==") == 1, name
        assert re.fullmatch(r"[0-9a-f]{64}", raw["source"]["sha256"]), name
        assert [t for t in raw["tags"] if t.startswith("corpus:")] == ["corpus:real-suites"], name
        assert raw["kind"] in raw["tags"] and raw["budget"]["max_steps"] == 12, name
        assert raw["acceptance"]["target_tests"] and "pass_to_pass" not in raw["acceptance"], name
        # Bytes, not text: PySnooper's sources (and so its diffs) use CRLF line endings.
        bug = (SUITES / raw["bug_patch"]).read_bytes().decode()
        fix = (SUITES / raw["reference_fix"]).read_bytes().decode()
        assert _changed(bug, "+") == _changed(fix, "-") and _changed(bug, "-") == _changed(fix, "+"), name
        assert _files(bug) == _files(fix) and f"files:{len(_files(fix))}" in raw["tags"], name
        # The baseline's recipe edits one line: a fix that adds lines has none.
        assert ("baseline" in raw) == ("fix:one-line" in raw["tags"]), name
        if "baseline" in raw:
            assert raw["baseline"]["search"].strip() in _changed(bug, "+")[0], name
        cases = tomllib.loads((SUITES / raw["heldout"]).read_text())["case"]
        assert 10 <= len(cases) <= 13, (name, len(cases))
        # The goal is an issue report: it never quotes the fix.
        added = [line.strip() for line in _changed(fix, "+") if len(line.strip()) > 12]
        assert not any(line in raw["goal"]["text"] for line in added), name


def test_the_corpus_covers_what_the_old_guard_refused():
    tags = {t for raw in _manifests().values() for t in raw["tags"]}
    missing = [what for what, wanted in MUST_COVER.items() if not wanted & tags]
    assert not missing, missing


def test_the_readme_describes_every_scenario_and_the_toolz_repository_command():
    readme = (SUITES / "README.md").read_text()
    for raw in _manifests().values():
        assert f"`{raw['name']}`" in readme, raw["name"]
    assert "repair-agent run --repo /tmp/toolz-repo" in readme
    for target in _manifests()["toolz-drop-off-by-one.scenario.toml"]["acceptance"]["target_tests"]:
        assert f"--test {target}" in readme, target


def test_no_bug_repeats_another_corpus_and_the_corpus_is_not_discovered_by_default(monkeypatch):
    ours = {_project(raw) for raw in _manifests().values()}
    # toolz is in the dev corpora too: a bug on a line one of theirs changes would be a duplicate.
    for other in OTHER_CORPORA:
        for path in other.glob("*.scenario.toml"):
            raw = tomllib.loads(path.read_text())
            if any(t in ours for t in raw.get("tags", ())) and raw.get("bug_patch"):
                theirs = _changed((other / raw["bug_patch"]).read_bytes().decode(), "-")
                for mine in _manifests().values():
                    if _project(mine) in raw["tags"]:
                        assert not set(theirs) & set(_changed((SUITES / mine["bug_patch"]).read_bytes().decode(), "-")), \
                            (path.name, mine["name"])
    monkeypatch.delenv(SCENARIO_PATH_ENV, raising=False)
    found, _ = discover()
    assert found and not {raw["name"] for raw in _manifests().values()} & set(found)


# Every suite run checks three, one per kind of thing the old guard refused: toolz (its own suite
# starts processes through multiprocessing), PySnooper (traces with sys.settrace, reads frames,
# starts threads) and boltons (doctests as targets). `pytest -m slow_corpus tests/test_real_suites.py`
# checks the other five (filelock's 100-thread suite and py-cpuinfo's self-spawning one take minutes).
FAST = ("toolz-drop-off-by-one", "pysnooper-thread-info-order", "boltons-chunked-fill-short")


@pytest.mark.docker
@pytest.mark.corpus
@pytest.mark.parametrize("which", ["fast", pytest.param("slow", marks=pytest.mark.slow_corpus)])
def test_every_real_suite_passes_the_corpus_check_in_docker(tmp_path, docker_client, sandbox_image, which):
    """`repair-agent check --scenarios-dir sandbox_repos/real-suites`, in the sandbox image and each
    scenario's environment image: the buggy tree fails exactly its targets, the reference fix passes
    them and the whole suite, inside the writable scope. With the old in-process guard (commit
    a6513ec) all eight failed here in prepare ("the pristine repository's suite trips the
    verifier's check process"); the README lists each refusal."""
    names = sorted(raw["name"] for raw in _manifests().values() if (raw["name"] in FAST) == (which == "fast"))
    proc = subprocess.run([sys.executable, "-m", "repair_agent", "check", "--scenarios-dir", str(SUITES),
                           "--runs-dir", str(tmp_path / "runs"), "--workers", "2", "--json", *names],
                          cwd=tmp_path, capture_output=True, text=True, timeout=3600)
    print(proc.stderr[-4000:])
    checks = json.loads(proc.stdout) if proc.stdout.strip().startswith("[") else None
    assert checks is not None, (proc.returncode, proc.stdout[-2000:], proc.stderr[-4000:])
    assert sorted(c["scenario"] for c in checks) == names
    bad = {c["scenario"]: c["problems"] for c in checks if not c["ok"]}
    assert not bad, json.dumps(bad, indent=1)
    assert proc.returncode == 0, proc.stderr[-2000:]
    for c in checks:
        assert c["buggy_tree_ok"] and c["reference_fix_ok"] and c["scope_ok"], c


@pytest.mark.docker
@pytest.mark.corpus
@pytest.mark.slow_corpus
def test_heldout_files_catch_the_bug_and_pass_the_fix(docker_client, sandbox_image):
    """scripts/check_heldout.py on the corpus: each held-out file fails somewhere on the buggy tree
    and passes everywhere on the fixed one (scenarios with an environment are probed in its image)."""
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "check_heldout.py"), "--scenarios-dir", str(SUITES)],
                          capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    n = len(_manifests())
    assert f"{n}/{n} held-out files" in proc.stdout, proc.stdout[-4000:]
