"""Imports with `--environment`: a small project whose code imports text-unidecode (a runtime
dependency, pinned in pyproject.toml), whose tests import six (declared nowhere) and use pytest-mock's
`mocker` fixture. Its fix commits become usable scenarios straight from `import commit --environment
auto` and `import swebench`: the environment is detected, resolved to pins, written into the
manifest and built once, the targets are found inside it, and commits of the project with the same
dependencies share one image. Real git, real PyPI (through the build's network), real Docker, the CLI.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import git
import pytest

from helpers import git_history

from repair_agent.scenarios.scenario import load_manifest

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[1]

CODE = '''\
"""Slugs."""
from text_unidecode import unidecode


def slug(text):
    return unidecode(text).lower().replace(" ", "-")


def words(text):
    return len(text.split(" "))
'''
TESTS = '''\
import six

from tinyslug import slug, words


def test_ascii():
    assert slug("Zurich") == "zurich"


def test_accents():
    assert slug("\u017dlu\u0165") == "zlut"


def test_text_type():
    assert isinstance(slug("a"), six.text_type)


def test_one_word():
    assert words("one") == 1


def test_mocked(mocker):
    fake = mocker.Mock(return_value=3)
    assert fake() == 3
'''
PYPROJECT = '''\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "tinyslug"
version = "{version}"
description = "{description}"
dependencies = ["text-unidecode==1.3"]
'''


@dataclass
class Tinyslug:
    path: Path
    initial: str
    fix_strip: str
    release: str
    fix_words: str


def build_tinyslug(path: Path) -> Tinyslug:
    (path / "src/tinyslug").mkdir(parents=True)
    (path / "tests").mkdir()
    (path / "src/tinyslug/__init__.py").write_text(CODE)
    (path / "tests/test_slug.py").write_text(TESTS)
    (path / "pyproject.toml").write_text(PYPROJECT.format(version="0.1.0", description="slugs"))
    commit = git_history(path, "Tinyslug Dev", "dev@tinyslug.example")

    initial = commit("initial")
    code = path / "src/tinyslug/__init__.py"
    code.write_text(CODE.replace('unidecode(text).lower()', 'unidecode(text).strip().lower()'))
    (path / "tests/test_slug.py").write_text(TESTS + '\n\ndef test_strip():\n    assert slug(" a b ") == "a-b"\n')
    fix_strip = commit("fix slug: strip surrounding spaces")
    # A release: a new version and description, the same dependencies.
    (path / "pyproject.toml").write_text(PYPROJECT.format(version="0.2.0", description="slugs, stripped"))
    release = commit("release 0.2.0")
    code.write_text(code.read_text().replace('text.split(" ")', "text.split()"))
    with (path / "tests/test_slug.py").open("a") as f:
        f.write('\n\ndef test_words_double_space():\n    assert words("a  b") == 2\n')
    fix_words = commit("fix words: runs of spaces are one separator")
    return Tinyslug(path, initial, fix_strip, release, fix_words)


@pytest.fixture(scope="module")
def tinyslug(tmp_path_factory):
    return build_tinyslug(tmp_path_factory.mktemp("envimport") / "tinyslug")


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory) -> Path:
    """One repair-agent cache for the tests that do not count what a fresh cache does: the pip wheel
    and tinyslug's resolution are fetched once. Each such test passes whichever of them runs first."""
    return tmp_path_factory.mktemp("envimport-cache")


def cli(*args: str, cache: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "repair_agent", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=1200, env={**os.environ, "REPAIR_AGENT_CACHE_DIR": str(cache)})


