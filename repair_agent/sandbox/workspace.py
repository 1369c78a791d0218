"""A run's workspace: a fresh git repository whose only history is the pristine base commit.

No remotes, no other commits, no reflog, no tags: the fix cannot be read from git history
(SWE-bench #465; agents did exactly that in mini-swe-agent #787).
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from verifier.isolation import SANDBOX_UID
from verifier.trees import copy_tree

BASE_IDENTITY = ("repair-agent", "repair-agent@localhost")  # name, email of the base commit


def create_workspace(pristine: Path, dest: Path, *, for_container: bool = True) -> str:
    """Copy the pristine files into `dest` (new, or an empty directory) as one base commit; return its sha."""
    if dest.is_dir() and any(dest.iterdir()):
        raise FileExistsError(f"workspace {dest} is not empty")
    copy_tree(pristine, dest)  # links stay links; none out of the tree, no special file
    # The git command line, not gitpython: a run builds its workspace while its sandbox container
    # starts, and gitpython's import (~0.2 s of CPU) would hold the interpreter the run's own set-up
    # needs then. No template (so no sample hooks), no user or system configuration (no signing, no
    # hooks path, no templates of the person's own), fixed identity and dates: the base commit
    # carries no information but the files.
    fixed_date = "2000-01-01T00:00:00+0000"
    name, email = BASE_IDENTITY
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(dest), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CEILING_DIRECTORIES": str(dest.parent),
           "GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_AUTHOR_DATE": fixed_date,
           "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email, "GIT_COMMITTER_DATE": fixed_date}

    def git(*args: str) -> str:
        proc = subprocess.run(["git", *args], cwd=dest, env=env, capture_output=True, text=True, timeout=120)
        if proc.returncode:
            raise RuntimeError(f"git {args[0]} in {dest} failed: {proc.stderr.strip()[:500]}")
        return proc.stdout.strip()

    git("init", "--quiet", "--template=", "--initial-branch=main")
    git("config", "core.hooksPath", "/dev/null")  # no hook can run on apply/diff
    git("config", "gc.auto", "0")
    git("add", "--all")
    git("commit", "--quiet", "--no-verify", "--no-gpg-sign", "--allow-empty", "-m",
        "base: pristine scenario repository")
    base = git("rev-parse", "HEAD")
    shutil.rmtree(dest / ".git" / "logs", ignore_errors=True)  # no reflog
    if for_container and os.getuid() == 0:
        # The container runs as a non-root uid that must own what it may write.
        for path in [dest, *dest.rglob("*")]:
            os.lchown(path, SANDBOX_UID, SANDBOX_UID)
    return base
