"""The held-out corpus (sandbox_repos/holdout): bugs injected into three PyPI projects that no
chooser was developed on, for judging a chooser once. Read as plain TOML: loading a manifest
would fetch its sdist."""
from __future__ import annotations

import tomllib
from collections import Counter
from pathlib import Path

from repair_agent.scenario import SCENARIO_PATH_ENV, discover

ROOT = Path(__file__).resolve().parents[1]
HOLDOUT = ROOT / "sandbox_repos" / "holdout"
OTHER_CORPORA = [ROOT / "sandbox_repos" / "real", ROOT / "sandbox_repos" / "dev"]


def _manifests(directory: Path) -> dict[str, dict]:
    return {p.name: tomllib.loads(p.read_text()) for p in sorted(directory.glob("*.scenario.toml"))}


def _changed(diff: str, sign: str) -> list[str]:
    return [line[1:] for line in diff.splitlines() if line.startswith(sign) and not line.startswith(sign * 3)]


def _files(diff: str) -> set[str]:
    return {line[len("+++ b/"):] for line in diff.splitlines() if line.startswith("+++ b/")}


def _projects(directory: Path) -> set[str]:
    return {t for raw in _manifests(directory).values() for t in raw["tags"] if t.startswith("project:")}


def test_holdout_corpus_is_pinned_tagged_and_each_fix_mirrors_its_bug():
    manifests = _manifests(HOLDOUT)
    assert len(manifests) == 12
    per_project: Counter[str] = Counter()
    for name, raw in manifests.items():
        assert "repo" not in raw and raw["source"]["pypi"].count("==") == 1 and len(raw["source"]["sha256"]) == 64, name
        tags = raw["tags"]
        per_project[next(t for t in tags if t.startswith("project:"))] += 1
        assert "corpus:holdout" in tags and not {"corpus:real", "corpus:dev"} & set(tags), name
        assert raw["kind"] in tags and raw["budget"]["max_steps"] == 12, name
        assert (HOLDOUT / raw["heldout"]).is_file() and raw["acceptance"]["target_tests"], name
        bug, fix = (HOLDOUT / raw["bug_patch"]).read_text(), (HOLDOUT / raw["reference_fix"]).read_text()
        assert _changed(bug, "+") == _changed(fix, "-") and _changed(bug, "-") == _changed(fix, "+"), name
        assert f"files:{len(_files(fix))}" in tags, name
        # The baseline's recipe edits one line: a fix that adds lines has none (the baseline hands off).
        assert ("baseline" in raw) == ("fix:one-line" in tags), name
    assert sorted(per_project.values()) == [4, 4, 4], per_project


def test_holdout_corpus_mixes_bug_kinds_and_needs_more_than_one_line_sometimes():
    manifests = _manifests(HOLDOUT).values()
    kinds = Counter(raw["kind"] for raw in manifests)
    assert len(kinds) >= 10, kinds  # a spread of kinds, not one mutation operator repeated
    multi = [raw["name"] for raw in manifests
             if len(_changed((HOLDOUT / raw["reference_fix"]).read_text(), "+")) > 1
             or len(_changed((HOLDOUT / raw["reference_fix"]).read_text(), "-")) == 0]
    assert len(multi) >= 3, multi
    assert all("fix:multi-line" in raw["tags"] for raw in manifests if raw["name"] in multi)


def test_holdout_goals_describe_symptoms_not_the_fix():
    for raw in _manifests(HOLDOUT).values():
        goal = raw["goal"]["text"]
        fix = (HOLDOUT / raw["reference_fix"]).read_text()
        assert not any(path in goal for path in _files(fix)), raw["name"]
        added = [line.strip() for line in _changed(fix, "+") if len(line.strip()) > 12]
        assert not any(line in goal for line in added), raw["name"]


def test_holdout_corpus_shares_no_project_with_the_other_corpora_and_is_not_discovered_by_default(monkeypatch):
    assert len(_projects(HOLDOUT)) == 3
    for other in OTHER_CORPORA:
        assert _projects(other) and not _projects(HOLDOUT) & _projects(other), other
    monkeypatch.delenv(SCENARIO_PATH_ENV, raising=False)
    found, _ = discover()
    names = {raw["name"] for raw in _manifests(HOLDOUT).values()}
    assert found and not names & set(found)
