"""Buggy trees built from a pristine repository plus a bug patch: errors name the field, the
cache is keyed by content, and concurrent loaders agree."""
from __future__ import annotations

import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from repair_agent.scenarios.scenario import BUILTIN_DIR, CACHE_ENV, ManifestError, load_manifest, materialize, tree_digest

MANIFEST = """name = "tk"
repo = "textkit"
bug_patch = "bug.diff"
kind = "operator"
[goal]
text = "t"
failure_signature = "s"
[acceptance]
target_tests = ["tests/test_wrap.py::test_wrap_word_that_fits_exactly_stays_on_the_line"]
"""


@pytest.fixture
def scenario_dir(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    shutil.copytree(BUILTIN_DIR / "textkit", tmp_path / "textkit")
    shutil.copyfile(BUILTIN_DIR / "bugs" / "textkit-wrap-exact-width.bug.diff", tmp_path / "bug.diff")
    (tmp_path / "tk.scenario.toml").write_text(MANIFEST)
    return tmp_path


def test_bug_patch_builds_the_buggy_tree_once(scenario_dir):
    first = load_manifest(scenario_dir / "tk.scenario.toml")
    assert first.source_repo == (scenario_dir / "textkit").resolve() and first.repo != first.source_repo
    assert "< width" in (first.repo / "src/textkit/wrap.py").read_text()
    assert "<= width" in (first.source_repo / "src/textkit/wrap.py").read_text()  # pristine untouched
    again = load_manifest(scenario_dir / "tk.scenario.toml")
    assert again.repo == first.repo


def test_cache_is_keyed_by_content(scenario_dir):
    before = load_manifest(scenario_dir / "tk.scenario.toml").repo
    readme = scenario_dir / "textkit" / "README.md"
    readme.write_text(readme.read_text() + "\nOne more line.\n")
    after = load_manifest(scenario_dir / "tk.scenario.toml").repo
    assert after != before and (after / "README.md").read_text().endswith("One more line.\n")
    assert tree_digest(before) != tree_digest(after)
    # Caches of the pristine tree's own tooling do not change the key.
    (scenario_dir / "textkit" / "__pycache__").mkdir()
    (scenario_dir / "textkit" / "__pycache__" / "x.pyc").write_bytes(b"junk")
    assert load_manifest(scenario_dir / "tk.scenario.toml").repo == after


def test_a_patch_that_does_not_apply_names_the_field(scenario_dir):
    (scenario_dir / "bug.diff").write_text((scenario_dir / "bug.diff").read_text().replace("<= width", "<= breadth"))
    with pytest.raises(ManifestError, match=r"field 'bug_patch': bug.diff does not apply"):
        load_manifest(scenario_dir / "tk.scenario.toml")
    # Nothing half-built is left behind to be mistaken for a finished tree.
    trees = scenario_dir / "cache" / "trees"
    assert not trees.exists() or not any(trees.iterdir())


def test_missing_patch_file_names_the_field(scenario_dir):
    (scenario_dir / "bug.diff").unlink()
    with pytest.raises(ManifestError, match=r"field 'bug_patch': .* is not a file"):
        load_manifest(scenario_dir / "tk.scenario.toml")


def test_concurrent_materialization_agrees(scenario_dir):
    source, patch = scenario_dir / "textkit", scenario_dir / "bug.diff"
    with ThreadPoolExecutor(8) as pool:
        trees = list(pool.map(lambda _: materialize(source, patch), range(8)))
    assert len(set(trees)) == 1
    assert [p.name for p in (scenario_dir / "cache" / "trees").iterdir()] == [trees[0].name]  # no staging left
    assert tree_digest(trees[0]) == tree_digest(materialize(source, patch))


def test_concurrent_materialization_across_processes(scenario_dir):
    code = ("import sys; from pathlib import Path; from repair_agent.scenarios.scenario import materialize; "
            "print(materialize(Path(sys.argv[1]), Path(sys.argv[2])))")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(scenario_dir / "textkit"), str(scenario_dir / "bug.diff")],
                              stdout=subprocess.PIPE, text=True) for _ in range(4)]
    outs = {p.communicate(timeout=120)[0].strip() for p in procs}
    assert all(p.returncode == 0 for p in procs) and len(outs) == 1
    assert "< width" in (Path(outs.pop()) / "src/textkit/wrap.py").read_text()
