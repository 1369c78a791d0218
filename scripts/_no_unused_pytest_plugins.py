"""Take the pytest plugins the suite never uses out of pytest's autoload in this environment
(idempotent).

Every pytest process this interpreter starts autoloads the plugins installed in it, and the local
checks, imports and traced runs of the suite are such processes, several hundred per suite. Two
plugins come with packages the suite needs for something else and cost most of such a process's
start:
- hypothesis (the test extras; used as a library, `@given` with explicit settings): 6.170's plugin
  imports all of hypothesis at the end of every session (~0.6 s) whether or not a test used it;
- anyio (through openai's HTTP client): its plugin imports asyncio, sockets and ssl into every
  session (~0.25 s of a ~0.5 s start); no test of the suite is an anyio test.
Hypothesis documents disabling its entry point; this does it for both, in the venv the scripts make
only (a `--sandbox local` run from that venv loads neither); the product's "plugins load as installed"
is unchanged: an environment image, or an interpreter installed otherwise, keeps its plugins.

The file is replaced, not written through: an installer that links files from its cache (uv does)
shares the file with that cache, which must stay as it was.
"""
from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

from verifier.files import atomic_write

SECTION = "[pytest11]"
DISTRIBUTIONS = ("hypothesis", "anyio")


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
    for name in DISTRIBUTIONS:
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        for entry in dist.files or ():
            if entry.name == "entry_points.txt":
                drop_pytest_entry_points(Path(str(dist.locate_file(entry))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
