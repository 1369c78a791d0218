"""Trees, archives and import paths handled as hostile.

Each test is an attack that once worked, through the real CLI, real git and (for `run --repo`)
real Docker:

- a scenario manifest's pinned sdist (the pin authenticates nothing when the manifest's author is
  the attacker) whose members defeat tarfile's `data` filter (a symlink chain past PATH_MAX, the
  CVE-2025-4517 shape), or carry hard links, devices, FIFOs, absolute or escaping names: listing
  scenarios must write nothing outside the cache and name the refusal;
- a user's repository with internal links, a dangling link, a link to a host file and a link to
  /dev/zero: `run --repo` keeps the internal and dangling links as links and no byte of the host
  file reaches the run's records, the workspace or the environment build;
- a scenario tree with a FIFO and a link to /dev/zero: listing must not hang;
- SWE-bench lines whose `repo` climbs out of --repos (`x/..`) or whose clone is a link out of it,
  and git sources with an absolute link: named refusals, never a traceback.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import stat
import subprocess
import sys
import tarfile
import uuid
import zipfile
from pathlib import Path

import git
import pytest

from helpers import PypiIndex
from rangekit_project import build_rangekit
from verifier.trees import TreeLimits, TreeRefused, copy_tree, extract_tar, extract_zip, tree_sha256

ROOT = Path(__file__).resolve().parents[1]
WHO = git.Actor("Tree Dev", "dev@trees.example")
BUG = "tests/test_core.py::test_in_range_includes_high"


def cli(*args: str, timeout: float = 120, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "repair_agent", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "NO_PROXY": "127.0.0.1,localhost", **(env or {})})


def files_containing(root: Path, marker: bytes) -> list[str]:
    """Regular files below root (links never followed) whose bytes contain marker."""
    hits = []
    for top, _, names in os.walk(root):
        for name in names:
            path = Path(top) / name
            if path.is_file() and not path.is_symlink() and marker in path.read_bytes():
                hits.append(str(path))
    return hits


def listed(proc: subprocess.CompletedProcess) -> set[str]:
    """The scenario names `scenarios --json` printed (built-in ones included)."""
    return {s["name"] for s in json.loads(proc.stdout)}


def manifest(directory: Path, name: str, body: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.scenario.toml"
    path.write_text(f'name = "{name}"\n{body}\n[goal]\ntext = "g"\nfailure_signature = "s"\n'
                    '[acceptance]\ntarget_tests = ["tests/test_a.py::test_a"]\n')
    return path


# -- archives: a pinned sdist from a PyPI-style index on localhost ------------------------------------

@pytest.fixture
def index(tmp_path):
    """A PyPI-style JSON API and file host on localhost serving `files`; the cache under tmp_path."""
    with PypiIndex(digests=False) as served:
        yield served.files, {"REPAIR_AGENT_PYPI_URL": served.url,
                             "REPAIR_AGENT_CACHE_DIR": str(tmp_path / "area" / "cache")}


def _tar(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def _info(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mode = kind, link, 0o755 if kind == tarfile.DIRTYPE else 0o644
    return info


def _path_max_chain(top: str, payload: bytes) -> list[tuple[tarfile.TarInfo, bytes | None]]:
    """CVE-2025-4517's shape: links through long directory names until realpath() gives up on
    ENAMETOOLONG and answers lexically, so the `data` filter sees `escape` inside while the kernel
    resolves it to the directory above the extraction root."""
    comp, steps, path, members = "d" * 247, "abcdefghijklmnop", "", []
    for step in steps:
        members += [(_info(os.path.join(top, path, comp), tarfile.DIRTYPE), None),
                    (_info(os.path.join(top, path, step), tarfile.SYMTYPE, comp), None)]
        path = os.path.join(path, comp)
    linkpath = os.path.join(*steps, "l" * 254)
    members += [(_info(os.path.join(top, linkpath), tarfile.SYMTYPE, "../" * len(steps)), None),
                (_info(os.path.join(top, "escape"), tarfile.SYMTYPE, linkpath + "/.." * 6), None),
                (_info(os.path.join(top, "escape", "pwned.txt")), payload)]
    return members


def _list_with_sdist(index, tmp_path: Path, members) -> tuple[subprocess.CompletedProcess, Path]:
    files, env = index
    files["toy-1.0.tar.gz"] = data = _tar(members)
    scenarios = tmp_path / "area" / "scenarios"
    manifest(scenarios, "toy", f'[source]\npypi = "toy==1.0"\nsha256 = "{hashlib.sha256(data).hexdigest()}"')
    return cli("scenarios", "--scenarios-dir", str(scenarios), "--json", env=env), tmp_path / "area"


def test_sdist_symlink_chain_past_path_max_writes_nothing_outside_the_cache(index, tmp_path):
    marker = f"PWNED-{uuid.uuid4().hex}".encode()
    proc, area = _list_with_sdist(index, tmp_path, _path_max_chain("toy-1.0", marker))
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "toy" not in listed(proc), "a refused source must not be listed as a scenario"
    assert "skipping an unusable manifest" in proc.stderr and "below a link" in proc.stderr, proc.stderr
    # Nothing written anywhere above the cache's unpack directory (the area holds cache and manifests).
    assert files_containing(tmp_path, marker) == [], "an sdist member was written outside its tree"


@pytest.mark.parametrize("member, why", [
    ((_info("toy-1.0/hard", tarfile.LNKTYPE, "toy-1.0/setup.py"), None), "is a hard link"),
    ((_info("toy-1.0/null", tarfile.CHRTYPE), None), "is a device"),
    ((_info("toy-1.0/pipe", tarfile.FIFOTYPE), None), "is a FIFO"),
    ((_info("/tmp/abs-member.txt"), b"x"), "absolute or escaping"),
    ((_info("toy-1.0/../../escaped.txt"), b"x"), "absolute or escaping"),
    ((_info("toy-1.0/out", tarfile.SYMTYPE, "../../.."), None), "links out of the tree"),
    ((_info("toy-1.0/etc", tarfile.SYMTYPE, "/etc"), None), "links out of the tree"),
])
def test_sdist_link_special_and_escaping_members_are_refused(index, tmp_path, member, why):
    proc, _ = _list_with_sdist(index, tmp_path, [(_info("toy-1.0/setup.py"), b"setup()\n"), member])
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "toy" not in listed(proc) and why in proc.stderr, proc.stderr
    assert not (tmp_path / "escaped.txt").exists() and not Path("/tmp/abs-member.txt").exists()


def test_archive_bounds_and_zip_links_are_refused(tmp_path):
    """The bounds (a tar bomb's member count and bytes) and a zip's link member; what stays inside is kept."""
    small = TreeLimits(max_entries=5, max_bytes=1000, max_file_bytes=600)
    many = _tar([(_info(f"p/{i}.txt"), b"x") for i in range(6)])
    with pytest.raises(TreeRefused, match="more than 5 members"):
        extract_tar(None, tmp_path / "a", fileobj=io.BytesIO(many), limits=small)
    big = _tar([(_info("p/a.bin"), b"0" * 500), (_info("p/b.bin"), b"0" * 501)])
    with pytest.raises(TreeRefused, match="more than 1000 bytes"):
        extract_tar(None, tmp_path / "b", fileobj=io.BytesIO(big), limits=small)
    archive = tmp_path / "s.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("p/ok.py", "x = 1\n")
        link = zipfile.ZipInfo("p/passwd")
        link.external_attr = (0o120777 << 16)
        zf.writestr(link, "/etc/passwd")
    with pytest.raises(TreeRefused, match="link or special file"):
        extract_zip(archive, tmp_path / "c")
    good = _tar([(_info("p/real.py"), b"x = 1\n"), (_info("p/alias.py", tarfile.SYMTYPE, "real.py"), None),
                 (_info("p/gone", tarfile.SYMTYPE, "missing.txt"), None)])
    extract_tar(None, tmp_path / "d", fileobj=io.BytesIO(good))
    assert os.readlink(tmp_path / "d/p/alias.py") == "real.py" and os.readlink(tmp_path / "d/p/gone") == "missing.txt"


@pytest.mark.parametrize("without_filter", [False, True], ids=["this-interpreter", "without-the-data-filter"])
def test_an_archive_gives_names_and_contents_never_owners_or_special_bits(tmp_path, monkeypatch, without_filter):
    """As this interpreter extracts (with the `data` filter from Python 3.11.4 on) and as one without
    the filter does (Debian 12's 3.11.2), the same tree: the archive's owner, setuid bit and group/other
    write bits are not taken, the owner's executable bit is; an escaping member and a member below a
    link are refused either way."""
    import verifier.trees as trees

    if without_filter:
        monkeypatch.setattr(trees, "DATA_FILTER", None)
    tool, notes = _info("p/bin/tool"), _info("p/notes.txt")
    tool.mode, notes.mode = 0o4777, 0o666
    for info in (tool, notes):
        info.uid = info.gid = 4242
        info.uname = info.gname = "someone"
    extract_tar(None, tmp_path / "t", fileobj=io.BytesIO(_tar([(_info("p", tarfile.DIRTYPE), None),
                                                                (tool, b"#!/bin/sh\n"), (notes, b"hi\n")])))
    made = {p.relative_to(tmp_path / "t").as_posix(): p for p in (tmp_path / "t").rglob("*")}
    assert sorted(made) == ["p", "p/bin", "p/bin/tool", "p/notes.txt"]
    assert made["p/notes.txt"].read_bytes() == b"hi\n" and made["p/bin/tool"].read_bytes() == b"#!/bin/sh\n"
    assert stat.S_IMODE(made["p/bin/tool"].stat().st_mode) & 0o7022 == 0 and os.access(made["p/bin/tool"], os.X_OK)
    assert stat.S_IMODE(made["p/notes.txt"].stat().st_mode) & 0o7133 == 0
    assert {p.stat().st_uid for p in made.values()} == {os.getuid()}
    for members, why in (([(_info("p/../../out.txt"), b"x")], "absolute or escaping"),
                         ([(_info("p/l", tarfile.SYMTYPE, "."), None), (_info("p/l/x.txt"), b"x")], "below a link")):
        with pytest.raises(TreeRefused, match=why):
            extract_tar(None, tmp_path / why.split()[0], fileobj=io.BytesIO(_tar(members)))
    assert not (tmp_path / "out.txt").exists()


# -- git sources ----------------------------------------------------------------------------------------

def _git_repo(path: Path, links: dict[str, str]) -> str:
    path.mkdir(parents=True)
    (path / "tests").mkdir()
    (path / "tests/test_a.py").write_text("def test_a():\n    assert True\n")
    (path / "real.py").write_text("X = 1\n")
    for rel, target in links.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, path / rel)
    repo = git.Repo.init(path, initial_branch="main")
    repo.git.add(A=True)
    sha = repo.index.commit("tree", author=WHO, committer=WHO).hexsha
    repo.close()
    return sha


def test_git_source_with_an_absolute_link_is_a_named_refusal_not_a_traceback(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text(f"SECRET-{uuid.uuid4().hex}\n")
    bad = _git_repo(tmp_path / "bad", {"leak.txt": str(secret)})
    good = _git_repo(tmp_path / "good", {"alias.py": "real.py", "docs/gone.txt": "../missing.txt"})
    scenarios = tmp_path / "scenarios"
    manifest(scenarios, "bad", f'[source]\ngit = "../bad"\nrev = "{bad}"')
    manifest(scenarios, "good", f'[source]\ngit = "../good"\nrev = "{good}"')
    proc = cli("scenarios", "--scenarios-dir", str(scenarios), "--json",
               env={"REPAIR_AGENT_CACHE_DIR": str(tmp_path / "cache")})
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "good" in listed(proc) and "bad" not in listed(proc)
    assert "bad.scenario.toml" in proc.stderr and "leak.txt" in proc.stderr and "links out of the tree" in proc.stderr
    # The good source keeps its internal and dangling links as links.
    tree = next((tmp_path / "cache" / "sources").glob("*/good"))
    assert os.readlink(tree / "alias.py") == "real.py" and os.readlink(tree / "docs/gone.txt") == "../missing.txt"


# -- a scenario tree with special files: listing must not hang -----------------------------------------

def test_scenario_tree_with_a_fifo_and_a_dev_zero_link_does_not_hang(tmp_path):
    repo = tmp_path / "scenarios" / "r"
    (repo / "tests").mkdir(parents=True)
    (repo / "tests/test_a.py").write_text("def test_a():\n    assert True\n")
    (repo / "mod.py").write_text("X = 1\n")
    os.mkfifo(repo / "pipe")
    os.symlink("/dev/zero", repo / "zero")
    os.symlink("pipe", repo / "to_pipe")
    (tmp_path / "scenarios" / "bug.diff").write_text("--- a/mod.py\n+++ b/mod.py\n@@ -1 +1 @@\n-X = 1\n+X = 2\n")
    manifest(tmp_path / "scenarios", "fifo", 'repo = "r"\nbug_patch = "bug.diff"')
    proc = cli("scenarios", "--scenarios-dir", str(tmp_path / "scenarios"), "--json", timeout=60,
               env={"REPAIR_AGENT_CACHE_DIR": str(tmp_path / "cache")})
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    tree = next((tmp_path / "cache" / "trees").glob("r-*"))
    assert (tree / "mod.py").read_text() == "X = 2\n" and not (tree / "pipe").exists()
    assert not (tree / "zero").is_symlink() and os.readlink(tree / "to_pipe") == "pipe"  # dangling now, kept
    assert "fifo" in listed(proc)


def test_tree_hash_and_copy_never_open_a_special_file_and_say_what_they_left_out(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.py").write_text("A = 1\n")
    os.mkfifo(src / "pipe")
    os.symlink("/dev/zero", src / "zero")
    digest = tree_sha256(src)
    os.unlink(src / "zero")
    os.symlink("/dev/urandom", src / "zero")
    assert tree_sha256(src) != digest, "a link is hashed by its target text"
    copied = copy_tree(src, tmp_path / "dest")
    assert copied.dropped == {"pipe": "a FIFO (never opened)", "zero": "a link out of the tree (/dev/urandom)"}
    assert sorted(p.name for p in (tmp_path / "dest").iterdir()) == ["a.py"]
    with pytest.raises(TreeRefused, match="more than 1 entries"):
        copy_tree(src, tmp_path / "dest2", limits=TreeLimits(max_entries=1))


# -- run --repo: the user's repository -------------------------------------------------------------------

def _user_repo(base: Path, secret: Path) -> Path:
    rk = build_rangekit(base / "rangekit")
    repo = git.Repo(rk.path)
    repo.git.checkout(rk.initial, "--", "src")  # the in_range regression comes back
    path = rk.path
    os.symlink("core.py", path / "src/rangekit/alias.py")             # a link to a file inside
    (path / "docs").mkdir()
    os.symlink("../src", path / "docs/src_link")                      # a link to a directory inside
    os.symlink("../nowhere.txt", path / "docs/dangling.txt")          # a dangling link
    os.symlink(str(secret), path / "host_secret.txt")                 # a link to a host file
    os.symlink("/dev/zero", path / "zero")                            # a link that never ends
    repo.git.add(A=True)
    repo.index.commit("core: simplify; links", author=WHO, committer=WHO)
    repo.close()
    os.mkfifo(path / "pipe")                                          # untracked, not ignored
    return path


@pytest.mark.docker
def test_run_repo_keeps_links_inside_as_links_and_no_host_file_leaks(tmp_path, docker_client, sandbox_image):
    marker = f"HOST-SECRET-{uuid.uuid4().hex}"
    secret = tmp_path / "host" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text(f"password = {marker}\n")
    path = _user_repo(tmp_path / "user", secret)
    runs, cache = tmp_path / "runs", tmp_path / "cache"
    proc = cli("--runs-dir", str(runs), "run", "--repo", str(path), "--test", BUG, "--writable", "src/**",
               "--chooser", "search", "--json", timeout=900, env={"REPAIR_AGENT_CACHE_DIR": str(cache)})
    record = json.loads(proc.stdout) if proc.stdout.strip().startswith("{") else {}
    assert record.get("status") == "awaiting_release_confirmation", proc.stderr[-3000:]
    assert "left out of the copy" in proc.stderr and "host_secret.txt" in proc.stderr
    run_dir = Path(record["run_dir"])
    pristine = Path(json.loads((run_dir / "scenario.json").read_text())["repo"])
    for tree in (pristine, run_dir / "workspace"):
        if not tree.is_dir():
            continue
        assert os.readlink(tree / "src/rangekit/alias.py") == "core.py"
        assert os.readlink(tree / "docs/src_link") == "../src"
        assert os.readlink(tree / "docs/dangling.txt") == "../nowhere.txt"
        for gone in ("host_secret.txt", "zero", "pipe"):
            assert not os.path.lexists(tree / gone), (tree, gone)
    origin = json.loads(next(pristine.parent.glob("*.origin.json")).read_text())
    assert set(origin["left_out"]) == {"host_secret.txt", "zero"} and "host_secret.txt" not in origin["uncommitted"]
    # No byte of the host file in any observation, journal or record, the caches or the output.
    assert marker not in proc.stdout + proc.stderr
    assert files_containing(runs, marker.encode()) == [] and files_containing(cache, marker.encode()) == []


@pytest.mark.docker
def test_run_repo_with_a_fifo_and_a_dev_zero_link_does_not_hang(tmp_path, docker_client, sandbox_image):
    base = tmp_path / "user"
    base.mkdir()
    path = _user_repo(base, tmp_path / "absent-secret.txt")
    os.symlink("pipe", path / "to_pipe")  # an untracked link to the FIFO
    proc = cli("--runs-dir", str(tmp_path / "runs"), "run", "--repo", str(path), "--test", BUG, "--writable",
               "src/**", "--environment", "none", "--chooser", "baseline", "--max-steps", "2", "--json", timeout=300)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "left out of the copy" in proc.stderr and "zero: a link out of the tree (/dev/zero)" in proc.stderr
    record = json.loads(proc.stdout)
    assert record["run_dir"] and record["status"], record


# -- importers --------------------------------------------------------------------------------------------

def _swebench(tmp_path: Path, instances: list[dict], repos: Path) -> tuple[subprocess.CompletedProcess, dict]:
    jsonl = tmp_path / "instances.jsonl"
    jsonl.write_text("".join(json.dumps(i) + "\n" for i in instances))
    proc = cli("import", "swebench", str(jsonl), "--repos", str(repos), "--out", str(tmp_path / "out"), "--json",
               timeout=600, env={"REPAIR_AGENT_CACHE_DIR": str(tmp_path / "cache")})
    summary = json.loads(proc.stdout) if proc.stdout.strip().startswith("{") else {}
    return proc, {r["instance_id"]: r for r in summary.get("results", [])}


def _secret_repo(path: Path, marker: str) -> str:
    path.mkdir(parents=True, exist_ok=True)
    (path / "tests").mkdir()
    (path / "secret.py").write_text(f"TOKEN = {marker!r}\n")
    (path / "real.py").write_text("X = 1\n")  # what the instance's patches change: they apply
    (path / "tests/test_s.py").write_text("from secret import TOKEN\n\ndef test_s():\n    assert TOKEN\n")
    repo = git.Repo.init(path, initial_branch="main")
    repo.git.add(A=True)
    sha = repo.index.commit("secret", author=WHO, committer=WHO).hexsha
    repo.close()
    return sha


def _instance(iid: str, repo: str, base: str) -> dict:
    diff = "--- a/real.py\n+++ b/real.py\n@@ -1 +1 @@\n-X = 1\n+X = 2\n"
    return {"instance_id": iid, "repo": repo, "base_commit": base, "patch": diff, "test_patch": diff,
            "FAIL_TO_PASS": ["tests/test_s.py::test_s"], "PASS_TO_PASS": [], "problem_statement": "p"}


def test_swebench_repo_that_climbs_out_of_repos_is_refused_and_nothing_is_imported(tmp_path):
    marker = f"ABOVE-REPOS-{uuid.uuid4().hex}"
    area = tmp_path / "area"
    sha = _secret_repo(area, marker)  # the directory above --repos is itself a git repository
    repos = area / "repos"
    repos.mkdir()
    proc, by_id = _swebench(tmp_path, [_instance("up-1", "x/..", sha), _instance("up-2", "../..", sha)], repos)
    assert "Traceback" not in proc.stderr and by_id, proc.stderr[-2000:]
    for iid in ("up-1", "up-2"):
        assert by_id[iid]["status"] == "skipped" and "'..' are not names" in by_id[iid]["reason"], by_id[iid]
    assert files_containing(tmp_path / "out", marker.encode()) == []


def test_swebench_clone_linked_out_of_repos_is_refused(tmp_path):
    marker = f"LINKED-OUT-{uuid.uuid4().hex}"
    elsewhere = tmp_path / "elsewhere" / "proj"
    sha = _secret_repo(elsewhere, marker)
    repos = tmp_path / "repos"
    repos.mkdir()
    os.symlink(elsewhere, repos / "owner__proj")
    proc, by_id = _swebench(tmp_path, [_instance("link-1", "owner/proj", sha)], repos)
    assert "Traceback" not in proc.stderr and by_id, proc.stderr[-2000:]
    assert by_id["link-1"]["status"] == "skipped" and "outside" in by_id["link-1"]["reason"], by_id["link-1"]
    assert files_containing(tmp_path / "out", marker.encode()) == []


def test_swebench_tree_with_an_absolute_link_is_a_named_refusal(tmp_path):
    repos = tmp_path / "repos"
    secret = tmp_path / "secret.txt"
    secret.write_text("host\n")
    sha = _git_repo(repos / "owner__proj", {"leak.txt": str(secret)})
    proc, by_id = _swebench(tmp_path, [_instance("abs-1", "owner/proj", sha)], repos)
    assert "Traceback" not in proc.stderr and by_id, proc.stderr[-2000:]
    reason = by_id["abs-1"]["reason"]
    assert by_id["abs-1"]["status"] == "skipped" and "leak.txt" in reason and "links out of the tree" in reason


def test_import_commit_with_a_link_out_in_its_parent_is_a_named_refusal(tmp_path):
    marker = f"COMMIT-SECRET-{uuid.uuid4().hex}"
    secret = tmp_path / "secret.txt"
    secret.write_text(marker + "\n")
    rk = build_rangekit(tmp_path / "rangekit")
    repo = git.Repo(rk.path)
    os.symlink(str(secret), rk.path / "leak.txt")
    repo.git.add(A=True)
    repo.index.commit("a link to a host file", author=WHO, committer=WHO)
    (rk.path / "src/rangekit/core.py").open("a").write("\n# tidy\n")
    (rk.path / "tests/test_core.py").open("a").write("\n\ndef test_more():\n    assert True\n")
    repo.git.add(A=True)
    fix = repo.index.commit("fix", author=WHO, committer=WHO).hexsha
    repo.close()
    proc = cli("import", "commit", str(rk.path), fix, "--out", str(tmp_path / "out"), "--json", timeout=600,
               env={"REPAIR_AGENT_CACHE_DIR": str(tmp_path / "cache")})
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    (result,) = json.loads(proc.stdout)["results"]
    assert result["status"] == "skipped" and "leak.txt" in result["reason"], result
    assert "links out of the tree" in result["reason"]
    assert files_containing(tmp_path / "out", marker.encode()) == []


def test_environment_build_context_has_no_host_file_and_keeps_links(tmp_path):
    """The copy a root build container with network mounts at /workspace (the environment build's
    own function): the user's tree as `run --repo` would hand it over, links and all."""
    from repair_agent.sandbox.environment import build_context

    marker = f"BUILD-SECRET-{uuid.uuid4().hex}"
    secret = tmp_path / "secret.txt"
    secret.write_text(marker + "\n")
    tree = tmp_path / "tree"
    _git_repo(tree, {"alias.py": "real.py", "docs/gone.txt": "../missing.txt", "leak.txt": str(secret),
                     "zero": "/dev/zero"})
    os.mkfifo(tree / "pipe")
    build = tmp_path / "build"
    build.mkdir()
    work = build_context(tree, build)
    assert os.readlink(work / "alias.py") == "real.py" and os.readlink(work / "docs/gone.txt") == "../missing.txt"
    assert not any(os.path.lexists(work / n) for n in ("leak.txt", "zero", "pipe", ".git"))
    assert files_containing(build, marker.encode()) == []


def test_the_verifier_keeps_the_repositorys_own_links_and_refuses_a_candidates_link_out(tmp_path):
    """The verifier's snapshot and a check's tree: the pristine links stay links (hashed by their
    text), a link the candidate adds pointing at a host file is removed before any test runs."""
    from verifier import AcceptanceSpec, Verifier
    from verifier.candidate_tree import restore_protected

    repo = tmp_path / "repo"
    _git_repo(repo, {"alias.py": "real.py", "docs/gone.txt": "../missing.txt", "zero": "/dev/zero"})
    (repo / "tests/test_a.py").write_text("from alias import X\n\ndef test_a():\n    assert X == 2\n")  # the bug
    v = Verifier(AcceptanceSpec(scenario="links", target_tests=("tests/test_a.py::test_a",)), repo,
                 tmp_path / "v", backend="local")
    v.prepare()
    snap = Path(v.snapshot.root)
    assert os.readlink(snap / "alias.py") == "real.py" and not os.path.lexists(snap / "zero")
    tree = tmp_path / "tree"
    copy_tree(snap, tree)
    os.symlink("/etc/hostname", tree / "stolen.txt")
    restored, refused = restore_protected(tree, v.snapshot, v.spec)
    assert refused == ["stolen.txt"] and not os.path.lexists(tree / "stolen.txt")
    assert os.readlink(tree / "alias.py") == "real.py" and os.readlink(tree / "docs/gone.txt") == "../missing.txt"
    assert tree_sha256(tree) == v.snapshot.tree_sha256
