"""`repair-agent run --repo PATH --test NODEID`: the loop on a user's own repository as it is on disk.

The pristine tree is a copy of what git sees in PATH: HEAD plus uncommitted changes (tracked files
as they are on disk, untracked files that are not ignored; ignored files such as virtualenvs and
build output are left out). Nothing in PATH is written while the copy is made or the run goes on:
only `git ls-files` and `git hash-object` (without -w) read it, with optional locks off. Every git
call on PATH goes through hostgit: the repository's config, hooks and fsmonitor run nothing.

The copy, a manifest and an origin record (`NAME.origin.json`: PATH, the HEAD commit, what was
uncommitted) live in RUNS/.cache/local-repos/. `release --confirm` of such a run writes into PATH
only what the person chose: a branch (git plumbing on a private index: objects and one new ref,
never the working tree, the index or the checked-out branch), or a patch file.

The environment comes from the repository's own files (`--environment auto`, the default; see
sandbox/declared.py): what it declares (dependencies, test extras, requirements files, the tests'
third-party imports and plugins) pinned, and a project with `pyproject.toml`, `setup.py` or
`setup.cfg` installed editable at the mount point, so the candidate tree is what runs. With
nothing to install, or with `--environment none`, the plain sandbox image is used; `--environment
FILE` reads an `[environment]` section from a TOML file.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

from typing import Callable

from pydantic import BaseModel
from unidiff import PatchSet

from verifier.trees import TreeRefused, copy_tree, scan

from ..untrusted.hostgit import run_git
from .common import manifest_text
from ..scenarios.scenario import SUFFIX, Scenario, load_manifest, tree_digest
from ..scenarios.scenario_files import ORIGIN_SUFFIX, origin_record

TEST_FILES = ("**/test_*.py", "**/*_test.py")


class LocalRepoError(ValueError):
    """PATH cannot be used as a repository to repair, or a release into it cannot be made."""


class LocalOrigin(BaseModel):
    """Where a `run --repo` scenario came from: read back by release."""

    path: str
    head: str | None                   # HEAD at the start (None: a repository with no commit yet)
    head_ref: str | None               # the branch checked out then (None: detached)
    uncommitted: list[str]             # files that differ from HEAD (changed, added, deleted)
    skipped: list[str] = []            # listed by git but not copied (submodules)
    left_out: dict[str, str] = {}      # path -> why: links out of the repository, special files
    pristine_digest: str               # tree_digest of the copy
    generated: list[str] = []          # ignored modules kept (a version file the install wrote)


def _run_git(root: Path, args: list[str], stdin: str = "", env: dict | None = None) -> str:
    """Host git on the user's repository, its config neutralised (hostgit): stdout, or LocalRepoError."""
    proc = run_git(args, root, stdin=stdin, env=env)
    if proc.returncode:
        raise LocalRepoError(f"git {' '.join(args[:2])} failed: {proc.stderr.decode(errors='replace')[-500:]}")
    return proc.stdout.decode("utf-8", errors="surrogateescape")


def _open(path: Path) -> Path:
    """The top of the git working tree at `path` (which must be that top)."""
    path = Path(path).resolve()
    proc = run_git(["rev-parse", "--is-bare-repository", "--show-toplevel"], path) if path.is_dir() else None
    if proc is None or proc.returncode:
        raise LocalRepoError(f"{path} is not a git repository (run --repo needs git: its HEAD plus uncommitted "
                             "changes are the tree to repair)")
    bare, _, top = proc.stdout.decode(errors="surrogateescape").partition("\n")
    if bare.strip() == "true" or Path(top.strip()).resolve() != path:
        raise LocalRepoError(f"{path} is not the top of a git working tree (give {top.strip() or 'a working tree'})")
    return path


def _head(root: Path) -> tuple[str | None, str | None]:
    head = run_git(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], root)
    if head.returncode:  # no commit yet
        return None, None
    ref = run_git(["symbolic-ref", "--quiet", "--short", "HEAD"], root)
    return head.stdout.decode().strip(), ref.stdout.decode().strip() if ref.returncode == 0 else None


def _blob_ids(repo: Path, root: Path, files: list[str]) -> dict[str, str]:
    """git's blob id of each file under root, without writing anything (hash-object without -w)."""
    regular = [f for f in files if not (root / f).is_symlink()]
    ids: dict[str, str] = {}
    if regular:
        proc = _run_git(repo, ["hash-object", "--no-filters", "--stdin-paths"],
                        "\n".join(str(root / f) for f in regular) + "\n")
        ids.update(zip(regular, proc.split()))
    for f in files:
        if (root / f).is_symlink():
            ids[f] = _run_git(repo, ["hash-object", "--stdin"], os.readlink(root / f)).strip()
    return ids


