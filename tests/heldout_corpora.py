"""Checks shared by the tests of the held-out corpora (sandbox_repos/holdout, sandbox_repos/holdout2):
bugs injected into PyPI projects that no chooser was developed on, for judging a chooser once.
Manifests are read as plain TOML: loading one would fetch its sdist."""
from __future__ import annotations

import tomllib
from collections import Counter
from pathlib import Path

from repair_agent.scenarios.scenario import discover

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT / "sandbox_repos"


def manifests(directory: Path) -> dict[str, dict]:
    return {p.name: tomllib.loads(p.read_text()) for p in sorted(directory.glob("*.scenario.toml"))}


def changed(diff: str, sign: str) -> list[str]:
    return [line[1:] for line in diff.splitlines() if line.startswith(sign) and not line.startswith(sign * 3)]


def files(diff: str) -> set[str]:
    return {line[len("+++ b/"):] for line in diff.splitlines() if line.startswith("+++ b/")}


def projects(directory: Path) -> set[str]:
    return {t for raw in manifests(directory).values() for t in raw["tags"] if t.startswith("project:")}


def assert_pinned_tagged_and_mirrored(directory: Path, tag: str) -> None:
    """12 scenarios, 4 per project, each from a pinned sdist, tagged with its corpus alone, a 12-step
    budget, a held-out file, and a reference fix that undoes exactly its bug."""
    found = manifests(directory)
    assert len(found) == 12
    per_project: Counter[str] = Counter()
    for name, raw in found.items():
        assert "repo" not in raw and raw["source"]["pypi"].count("==") == 1 and len(raw["source"]["sha256"]) == 64, name
        tags = raw["tags"]
        per_project[next(t for t in tags if t.startswith("project:"))] += 1
        assert [t for t in tags if t.startswith("corpus:")] == [tag], name
        assert raw["kind"] in tags and raw["budget"]["max_steps"] == 12, name
        assert (directory / raw["heldout"]).is_file() and raw["acceptance"]["target_tests"], name
        bug, fix = (directory / raw["bug_patch"]).read_text(), (directory / raw["reference_fix"]).read_text()
        assert changed(bug, "+") == changed(fix, "-") and changed(bug, "-") == changed(fix, "+"), name
        assert f"files:{len(files(fix))}" in tags, name
        # The baseline's recipe edits one line: a fix that adds lines has none (the baseline hands off).
        assert ("baseline" in raw) == ("fix:one-line" in tags), name
    assert sorted(per_project.values()) == [4, 4, 4], per_project


def assert_kinds_mixed_and_some_fixes_add_lines(directory: Path) -> None:
    found = manifests(directory).values()
    kinds = Counter(raw["kind"] for raw in found)
    assert len(kinds) >= 10, kinds  # a spread of kinds, not one mutation operator repeated
    multi = [raw["name"] for raw in found
             if len(changed((directory / raw["reference_fix"]).read_text(), "+")) > 1
             or len(changed((directory / raw["reference_fix"]).read_text(), "-")) == 0]
    assert len(multi) >= 3, multi
    assert all("fix:multi-line" in raw["tags"] for raw in found if raw["name"] in multi)


def assert_goals_describe_symptoms_not_the_fix(directory: Path) -> None:
    for raw in manifests(directory).values():
        goal = raw["goal"]["text"]
        fix = (directory / raw["reference_fix"]).read_text()
        assert not any(path in goal for path in files(fix)), raw["name"]
        added = [line.strip() for line in changed(fix, "+") if len(line.strip()) > 12]
        assert not any(line in goal for line in added), raw["name"]


def assert_no_shared_project_and_not_discovered(directory: Path, others: list[Path]) -> None:
    """No project in common with the other corpora; outside the default discovery (the caller clears
    the scenario path variable first)."""
    assert len(projects(directory)) == 3
    for other in others:
        assert projects(other) and not projects(directory) & projects(other), other
    found, _ = discover()
    names = {raw["name"] for raw in manifests(directory).values()}
    assert found and not names & set(found)
