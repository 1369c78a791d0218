"""Take hypothesis's pytest plugin out of pytest's autoload in this environment (idempotent).

The suite uses hypothesis as a library (`@given` with explicit settings) and never needs its
plugin. But every pytest process this interpreter starts autoloads the plugin, and hypothesis
6.170's plugin imports all of hypothesis at the end of every session (~0.6 s) whether or not a
test used it. The local checks, imports and traced runs of the suite are such processes, several
hundred per suite. Hypothesis documents disabling its entry point; this does it for this
environment only, leaving the product's "plugins load as installed" unchanged.

The file is replaced, not written through: an installer that links files from its cache (uv does)
shares the file with that cache, which must stay as it was.
"""
from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

from verifier.files import atomic_write

SECTION = "[pytest11]"


def without_pytest_entry_points(text: str) -> str:
    """entry_points.txt without its [pytest11] section."""
    kept, skipping = [], False
    for line in text.splitlines(keepends=True):
        if line.strip().startswith("["):
            skipping = line.strip() == SECTION
        if not skipping:
            kept.append(line)
    return "".join(kept)


def drop_pytest_entry_points(path: Path) -> None:
    """Replace `path` (an entry_points.txt) by its text without [pytest11], when it has that section."""
    text = path.read_text()
    if SECTION in text:
        atomic_write(path, without_pytest_entry_points(text))


def main() -> int:
    try:
        dist = importlib.metadata.distribution("hypothesis")
    except importlib.metadata.PackageNotFoundError:
        return 0
    for entry in dist.files or ():
        if entry.name == "entry_points.txt":
            drop_pytest_entry_points(Path(str(dist.locate_file(entry))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
