"""Where the files that ship with the tool live: the sandbox Dockerfile and the built-in scenarios.

They stay at the repository root (`Dockerfile`, `sandbox_repos/`), where the design keeps them.
A wheel has no repository root, so the build copies them into the package as `repair_agent/_data/`
(setup.py). This one lookup serves both, so a source checkout (editable install) and an installed
wheel can never disagree about which files they use.
"""
from __future__ import annotations

import fcntl
import os
import re
import shutil
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

PACKAGE_DIR = Path(__file__).resolve().parent
# In a wheel: copied here at build time. In a checkout this directory does not exist.
PACKAGED = PACKAGE_DIR / "_data"
# In a checkout: the repository root, one level above the package.
CHECKOUT = PACKAGE_DIR.parent
# What the build copies into PACKAGED; everything the tool reads at run time besides its modules
# and templates (the templates are ordinary package data).
SHIPPED = ("Dockerfile", "sandbox_repos")


class DataNotFound(FileNotFoundError):
    """A file that ships with the tool is in neither place: the installation is incomplete."""


def data_path(name: str) -> Path:
    """The path of a shipped file or directory (`Dockerfile`, `sandbox_repos`)."""
    if name not in SHIPPED:
        raise ValueError(f"{name!r} is not one of the files shipped with repair-agent: {SHIPPED}")
    candidates = (PACKAGED / name, CHECKOUT / name)
    for path in candidates:
        if path.exists():
            return path
    raise DataNotFound(f"{name} is missing from this installation of repair-agent (looked in "
                       f"{' and '.join(str(c) for c in candidates)}); install it from the project's "
                       "source tree or a wheel built from it (`pip install .`)")


CACHE_ENV = "REPAIR_AGENT_CACHE_DIR"


def cache_root() -> Path:
    """Where fetched sources, materialized trees and environment build logs are kept."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "repair-agent")


def build_once(target: Path, build: Callable[[Path], None]) -> Path:
    """`target`, built by `build(path)` the first time: into a private staging directory beside it,
    then moved into place with one rename, so a directory at `target` is always complete. Concurrent
    builders race safely: the loser's rename fails onto the winner's directory and its copy goes."""
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=".build-"))
    try:
        tree = staging / target.name
        build(tree)
        try:
            os.rename(tree, target)
        except OSError:
            if not target.is_dir():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


@contextmanager
def machine_lock(name: str) -> Iterator[None]:
    """Held by one process on this machine at a time (flock, freed when the holder dies): what the
    Docker Engine or apt keeps is machine-wide, so two builders of one image (the suite's workers,
    two sweeps) must take turns, whatever cache directory each one uses."""
    locks = Path(tempfile.gettempdir()) / f"repair-agent-{os.getuid()}-locks"
    locks.mkdir(mode=0o700, exist_ok=True)
    # The shared temp directory is anyone's to write in: the directory must be this user's own (not a
    # link another user planted), and the lock file is opened without following a link or truncating.
    held = os.lstat(locks)
    if not stat.S_ISDIR(held.st_mode) or held.st_uid != os.getuid():
        raise OSError(f"{locks} is not a directory of this user's: not used as a lock directory")
    path = locks / (re.sub(r"[^A-Za-z0-9_.-]", "_", name) + ".lock")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