def _mode(path: Path) -> str:
    if path.is_symlink():
        return "120000"
    return "100755" if path.stat().st_mode & stat.S_IXUSR else "100644"


def _head_files(repo: Path, head: str | None) -> dict[str, tuple[str, str]]:
    """path -> (mode, blob id) of HEAD's tree."""
    if head is None:
        return {}
    out = _run_git(repo, ["ls-tree", "-r", "-z", "--full-tree", head])
    files = {}
    for entry in filter(None, out.split("\0")):
        meta, path = entry.split("\t", 1)
        mode, kind, blob = meta.split()
        if kind == "blob":
            files[path] = (mode, blob)
    return files


def differences(repo: Path, head: str | None, root: Path) -> list[str]:
    """Files of the tree at `root` that differ from HEAD (content or mode), and HEAD's files it lacks."""
    files = [p for p in _tree_files(root)]
    ids = _blob_ids(repo, root, files)
    at_head = _head_files(repo, head)
    changed = [f for f in files if at_head.get(f) != (_mode(root / f), ids[f])]
    return sorted(changed + [f for f in at_head if f not in ids])


def _tree_files(root: Path) -> list[str]:
    return scan(root, ignore=(".git",)).files


def snapshot(path: Path, dest_root: Path) -> tuple[Path, LocalOrigin]:
    """Copy HEAD + uncommitted changes of PATH into a content-addressed directory under dest_root."""
    root = _open(path)
    head, head_ref = _head(root)
    listed = _run_git(root, ["ls-files", "-z", "--cached", "--others", "--exclude-standard"]).split("\0")
    generated = generated_modules(root, listed)
    dest_root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=dest_root, prefix=".copy-"))
    tree = staging / (re.sub(r"[^A-Za-z0-9_.-]+", "-", root.name).strip(".") or "repo")
    tree.mkdir()
    # Links inside the repository stay links (dangling ones too); a link out of it (to a host file,
    # /dev/zero) and special files are left out and said, so no host file reaches the copy.
    try:
        copied = copy_tree(root, tree, only=filter(None, [*listed, *generated]), ignore=(".git",))
    except TreeRefused as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise LocalRepoError(f"{root} cannot be copied: {exc}") from None
    digest = tree_digest(tree)
    left_out = {rel: why for rel, why in copied.dropped.items()
                if why not in ("a directory (a submodule?)", "listed but not on disk")}
    uncommitted = [f for f in differences(root, head, tree) if f not in left_out and f not in generated]
    return tree, LocalOrigin(path=str(root), head=head, head_ref=head_ref, uncommitted=uncommitted,
                             skipped=[rel for rel, why in copied.dropped.items() if why == "a directory (a submodule?)"],
                             left_out=left_out, pristine_digest=digest, generated=generated)


def generated_modules(root: Path, listed: list[str]) -> list[str]:
    """Ignored modules inside a package the repository tracks (`src/pkg/_version.py`, written by
    setuptools-scm at install): the package cannot be imported without them, and a checkout has them.
    Never a file of an ignored directory such as a virtualenv (no tracked package around it), never
    a large one; they are not uncommitted changes (a release does not commit them)."""
    from ..sandbox.environment import GENERATED_MAX_BYTES

    packages = {str(Path(f).parent) for f in listed if f and Path(f).name == "__init__.py"}
    # An ignored directory (a virtualenv) is listed as itself, not walked file by file.
    ignored = _run_git(root, ["ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"]
                       ).split("\0")
    kept = []
    for rel in filter(None, ignored):
        path = root / rel
        if (rel.endswith(".py") and str(Path(rel).parent) in packages and "__pycache__" not in rel
                and path.is_file() and not path.is_symlink() and path.stat().st_size <= GENERATED_MAX_BYTES):
            kept.append(rel)
    return sorted(kept)


def repo_environment(tree: Path, option: str, log: Callable[[str], None]) -> dict | None:
    """The `[environment]` table for `--environment OPTION` (auto, none or a TOML file), or None."""
    from ..sandbox.detect import environment_option
    from ..sandbox.environment import EnvironmentBuildError

    try:
        section = environment_option(option, tree, log=log)
    except EnvironmentBuildError as exc:
        raise LocalRepoError(str(exc)) from None
    return section.model_dump(mode="json", exclude_defaults=True) if section else None


