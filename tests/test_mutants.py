"""The mutant importer (repair_agent/importers/mutants.py, whose command line is bench/mutants.py) on
one small project (iniconfig): well-formed scenarios, the same set for the same seed, every bug
breaks a test that its fix repairs, and every fix is the bug's inverse.

Uses the pinned iniconfig sdist (fetched once into the cache, as the real corpus does) and the
host's pytest; no container."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from repair_agent.importers import mutant_runs, mutants
from repair_agent.scenarios.scenario import apply_patch_to_tree, load_manifest

PER_PROJECT = 3
WRAPPER = Path(__file__).resolve().parents[1] / "bench" / "mutants.py"


@pytest.fixture(scope="module")
def project() -> mutant_runs.Project:
    return mutant_runs.corpus_projects()["iniconfig"]


@pytest.fixture(scope="module")
def generated(project, tmp_path_factory) -> tuple[Path, list[mutants.Mutant]]:
    out = tmp_path_factory.mktemp("mutants")
    assert mutants.main(["--projects", "iniconfig", "--per-project", str(PER_PROJECT), "--seed", "3",
                         "--out", str(out), "--workers", "1"]) == 0
    index = json.loads((out / "mutants.json").read_text())
    return out, [mutants.Mutant(**m) for m in index["mutants"]]


def _changed(diff: str, sign: str) -> list[str]:
    return [line[1:] for line in diff.splitlines() if line.startswith(sign) and not line.startswith(sign * 3)]


def _failing(project: mutant_runs.Project, tree: Path, tests: list[str]) -> list[str]:
    results, _ = mutant_runs.run_pytest(project, tree, tests)
    assert results is not None
    return [t for t in tests if results.get(t, {}).get("outcome") != "passed"]


def test_the_scenarios_are_well_formed(generated):
    out, found = generated
    assert len(found) == PER_PROJECT
    for m in found:
        scenario = load_manifest(out / f"{m.name}.scenario.toml")
        assert scenario.name == m.name and scenario.kind == m.kind and scenario.budget.max_steps == 12
        assert {"corpus:mutants", "project:iniconfig", m.kind} <= set(scenario.tags)
        targets = scenario.spec.target_tests
        assert 1 <= len({t.split("[")[0] for t in targets}) <= 3 and len(targets) <= 9
        assert scenario.spec.writable == ("src/**",)
        assert scenario.environment is not None and scenario.environment.install  # as the corpus declares it
        assert scenario.source is not None and scenario.source.pypi == "iniconfig==2.3.1"
        # The goal is the symptom, not the change: neither the mutated line nor the fix is quoted.
        changed = [line.strip() for line in _changed(m.bug_diff, "-") + _changed(m.bug_diff, "+")]
        assert m.goal and not any(line and line in scenario.goal.text for line in changed), m.goal
        if scenario.baseline is not None:
            assert scenario.baseline.search.strip() in _changed(m.bug_diff, "+")[0]


def test_the_same_seed_gives_the_same_mutants(project, generated):
    _, found = generated
    again, _ = mutants.generate(project, PER_PROJECT, 3, log=lambda m: None)
    assert [(m.name, m.bug_diff, m.targets, m.goal) for m in again] == \
        [(m.name, m.bug_diff, m.targets, m.goal) for m in found]


def test_each_bug_breaks_its_targets_and_its_fix_is_the_exact_inverse(project, generated, tmp_path):
    out, found = generated
    for m in found:
        assert _changed(m.bug_diff, "+") == _changed(m.fix_diff, "-")
        assert _changed(m.bug_diff, "-") == _changed(m.fix_diff, "+")
        tree = tmp_path / m.name / project.tree.name
        shutil.copytree(project.tree, tree)
        pristine = (tree / m.file).read_bytes()
        assert _failing(project, tree, m.targets) == []
        apply_patch_to_tree(tree, out / "bugs" / f"{m.name}.bug.diff")
        assert (tree / m.file).read_bytes() != pristine
        assert _failing(project, tree, m.targets) == m.targets, m.name
        apply_patch_to_tree(tree, out / "bugs" / f"{m.name}.fix.diff")
        assert (tree / m.file).read_bytes() == pristine, m.name


def test_no_mutant_touches_a_bug_of_the_corpus(project, generated):
    _, found = generated
    for m in found:
        taken = project.corpus_lines.get(m.file, set())
        assert not taken & set(range(m.first, m.last + 1)), m.name


def test_the_bench_command_line_is_the_importers(capsys):
    """bench/mutants.py, which the docs name, takes the importer's arguments and says its help."""
    with pytest.raises(SystemExit):
        mutants.main(["--help"])
    helped = subprocess.run([sys.executable, str(WRAPPER), "--help"], capture_output=True, text=True, timeout=60)
    assert helped.returncode == 0 and "--per-project" in helped.stdout and "--max-targets" in helped.stdout
    assert helped.stdout == capsys.readouterr().out
