"""A project written the way real ones are, imported with `--environment auto` in Docker, as the
real fix commits of docs/real-commits.md are: a version only setuptools-scm knows (no .git in an
exported tree) written to a module the package imports, coverage, `-v` and `-x` in pytest's addopts, a
pytest pin the image does not have, a test that fails wherever it is not the project's own CI, and
a bug that loops forever."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from helpers import git_history

ROOT = Path(__file__).resolve().parents[1]

PYPROJECT = '''\
[build-system]
requires = ["setuptools>=64", "setuptools-scm>=8"]
build-backend = "setuptools.build_meta"

[project]
name = "almanac"
dynamic = ["version"]
dependencies = ["text-unidecode==1.3"]
classifiers = ["Programming Language :: Python :: 3.11"]

[project.optional-dependencies]
tests = ["pytest==6.*", "pytest-cov"]

[tool.setuptools_scm]
version_file = "src/almanac/_version.py"

[tool.pytest.ini_options]
addopts = "-v -x --cov=almanac"
'''
CODE = '''\
from text_unidecode import unidecode

from ._version import version as __version__


def days_in(month, year):
    if month == 2:
        return 28
    return 30 if month in (4, 6, 9, 11) else 31


def settle(balance):
    while balance != 0:
        balance -= 1
    return "settled"


def title(name):
    return unidecode(name).title()
'''
TESTS = '''\
from almanac import days_in, settle, title


def test_april():
    assert days_in(4, 2023) == 30


def test_settle_positive():
    assert settle(3) == "settled"


def test_title():
    assert title("ete") == "Ete"
'''
ENV_TEST = '''\
import os


def test_runs_on_the_release_machine():
    assert os.environ.get("ALMANAC_RELEASE") == "1"
'''


@pytest.fixture(scope="module")
def almanac(tmp_path_factory) -> tuple[Path, str, str]:
    path = tmp_path_factory.mktemp("habits") / "almanac"
    for rel, text in {"pyproject.toml": PYPROJECT, "src/almanac/__init__.py": CODE, "tests/test_days.py": TESTS,
                      "tests/test_env.py": ENV_TEST, ".gitignore": "src/almanac/_version.py\n"}.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(text)
    commit = git_history(path, "Almanac Dev", "dev@almanac.example")

    commit("initial")
    code = path / "src/almanac/__init__.py"
    code.write_text(code.read_text().replace(
        "        return 28", "        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28"))
    (path / "tests/test_days.py").write_text(TESTS + "\n\ndef test_leap_february():\n    assert days_in(2, 2024) == 29\n")
    leap = commit("days_in: February has 29 days in a leap year")
    code.write_text(code.read_text().replace("while balance != 0:", "while balance > 0:"))
    (path / "tests/test_days.py").write_text((path / "tests/test_days.py").read_text()
                                             + "\n\ndef test_settle_negative():\n    assert settle(-2) == \"settled\"\n")
    loop = commit("settle: a negative balance looped forever")
    return path, leap, loop


def cli(*args: str, cache: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "repair_agent", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=1200, env={**os.environ, "REPAIR_AGENT_CACHE_DIR": str(cache)})


def test_a_real_projects_fix_commits_import_as_they_are(almanac, tmp_path, docker_client, sandbox_image):
    path, leap, loop = almanac
    out, cache = tmp_path / "imported", tmp_path / "cache"
    for rev in (leap, loop):
        proc = cli("import", "commit", str(path), rev, "--out", str(out), "--environment", "auto", "--json",
                   cache=cache)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        (result,) = json.loads(proc.stdout)["results"]
        assert result["status"] == "usable", result
        # The test that fails off the project's CI fails with the fix too: named, not a refusal.
        assert result["known_failing"] == ["tests.test_env::test_runs_on_the_release_machine"]
    loaded = [tomllib.loads(p.read_text()) for p in out.glob("*.scenario.toml")]
    manifests = {json.loads((out / "data" / m["name"] / "source.json").read_text())["fix_commit"]: m for m in loaded}
    leap_m, loop_m = manifests[leap], manifests[loop]
    assert leap_m["acceptance"]["target_tests"] == ["tests/test_days.py::test_leap_february"]
    env = leap_m["environment"]
    # pytest is the image's (the pin is not followed); coverage is off, not writing into the tree.
    assert not any(p.startswith("pytest==") for p in env["packages"] + env.get("plugins", []))
    assert any(p.startswith("pytest-cov==") for p in env["packages"] + env.get("plugins", []))
    assert env["env"] == {"PYTEST_ADDOPTS": "--no-cov"}
    # The version module setuptools-scm writes at install is in the imported tree, as in a checkout.
    version = out / "data" / leap_m["name"] / "almanac" / "src/almanac/_version.py"
    assert "0.0.0" in version.read_text()
    # The looping bug: its target failed by the per-test limit fitted to the suite's speed, so it
    # fails alone in seconds instead of taking the suite's whole limit with it.
    assert loop_m["acceptance"]["target_tests"] == ["tests/test_days.py::test_settle_negative"]
    assert loop_m["acceptance"]["per_test_timeout_s"] == 2.0
    source = json.loads((out / "data" / loop_m["name"] / "source.json").read_text())
    assert source["before"]["tests/test_days.py::test_settle_negative"] == "failed"
    # The stored scenarios pass the corpus check as written (known failures declared).
    proc = cli("check", "--scenarios-dir", str(out), cache=cache)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "2/2 scenario(s) pass the corpus check" in proc.stdout