def repo_scenario(path: Path, tests: list[str], *, runs_dir: Path, writable: list[str] | None = None,
                  goal: str | None = None, max_steps: int = 12, environment: dict | None | str = "auto",
                  pass_to_pass: list[str] | None = None, log: Callable[[str], None] = lambda m: None) -> Scenario:
    """A scenario over the user's repository as it is now: its copy, manifest and origin record.
    `environment`: "auto" (from the repository's files), "none" or None (the plain sandbox image), the path
    of a TOML file, or a section. `pass_to_pass`: the suite condition is these tests (and only they and
    the targets run), not the whole suite."""
    if not tests:
        raise LocalRepoError("run --repo needs at least one --test NODEID (a test that fails now)")
    cache = Path(runs_dir).resolve() / ".cache" / "local-repos"
    tree, origin = snapshot(Path(path), cache)
    for rel, why in origin.left_out.items():
        log(f"left out of the copy of {origin.path}: {rel}: {why}")
    if isinstance(environment, str):
        environment = repo_environment(tree, environment, log)
    base = re.sub(r"[^a-z0-9_.-]+", "-", Path(origin.path).name.lower()).strip("-._") or "repo"
    name = f"local-{base}"
    writable = writable or ["**"]
    # Test modules wherever they live (a project may keep them beside its code), and the ones the
    # targets are in: never the repair's to edit.
    protected = list(dict.fromkeys([*TEST_FILES, *(t.split("::")[0] for t in tests)]))
    settings = json.dumps([origin.pristine_digest, tests, writable, goal, max_steps, environment,
                           *([pass_to_pass] if pass_to_pass else [])], sort_keys=True)
    where = cache / f"{name}-{hashlib.sha256(settings.encode()).hexdigest()[:16]}"
    try:
        os.rename(tree.parent, where)
    except OSError:
        if not where.is_dir():
            raise
        shutil.rmtree(tree.parent)  # the same tree and settings exist: reuse (its baseline cache applies too)
    sections: dict[str, dict] = {
        "goal": {"text": goal or f"Make the failing test(s) pass without changing tests or test configuration: "
                                 f"{', '.join(tests)}",
                 "failure_signature": f"failing: {', '.join(tests[:3])}"},
        "acceptance": {"target_tests": tests, "writable": writable, "protected": protected,
                       **({"pass_to_pass": pass_to_pass} if pass_to_pass else {})},
        "budget": {"max_steps": max_steps, "deadline_s": 900.0},
    }
    if environment:
        sections["environment"] = environment
    head = origin.head[:12] if origin.head else "no commit"
    manifest = where / f"{name}{SUFFIX}"
    manifest.write_text(manifest_text(
        {"name": name, "description": f"{origin.path} at {head}"
                                      + (f" + {len(origin.uncommitted)} uncommitted file(s)" if origin.uncommitted
                                         else ""),
         "repo": tree.name, "kind": "local-repo", "tags": ["local-repo"]}, sections,
        comment=f"The repository {origin.path} as it was on disk (repair-agent run --repo)"), encoding="utf-8")
    (where / f"{name}{ORIGIN_SUFFIX}").write_text(origin.model_dump_json(indent=1), encoding="utf-8")
    return load_manifest(manifest)


def origin_of(manifest: Path) -> LocalOrigin | None:
    """The origin record beside a manifest: present only for `run --repo` scenarios."""
    manifest = Path(manifest)
    record = origin_record(manifest)
    if not manifest.name.endswith(SUFFIX) or not record.is_file():
        return None
    return LocalOrigin.model_validate_json(record.read_text(encoding="utf-8"))