def test_fix_commits_with_a_dependency_become_scenarios_sharing_one_image(tinyslug, tmp_path, docker_client,
                                                                          sandbox_image, shared_cache):
    from repair_agent.sandbox.environment import environment_key, environment_tag
    from verifier.isolation import HardenedContainer

    cache = shared_cache
    # The sandbox image alone lacks text-unidecode: the targets cannot be found there.
    bare = cli("import", "commit", str(tinyslug.path), tinyslug.fix_strip, "--out", str(tmp_path / "bare"),
               "--environment", "none", "--json", cache=cache)
    (refused,) = json.loads(bare.stdout)["results"]
    assert bare.returncode == 1 and refused["status"] == "skipped" and not refused["target_tests"], refused

    found = {}
    for name, commit in (("strip", tinyslug.fix_strip), ("words", tinyslug.fix_words)):
        proc = cli("import", "commit", str(tinyslug.path), commit, "--out", str(tmp_path / name), "--environment",
                   "auto", "--json", cache=cache)
        assert proc.returncode == 0, proc.stderr[-3000:]
        (result,) = json.loads(proc.stdout)["results"]
        assert result["status"] == "usable", result
        found[name] = (result, proc.stderr)

    (strip, strip_log), (words, words_log) = found["strip"], found["words"]
    assert strip["target_tests"] == ["tests/test_slug.py::test_strip"]
    assert words["target_tests"] == ["tests/test_slug.py::test_words_double_space"]
    scenarios = [load_manifest(Path(r["manifest"])) for r in (strip, words)]
    env = scenarios[0].environment
    # Detected, pinned and written into the manifest: the declared dependency, the tests' undeclared
    # import (six) and the plugin their `mocker` fixture needs; the project itself installed editable.
    assert "text-unidecode==1.3" in env.packages and any(p.startswith("six==") for p in env.packages), env
    assert [p.split("==")[0] for p in env.plugins] == ["pytest-mock"] and env.install == ("pip install --no-deps -e .",)
    assert scenarios[1].environment == env
    # The targets were found inside the environment: the mocker test ran there, with the plugin loaded.
    source = json.loads((scenarios[0].repo.parent / "source.json").read_text())
    assert source["before"]["tests/test_slug.py::test_mocked"] == "passed"
    assert source["before"]["tests/test_slug.py::test_accents"] == "passed"
    # One image for both commits (another version and description, other code): the second import
    # neither resolved nor built anything (the first did, unless another test of this module had).
    base = docker_client.images.get(sandbox_image).id
    tags = {environment_tag(environment_key(s.environment, base, s.repo)) for s in scenarios}
    assert len(tags) == 1, tags
    assert "resolving" not in words_log and "building environment" not in words_log, words_log[-2000:]
    assert strip_log.count("building environment") <= 1
    image = tags.pop()
    docker_client.images.get(image)

    # pytest-timeout still works beside the environment's plugins (the verifier passes -o timeout=N).
    box = HardenedContainer(docker_client, image)
    try:
        res = box.exec(["sh", "-c", "mkdir -p /tmp/t && cd /tmp/t && printf '%s\\n' 'import time' "
                        "'def test_sleep():' '    time.sleep(30)' 'def test_mock(mocker):' "
                        "'    assert mocker.Mock(return_value=3)() == 3' > test_p.py && "
                        "python3 -m pytest -q -p no:cacheprovider -o timeout=2 test_p.py"], timeout_s=60)
    finally:
        box.close()
    assert "1 failed, 1 passed" in res.stdout.text and "Timeout" in res.stdout.text, res.stdout.text[-2000:]


def test_swebench_instances_of_one_version_share_one_environment(tinyslug, tmp_path, docker_client, sandbox_image):
    repo = git.Repo(tinyslug.path)

    def instance(commit: str, number: int) -> dict:
        parent = repo.commit(commit).parents[0].hexsha
        test_patch = repo.git.diff(parent, commit, "--", "tests") + "\n"
        patch = repo.git.diff(parent, commit, "--", "src") + "\n"
        added = [line[5:].split("(")[0] for line in test_patch.splitlines() if line.startswith("+def test_")]
        return {"instance_id": f"tinyslug__tinyslug-{number}", "repo": "tinyslug/tinyslug", "base_commit": parent,
                "patch": patch, "test_patch": test_patch, "problem_statement": f"bug {number}",
                "FAIL_TO_PASS": [f"tests/test_slug.py::{name}" for name in added], "PASS_TO_PASS": [],
                "version": "0.1", "environment_setup_commit": tinyslug.initial}

    jsonl = tmp_path / "instances.jsonl"
    jsonl.write_text("".join(json.dumps(instance(c, n)) + "\n"
                             for n, c in ((1, tinyslug.fix_strip), (2, tinyslug.fix_words))))
    repos = tmp_path / "repos"
    git.Repo.clone_from(str(tinyslug.path), repos / "tinyslug__tinyslug").close()
    out = tmp_path / "out"
    proc = cli("import", "swebench", str(jsonl), "--repos", str(repos), "--out", str(out), "--json",
               cache=tmp_path / "cache")
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout)["results"]
    assert [r["status"] for r in results] == ["usable", "usable"], results
    assert all("version" not in r["ignored_fields"] for r in results)
    envs = [load_manifest(Path(r["manifest"])).environment for r in results]
    assert envs[0] is not None and envs[0] == envs[1] and "text-unidecode==1.3" in envs[0].packages
    # Detected once for the (repo, version), on environment_setup_commit's tree: a fresh cache (this
    # test's own) resolves on every detection, so the resolutions count the detections.
    assert proc.stderr.count("resolving ") == 1, proc.stderr[-2000:]


