"""`[environment] python = "3.9" | "3.13"`: the sandbox built on the Debian release that ships that
Python (bullseye, trixie), by debootstrap like the default bookworm base when no registry answers.
A scenario whose suite checks the interpreter's version is repaired end to end through the CLI:
the sandbox's tools and the verifier's checks all run in that Python."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import USER_MANIFEST
from repair_agent.sandbox.environment import EnvironmentSection

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[1]


def test_python_and_base_image_exclude_each_other():
    assert EnvironmentSection(python="3.9").python == "3.9"
    for bad in ({"python": "3.9", "base_image": "python:3.9-slim"}, {"python": "3.10"}):
        with pytest.raises(ValueError):
            EnvironmentSection.model_validate(bad)


PYTHONS = ("3.9", "3.13")


def _scenario(root: Path, python: str) -> Path:
    """The word-count scenario for `python` under root/scenarios; returns its manifest."""
    # src/ on the path by a conftest.py: bullseye's pytest 6.0 has no `pythonpath` setting.
    repo = root / "scenarios" / "wordy"
    (repo / "src/wordy").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "conftest.py").write_text("import os, sys\n\nsys.path.insert(0, os.path.join(os.path.dirname(__file__), 'src'))\n")
    (repo / "src/wordy/__init__.py").write_text('def count_words(text):\n    return len(text.split(" "))\n')
    (repo / "tests/test_words.py").write_text(
        "from wordy import count_words\n\n\ndef test_single_word():\n    assert count_words('hello') == 1\n\n\n"
        "def test_repeated_spaces():\n    assert count_words('a   b') == 2\n")
    major, minor = python.split(".")
    (repo / "tests/test_python.py").write_text(
        f"import sys\n\n\ndef test_interpreter():\n    assert sys.version_info[:2] == ({major}, {minor})\n")
    manifest = repo.parent / "word-count.scenario.toml"
    manifest.write_text(USER_MANIFEST + f'[environment]\npython = "{python}"\n')
    return manifest


@pytest.fixture(scope="module")
def images(tmp_path_factory, sandbox_image):
    """`repair-agent image` for each Python, all at once (each build waits mostly on the Debian mirror):
    python -> (its scenario's manifest, the command's environment, its exit code, stdout, stderr)."""
    started = {}
    for python in PYTHONS:
        root = tmp_path_factory.mktemp(f"python{python}")
        manifest = _scenario(root, python)
        env = {**os.environ, "REPAIR_AGENT_CACHE_DIR": str(root / "cache")}
        started[python] = (manifest, env, subprocess.Popen(
            [sys.executable, "-m", "repair_agent", "image", "--scenario", "word-count", "--scenarios-dir",
             str(manifest.parent)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env))
    built = {}
    try:
        for python, (manifest, env, proc) in started.items():
            out, err = proc.communicate(timeout=900)
            built[python] = (manifest, env, proc.returncode, out, err)
    finally:
        for _, _, proc in started.values():   # a build that timed out takes none of the others with it
            proc.kill()
    return built


@pytest.mark.parametrize("python", PYTHONS)
def test_a_scenario_runs_in_another_python(python, images, tmp_path, docker_client):
    manifest, env, code, out, err = images[python]
    assert code == 0, err[-2000:]
    tag = out.strip()
    said = docker_client.containers.run(tag, ["python3", "-c", "import sys, pytest, pytest_timeout; "
                                              "print('%d.%d' % sys.version_info[:2])"], remove=True)
    assert said.decode().strip() == python
    run = subprocess.run([sys.executable, "-m", "repair_agent", "run", "word-count", "--scenarios-dir",
                          str(manifest.parent), "--chooser", "baseline", "--runs-dir", str(tmp_path / "runs"),
                          "--json"], cwd=ROOT, capture_output=True, text=True, timeout=900, env=env)
    record = json.loads(run.stdout)
    # Green: the target passes and the suite (its version check included) passes in that Python.
    assert record["status"] == "awaiting_release_confirmation", (record["status"], record["detail"],
                                                                 run.stderr[-2000:])
