"""`repair-agent run --repo` on a scratch copy of a real project, then `release --confirm`.

The project is inflection 0.5.1 from its PyPI sdist (pinned by sha256), put under git, with a
regression committed on top and uncommitted work in the tree (an edited README, an untracked file,
an ignored log). Where PyPI cannot be reached the same steps run on the rangekit project the import
tests build. Everything goes through the real CLI and Docker:

- the run repairs HEAD + the uncommitted changes, and PATH is byte for byte the same afterwards
  (every file, .git included, hashed before and after);
- release makes a new branch in PATH (HEAD -> a commit of the uncommitted changes -> the repair),
  says the branch, the commit and the files, and leaves the working tree, the index and the
  checked-out branch alone.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import git
import pytest

from helpers import committed_tree
from rangekit_project import build_rangekit
from verifier.trees import extract_tar

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[1]
SDIST = "inflection==0.5.1"
SDIST_SHA256 = "1a29730d366e996aaacffb2f1f1cb9593dc38e2ddd30c91250c6dde09ea9b417"
WHO = git.Actor("Project Dev", "dev@example.org")


def _inflection(base: Path) -> tuple[Path, str, str] | None:
    """The sdist as a git repository with a regression commit; None when PyPI cannot be reached."""
    dl = base / "sdist"
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-binary", ":all:", "--no-deps",
                           "--disable-pip-version-check", SDIST, "-d", str(dl)], capture_output=True, timeout=180)
    archives = list(dl.glob("inflection-0.5.1.tar.gz")) if proc.returncode == 0 else []
    if not archives:
        return None
    assert hashlib.sha256(archives[0].read_bytes()).hexdigest() == SDIST_SHA256, "the sdist is not the pinned one"
    extract_tar(archives[0], base / "unpacked")  # owned by this user, as a person's own checkout is
    path = base / "unpacked" / "inflection-0.5.1"
    repo = git.Repo.init(path, initial_branch="main")
    repo.git.add(A=True)
    repo.index.commit("inflection 0.5.1", author=WHO, committer=WHO)
    code = path / "inflection/__init__.py"
    text = code.read_text()
    assert "return string[0].lower() + camelize(string)[1:]" in text
    code.write_text(text.replace("return string[0].lower() + camelize(string)[1:]",
                                 "return string[0].upper() + camelize(string)[1:]"))
    repo.git.add(A=True)
    repo.index.commit("camelize: tidy", author=WHO, committer=WHO)
    repo.close()
    return path, "test_inflection.py::test_camelize_with_lower_downcases_the_first_letter", "inflection/**"


def _rangekit(base: Path) -> tuple[Path, str, str]:
    rk = build_rangekit(base / "rangekit")
    repo = git.Repo(rk.path)
    repo.git.checkout(rk.initial, "--", "src")  # the in_range regression comes back
    repo.index.commit("core: simplify", author=WHO, committer=WHO)
    repo.close()
    return rk.path, "tests/test_core.py::test_in_range_includes_high", "src/**"


def changed_lines(diff: str) -> list[str]:
    return [line for line in diff.splitlines() if line[:1] in "+-" and not line.startswith(("+++", "---"))]


def tree_hash(root: Path) -> str:
    """Every file and symlink below root, .git included: paths, modes and bytes."""
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_symlink():
            h.update(f"L {rel} {os.readlink(p)}\n".encode())
        elif p.is_file():
            h.update(f"F {rel} {oct(p.stat().st_mode)} ".encode() + hashlib.sha256(p.read_bytes()).digest())
        else:
            h.update(f"D {rel}\n".encode())
    return h.hexdigest()


def cli(runs: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "repair_agent", "--runs-dir", str(runs), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=900,
                          env={**os.environ, "REPAIR_AGENT_RELEASER": "repo-owner"})


@pytest.fixture(scope="module")
def project(tmp_path_factory, docker_client, sandbox_image):
    base = tmp_path_factory.mktemp("user-repo")
    found = _inflection(base)
    if found is None:
        print("PyPI not reachable: running on the rangekit project instead of inflection's sdist")
    path, test, writable = found or _rangekit(base)
    # Uncommitted work the run must see, and an ignored file it must not.
    (path / "README.rst").open("a").write("\nLocal notes, not committed yet.\n")
    (path / "NOTES.txt").write_text("untracked and not ignored\n")
    (path / ".gitignore").write_text("*.log\n")
    (path / "debug.log").write_text("ignored\n")
    return path, test, writable


@pytest.fixture(scope="module")
def run(project, tmp_path_factory):
    path, test, writable = project
    runs = tmp_path_factory.mktemp("runs") / "runs"
    before = tree_hash(path)
    proc = cli(runs, "run", "--repo", str(path), "--test", test, "--writable", writable, "--chooser", "search",
               "--json")
    after = tree_hash(path)
    record = json.loads(proc.stdout) if proc.stdout.strip().startswith("{") else {}
    return {"before": before, "after": after, "proc": proc, "record": record, "runs": runs}


def test_run_repairs_the_repository_as_it_is_on_disk_and_leaves_it_untouched(project, run):
    path, _, _ = project
    assert run["record"].get("status") == "awaiting_release_confirmation", run["proc"].stderr[-3000:]
    assert run["before"] == run["after"], "run --repo modified the user's repository"
    scenario = json.loads((Path(run["record"]["run_dir"]) / "scenario.json").read_text())
    pristine = Path(scenario["repo"])
    # HEAD + uncommitted changes, ignored files left out, no .git.
    assert (pristine / "NOTES.txt").is_file() and "Local notes" in (pristine / "README.rst").read_text()
    assert not (pristine / "debug.log").exists() and not (pristine / ".git").exists()


def test_release_creates_the_branch_and_says_what_it_did(project, run):
    path, _, _ = project
    record, runs = run["record"], run["runs"]
    assert record.get("status") == "awaiting_release_confirmation", run["proc"].stderr[-3000:]
    repo = git.Repo(path)
    head, index = repo.head.commit.hexsha, (path / ".git/index").read_bytes()
    worktree = {p: p.read_bytes() for p in path.rglob("*") if p.is_file() and ".git" not in p.relative_to(path).parts}
    proc = cli(runs, "release", record["run_id"], "--confirm", "--yes")
    assert proc.returncode == 0, proc.stderr[-3000:]
    decision = json.loads((Path(record["run_dir"]) / "release.json").read_text())
    branch, commit = decision["branch"], decision["commit"]
    assert branch == f"repair-agent/{record['run_id']}"
    for said in (branch, commit, str(path), "README.rst", "NOTES.txt", *decision["files"]):
        assert said in proc.stdout, (said, proc.stdout)
    # The branch: HEAD -> the uncommitted changes -> the verified repair, and nothing else.
    tip = repo.commit(branch)
    assert tip.hexsha == commit and tip.parents[0].parents[0].hexsha == head
    assert sorted(tip.parents[0].stats.files) == sorted([".gitignore", "NOTES.txt", "README.rst"])
    candidate = (Path(record["run_dir"]) / "candidate.diff").read_text()
    assert sorted(tip.stats.files) == sorted(decision["files"]) and decision["files"]
    assert changed_lines(repo.git.diff(tip.parents[0].hexsha, tip.hexsha)) == changed_lines(candidate)
    assert "Verified-Diff-Sha256: " + record["diff_sha256"] in tip.message
    # The user's checkout is as it was: same branch, same index, same files.
    assert repo.head.commit.hexsha == head and repo.active_branch.name == "main"
    assert (path / ".git/index").read_bytes() == index
    assert worktree == {p: p.read_bytes() for p in path.rglob("*")
                        if p.is_file() and ".git" not in p.relative_to(path).parts}
    # The repaired tree passes the target test outside the sandbox too.
    check = path.parent / "check"
    extract_tar(None, check, fileobj=io.BytesIO(repo.git.archive(commit, stdout_as_string=False)))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", project[1]], cwd=check,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(check / "src") + os.pathsep + str(check)})
    assert done.returncode == 0, done.stdout[-2000:]


def test_run_repo_refuses_what_it_cannot_use(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    proc = cli(tmp_path / "runs", "run", "--repo", str(plain), "--test", "tests/test_a.py::test_a")
    assert proc.returncode == 2 and "is not a git repository" in proc.stderr
    rk = build_rangekit(tmp_path / "rk")
    proc = cli(tmp_path / "runs", "run", "--repo", str(rk.path))
    assert proc.returncode == 2 and "--test" in proc.stderr
    proc = cli(tmp_path / "runs", "run", "--repo", str(rk.path), "--test", "not-a-node-id")
    assert proc.returncode == 2 and "not a pytest node id" in proc.stderr


def test_the_environment_comes_from_the_repository_files(tmp_path):
    from repair_agent.importers.local_repo import repo_environment
    from repair_agent.sandbox.declared import read_declared

    assert repo_environment(tmp_path, "auto", print) is None  # nothing to install: the plain sandbox image
    (tmp_path / "setup.py").write_text("from setuptools import setup\nsetup(name='x')\n")
    assert repo_environment(tmp_path, "auto", print) == {"install": ["pip install --no-deps -e ."]}
    assert repo_environment(tmp_path, "none", print) is None
    (tmp_path / "requirements.txt").write_text("text-unidecode==1.3\n")
    assert read_declared(tmp_path).requirements == ["text-unidecode==1.3"]  # resolved to pins in Docker


def test_a_version_module_the_install_wrote_is_in_the_copy_and_never_an_uncommitted_change(tmp_path):
    from repair_agent.importers.local_repo import snapshot

    files = {"src/pkg/__init__.py": "from ._version import version\n", "tests/test_a.py": "def test_a():\n    pass\n",
             ".gitignore": "src/pkg/_version.py\n.venv/\n*.log\n"}
    repo_path = committed_tree(tmp_path / "proj", files)
    # What `pip install -e .` with setuptools-scm leaves, and what must stay out: a virtualenv's
    # packages (no tracked package around them), a log, a big file.
    (repo_path / "src/pkg/_version.py").write_text("version = '1.2.3'\n")
    (repo_path / ".venv/lib/python3.11/site-packages/six").mkdir(parents=True)
    (repo_path / ".venv/lib/python3.11/site-packages/six/__init__.py").write_text("x = 1\n")
    (repo_path / "run.log").write_text("log\n")
    (repo_path / "src/pkg/_big.py").write_text("x = 1\n" * 5000)
    (repo_path / ".gitignore").write_text(files[".gitignore"] + "src/pkg/_big.py\n")
    tree, origin = snapshot(repo_path, tmp_path / "cache")
    assert (tree / "src/pkg/_version.py").read_text() == "version = '1.2.3'\n"
    assert not (tree / ".venv").exists() and not (tree / "run.log").exists() and not (tree / "src/pkg/_big.py").exists()
    assert origin.generated == ["src/pkg/_version.py"]
    assert origin.uncommitted == [".gitignore"]  # the edited ignore file is a change; the version file is not
