"""The development corpus (sandbox_repos/dev): real-library bugs for tuning a chooser, kept apart
from the real-project corpus it is judged on. Read as plain TOML: loading a manifest would fetch
its sdist."""
from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from repair_agent.scenarios.scenario import SCENARIO_PATH_ENV, discover

ROOT = Path(__file__).resolve().parents[1]
DEV = ROOT / "sandbox_repos" / "dev"
REAL = ROOT / "sandbox_repos" / "real"


def _manifests(directory: Path) -> dict[str, dict]:
    return {p.name: tomllib.loads(p.read_text()) for p in sorted(directory.glob("*.scenario.toml"))}


def _changed(diff: str, sign: str) -> list[str]:
    return [line[1:] for line in diff.splitlines() if line.startswith(sign) and not line.startswith(sign * 3)]


def test_dev_corpus_is_pinned_tagged_and_one_statement_per_bug():
    manifests = _manifests(DEV)
    assert len(manifests) >= 12
    projects = set()
    for name, raw in manifests.items():
        assert "repo" not in raw and raw["source"]["pypi"].count("==") == 1 and len(raw["source"]["sha256"]) == 64, name
        project = next(t for t in raw["tags"] if t.startswith("project:"))
        projects.add(project)
        assert "corpus:dev" in raw["tags"] and "corpus:real" not in raw["tags"], name
        assert (DEV / raw["heldout"]).is_file() and raw["acceptance"]["target_tests"], name
        bug, fix = (DEV / raw["bug_patch"]).read_text(), (DEV / raw["reference_fix"]).read_text()
        assert bug.count("\n@@ ") == 1 and len(_changed(bug, "-")) <= 2, name  # one hunk, one or two lines
        assert _changed(bug, "+") == _changed(fix, "-") and _changed(bug, "-") == _changed(fix, "+"), name
    assert len(projects) >= 3, projects


def test_dev_corpus_shares_no_project_with_the_real_corpus_and_is_not_discovered_by_default(monkeypatch):
    def projects(directory: Path) -> set[str]:
        return {t for raw in _manifests(directory).values() for t in raw["tags"] if t.startswith("project:")}

    assert projects(DEV) and not projects(DEV) & projects(REAL)
    monkeypatch.delenv(SCENARIO_PATH_ENV, raising=False)
    found, _ = discover()
    dev_names = {raw["name"] for raw in _manifests(DEV).values()}
    assert found and not dev_names & set(found)


LATER_DEV = {"dev2": 20, "dev3": 12, "dev4": 12, "dev5": 12, "dev6": 12, "dev7": 12}   # the later tuning sets, each built blind to the chooser, and their sizes


@pytest.mark.parametrize("corpus", sorted(LATER_DEV))
def test_later_dev_corpora_are_pinned_tagged_inverse_and_not_discovered_by_default(monkeypatch, corpus):
    directory = ROOT / "sandbox_repos" / corpus
    manifests = _manifests(directory)
    assert len(manifests) >= LATER_DEV[corpus]
    others = {"corpus:dev", "corpus:real"} | {f"corpus:{c}" for c in LATER_DEV if c != corpus}
    for name, raw in manifests.items():
        assert raw["source"]["pypi"].count("==") == 1 and len(raw["source"]["sha256"]) == 64, name
        assert f"corpus:{corpus}" in raw["tags"] and not others & set(raw["tags"]), name
        assert (directory / raw["heldout"]).is_file() and raw["acceptance"]["target_tests"], name
        bug, fix = (directory / raw["bug_patch"]).read_text(), (directory / raw["reference_fix"]).read_text()
        assert _changed(bug, "+") == _changed(fix, "-") and _changed(bug, "-") == _changed(fix, "+"), name
        assert ("[baseline]" in (directory / name).read_text()) == ("fix:one-line" in raw["tags"]), name
    monkeypatch.delenv(SCENARIO_PATH_ENV, raising=False)
    found, _ = discover()
    assert found and not {raw["name"] for raw in manifests.values()} & set(found)
