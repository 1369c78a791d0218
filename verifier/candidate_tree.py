"""The candidate's tree for one check: the diff applied to the verifier's own pristine copy the way
the sandbox applied it, then every protected file put back from the snapshot and added test
infrastructure removed (SWE-bench's rule: only the verifier's tests decide)."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from .scope import recount_hunks
from .spec import REFUSED_INFRASTRUCTURE, AcceptanceSpec, ProtectedSnapshot, glob_match, sha256_file, tree_files


def apply_diff(diff: str, tree: Path) -> str | None:
    """git's error text when the diff does not apply (None: applied). The text check_scope parsed
    is the text applied: both see the same lines."""
    # GIT_CEILING_DIRECTORIES keeps git from discovering an enclosing repository, so the
    # patch is applied to this tree and nothing else.
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(tree.parent)}
    proc = subprocess.run(["git", "apply", "--recount", "--whitespace=nowarn", "-"], cwd=tree, env=env,
                          input=recount_hunks(diff).encode("utf-8", errors="surrogateescape"),
                          capture_output=True, timeout=60)
    return proc.stderr.decode(errors="replace")[-4000:] or "git apply failed" if proc.returncode else None


def restore_protected(tree: Path, snapshot: ProtectedSnapshot, spec: AcceptanceSpec) -> tuple[list[str], list[str]]:
    """Put every protected file back from the verifier's copy; remove and report additions."""
    snap = Path(snapshot.root)
    restored, refused = [], []
    for rel in tree_files(tree):
        path = tree / rel
        if rel in snapshot.protected_sha256:
            continue
        # A link the pristine tree has, unchanged, stays: the repository's own links are kept as links.
        added_link = path.is_symlink() and not ((snap / rel).is_symlink() and os.readlink(snap / rel) == os.readlink(path))
        if added_link or spec.is_protected(rel) or glob_match(rel, REFUSED_INFRASTRUCTURE):
            refused.append(rel)
            path.unlink()
    for rel, digest in snapshot.protected_sha256.items():
        path = tree / rel
        if not (path.is_symlink() or path.is_file()) or sha256_file(path) != digest:
            if path.is_symlink() or path.exists():
                path.unlink()
            path.parent.mkdir(parents=True, exist_ok=True)
            if (snap / rel).is_symlink():
                os.symlink(os.readlink(snap / rel), path)
            else:
                shutil.copyfile(snap / rel, path)
            restored.append(rel)
    return restored, refused
