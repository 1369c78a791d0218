"""Take hypothesis's pytest plugin out of pytest's autoload in this environment (idempotent).

The suite uses hypothesis as a library (`@given` with explicit settings) and never needs its
plugin. But every pytest process this interpreter starts autoloads the plugin, and hypothesis
6.170's plugin imports all of hypothesis at the end of every session (~0.6 s) whether or not a
test used it. The local checks, imports and traced runs of the suite are such processes, several
hundred per suite. Hypothesis documents disabling its entry point; this does it for this
environment only, leaving the product's "plugins load as installed" unchanged.
"""
from __future__ import annotations

import importlib.metadata
import sys

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


def main() -> int:
    try:
        dist = importlib.metadata.distribution("hypothesis")
    except importlib.metadata.PackageNotFoundError:
        return 0
    listed = [f for f in dist.files or () if f.name == "entry_points.txt"]
    for entry in listed:
        path = dist.locate_file(entry)
        text = path.read_text()
        if SECTION in text:
            path.write_text(without_pytest_entry_points(text))
    return 0


if __name__ == "__main__":
    sys.exit(main())