def release_branch(origin: LocalOrigin, pristine: Path, diff: bytes, *, branch: str, message: str,
                   who: str) -> dict:
    """A new branch in the user's repository: HEAD, then (if there were any) one commit with the
    uncommitted changes the run started from, then one commit with the verified diff. Made with a
    private index; the user's working tree, index and checked-out branch are not touched."""
    repo = _open(Path(origin.path))
    if tree_digest(pristine) != origin.pristine_digest:
        raise LocalRepoError(f"the run's copy of {origin.path} changed since the run; nothing is released")
    if _ref_exists(repo, f"refs/heads/{branch}"):
        raise LocalRepoError(f"branch {branch} already exists in {origin.path}; choose another with --branch")
    _run_git(repo, ["check-ref-format", "--branch", branch], "")
    if origin.head is not None:
        if run_git(["cat-file", "-e", f"{origin.head}^{{commit}}"], repo).returncode:
            raise LocalRepoError(f"the commit the run started from ({origin.head[:12]}) is no longer in "
                                 f"{origin.path}") from None
    env = {"GIT_AUTHOR_NAME": who, "GIT_AUTHOR_EMAIL": f"{who}@localhost", "GIT_COMMITTER_NAME": "repair-agent",
           "GIT_COMMITTER_EMAIL": "repair-agent@localhost"}
    with tempfile.TemporaryDirectory(prefix="repair-agent-release-") as tmp:
        env["GIT_INDEX_FILE"] = str(Path(tmp) / "index")
        if origin.head is not None:
            _run_git(repo, ["read-tree", origin.head], "", env)
        else:
            _run_git(repo, ["read-tree", "--empty"], "", env)
        parent, commits = origin.head, []
        # What the copy left out (a link to a host file) is not a deletion: the branch keeps it.
        changed = [f for f in differences(repo, origin.head, pristine) if f not in origin.left_out]
        if changed:
            for rel in changed:
                src = pristine / rel
                if src.is_symlink() or src.is_file():
                    blob = (_run_git(repo, ["hash-object", "-w", "--stdin"], os.readlink(src), env) if src.is_symlink()
                            else _run_git(repo, ["hash-object", "-w", "--no-filters", str(src)], "", env)).strip()
                    _run_git(repo, ["update-index", "--add", "--cacheinfo", f"{_mode(src)},{blob},{rel}"], "", env)
                else:
                    _run_git(repo, ["update-index", "--force-remove", "--", rel], "", env)
            parent = _commit(repo, env, parent, "Uncommitted changes the repair run started from\n\n"
                             "The verified repair is the next commit; this one holds what was uncommitted in the "
                             "working tree when the run began.\n")
            commits.append(parent)
        applied = _apply_cached(repo, diff, env)
        if applied:
            raise LocalRepoError(f"the verified diff does not apply to the run's starting point: {applied}")
        fix = _commit(repo, env, parent, message)
        commits.append(fix)
    _run_git(repo, ["update-ref", f"refs/heads/{branch}", fix, "0" * 40], "")  # create only, never overwrite
    files = [f.path for f in PatchSet(diff.decode("utf-8", errors="replace"))]
    return {"branch": branch, "commit": fix, "commits": commits, "files": files, "uncommitted_files": changed,
            "repository": origin.path, "base": origin.head}


def _ref_exists(repo: Path, ref: str) -> bool:
    return run_git(["rev-parse", "--verify", "--quiet", ref], repo, timeout=60).returncode == 0


def _commit(repo: Path, env: dict, parent: str | None, message: str) -> str:
    tree = _run_git(repo, ["write-tree"], "", env).strip()
    return _run_git(repo, ["commit-tree", tree, *(["-p", parent] if parent else []), "-F", "-"], message, env).strip()


def _apply_cached(repo: Path, diff: bytes, env: dict) -> str | None:
    proc = run_git(["apply", "--cached", "--whitespace=nowarn", "-"], repo, stdin=diff, env=env, timeout=120)
    return proc.stderr.decode(errors="replace")[-1000:] or "git apply failed" if proc.returncode else None


def write_patch_file(target: Path, diff: bytes) -> Path:
    """The verified diff as a file the user chose; an existing file is never overwritten."""
    target = Path(target).resolve()
    try:
        with open(target, "xb") as f:
            f.write(diff)
    except FileExistsError:
        raise LocalRepoError(f"{target} already exists; nothing was written") from None
    return target


def scenario_from_args(args, log: Callable[[str], None] = lambda m: None) -> Scenario:
    from ..scenarios.scenario import ManifestError

    if not args.repo:
        raise LocalRepoError("run needs a scenario, or --repo PATH with --test NODEID")
    if args.scenario:
        raise LocalRepoError(f"give a scenario ({args.scenario}) or --repo, not both")
    try:
        return repo_scenario(Path(args.repo), node_ids(args.test), runs_dir=Path(args.runs_dir),
                             writable=args.writable, goal=args.goal,
                             environment=getattr(args, "environment", "auto"),
                             pass_to_pass=node_ids(getattr(args, "pass_to_pass", None)) or None, log=log)
    except ManifestError as exc:  # e.g. a --test that is not a node id: said about the option, not a file
        raise LocalRepoError(f"--repo {args.repo}: {str(exc).split(': ', 1)[-1]}") from None


def node_ids(values: list[str] | None) -> list[str]:
    """Node ids as given on the command line: each value an id, or @FILE with one id a line (blank
    lines and # comments skipped)."""
    ids: list[str] = []
    for value in values or []:
        if not value.startswith("@"):
            ids.append(value)
            continue
        try:
            text = Path(value[1:]).read_text(encoding="utf-8")
        except OSError as exc:
            raise LocalRepoError(f"{value}: {exc.strerror or exc}") from None
        ids += [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return list(dict.fromkeys(ids))
