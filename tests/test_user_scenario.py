"""A scenario a user writes for their own repository: nothing is discount-specific."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

MANIFEST = """
name = "word-count"
repo = "wordy"
[goal]
text = "count_words must ignore repeated spaces"
failure_signature = "assert 4 == 2"
[acceptance]
target_tests = ["tests/test_words.py::test_repeated_spaces"]
writable = ["src/**"]
[budget]
max_steps = 6
[baseline]
search = 'text.split(" ")'
replace = "text.split()"
"""


def make_user_scenario(root: Path) -> Path:
    repo = root / "wordy"
    (repo / "src/wordy").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["src"]\ntestpaths = ["tests"]\n')
    (repo / "src/wordy/__init__.py").write_text(
        'def count_words(text):\n    """Number of words in text."""\n    return len([w for w in text.split(" ")])\n')
    (repo / "tests/test_words.py").write_text(
        "from wordy import count_words\n\n\n"
        "def test_single_word():\n    assert count_words('hello') == 1\n\n\n"
        "def test_two_words():\n    assert count_words('hello world') == 2\n\n\n"
        "def test_repeated_spaces():\n    assert count_words('a   b') == 2\n")
    manifest = root / "word-count.scenario.toml"
    manifest.write_text(MANIFEST)
    return manifest


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "repair_agent", *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


def test_user_scenarios_are_listed_from_a_directory(tmp_path):
    make_user_scenario(tmp_path)
    proc = cli("scenarios", "--json", "--scenarios-dir", str(tmp_path))
    names = {s["name"]: s for s in json.loads(proc.stdout)}
    assert {"discount-bug", "word-count"} <= names.keys()
    assert names["word-count"]["repo"] == str((tmp_path / "wordy").resolve())


@pytest.mark.docker
def test_a_user_scenario_runs_end_to_end_in_docker(docker_client, sandbox_image, tmp_path):
    manifest = make_user_scenario(tmp_path)
    proc = cli("run", str(manifest), "--json", "--runs-dir", str(tmp_path / "runs"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = json.loads(proc.stdout)
    assert out["scenario"] == "word-count" and out["u_trajectory"][0] == 3 and out["u_trajectory"][-1] == 0
    report = json.loads((Path(out["run_dir"]) / "report.json").read_text())
    assert [v["summary"] for v in report["verdicts"]][:2] == ["target_test: 1/1 passed", "full_suite: 3/3 passed"]
    assert "text.split()" in (Path(out["run_dir"]) / "candidate.diff").read_text()


def test_without_a_baseline_recipe_the_baseline_hands_over(tmp_path):
    manifest = make_user_scenario(tmp_path)
    manifest.write_text(MANIFEST.split("[baseline]")[0])
    proc = cli("run", str(manifest), "--json", "--sandbox", "local", "--runs-dir", str(tmp_path / "runs"))
    out = json.loads(proc.stdout)
    assert proc.returncode == 10 and "no [baseline] recipe" in out["detail"]
