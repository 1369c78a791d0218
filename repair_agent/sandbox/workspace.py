"""A run's workspace: a fresh git repository whose only history is the pristine base commit.

No remotes, no other commits, no reflog, no tags: the fix cannot be read from git history
(SWE-bench #465; agents did exactly that in mini-swe-agent #787).
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from verifier.isolation import SANDBOX_UID

BASE_IDENTITY = ("repair-agent", "repair-agent@localhost")  # name, email of the base commit


def create_workspace(pristine: Path, dest: Path, *, for_container: bool = True) -> str:
    """Copy the pristine files into `dest` (new, or an empty directory) as one base commit; return its sha."""
    if dest.is_dir() and any(dest.iterdir()):
        raise FileExistsError(f"workspace {dest} is not empty")
    # Imported here: a run builds its workspace in a thread while its sandbox container starts,
    # so gitpython's import overlaps with the engine's work instead of the process start.
    import git

    author = git.Actor(*BASE_IDENTITY)
    shutil.copytree(pristine, dest, ignore=shutil.ignore_patterns(".git", "__pycache__", ".pytest_cache"),
                    dirs_exist_ok=True)
    repo = git.Repo.init(dest, initial_branch="main")
    with repo.config_writer() as cfg:
        cfg.set_value("core", "hooksPath", "/dev/null")  # no hook can run on apply/diff
        cfg.set_value("gc", "auto", "0")
    repo.git.add(A=True)
    fixed_date = "2000-01-01T00:00:00+0000"  # the base commit carries no information but the files
    repo.index.commit("base: pristine scenario repository", author=author, committer=author,
                      author_date=fixed_date, commit_date=fixed_date)
    base = repo.head.commit.hexsha
    shutil.rmtree(dest / ".git" / "logs", ignore_errors=True)  # no reflog
    for sample in (dest / ".git" / "hooks").glob("*"):
        sample.unlink()
    repo.close()
    if for_container and os.getuid() == 0:
        # The container runs as a non-root uid that must own what it may write.
        for path in [dest, *dest.rglob("*")]:
            os.lchown(path, SANDBOX_UID, SANDBOX_UID)
    return base