def test_run_repo_detects_the_environment_of_the_repository(tinyslug, tmp_path, docker_client, sandbox_image,
                                                            shared_cache):
    """`run --repo` (default --environment auto) on a checkout with an uncommitted failing test: the
    copy (under RUNS/.cache, a dot directory) is read, its environment written into the generated
    manifest, and the pristine suite runs in it (without six and mocker it could not be collected)."""
    clone = tmp_path / "checkout"
    repo = git.Repo.clone_from(str(tinyslug.path), clone)
    repo.git.checkout(tinyslug.initial)
    repo.close()
    with (clone / "tests/test_slug.py").open("a") as f:
        f.write('\n\ndef test_strip():\n    assert slug(" a b ") == "a-b"\n')
    runs = tmp_path / "runs"
    proc = cli("run", "--repo", str(clone), "--test", "tests/test_slug.py::test_strip", "--chooser", "search",
               "--runs-dir", str(runs), "--json", cache=shared_cache)
    record = json.loads(proc.stdout)
    assert record["status"] in ("awaiting_release_confirmation", "handoff_requested", "step_budget"), record["detail"]
    (manifest,) = (runs / ".cache" / "local-repos").glob("*/local-*.scenario.toml")
    env = load_manifest(manifest).environment
    assert "text-unidecode==1.3" in env.packages and any(p.startswith("six==") for p in env.packages), env
    assert [p.split("==")[0] for p in env.plugins] == ["pytest-mock"]
    none = cli("run", "--repo", str(clone), "--test", "tests/test_slug.py::test_strip", "--chooser", "search",
               "--runs-dir", str(tmp_path / "bare"), "--environment", "none", "--json", cache=shared_cache)
    # The sandbox image alone cannot import the package: the target counts as failing (as SWE-bench
    # counts a collection error), no fix inside the repository makes it pass, and the cause is said.
    bare = json.loads(none.stdout)
    assert bare["status"] != "awaiting_release_confirmation", bare
    journal = (Path(bare["run_dir"]) / "journal.jsonl").read_text()
    assert "No module named" in journal, bare["detail"]


def test_an_environment_file_is_what_the_import_writes_and_runs_in(tinyslug, tmp_path, docker_client, sandbox_image,
                                                                   shared_cache):
    spec = tmp_path / "env.toml"
    spec.write_text('[environment]\npackages = ["text-unidecode==1.3", "six==1.16.0"]\n'
                    'plugins = ["pytest-mock==3.14.0"]\ninstall = ["pip install --no-deps -e ."]\n')
    proc = cli("import", "commit", str(tinyslug.path), tinyslug.fix_words, "--out", str(tmp_path / "out"),
               "--environment", str(spec), "--json", cache=shared_cache)
    (result,) = json.loads(proc.stdout)["results"]
    assert proc.returncode == 0 and result["status"] == "usable", (result, proc.stderr[-2000:])
    env = load_manifest(Path(result["manifest"])).environment
    assert env.packages == ("text-unidecode==1.3", "six==1.16.0") and env.plugins == ("pytest-mock==3.14.0",)
    assert "resolving" not in proc.stderr  # taken as written
    spec.write_text('packages = ["six"]\n')
    bad = cli("import", "commit", str(tinyslug.path), tinyslug.fix_words, "--out", str(tmp_path / "bad"),
              "--environment", str(spec), "--json", cache=shared_cache)
    (refused,) = json.loads(bad.stdout)["results"]
    assert bad.returncode == 1 and "'six' is not a pinned requirement" in refused["reason"], refused
