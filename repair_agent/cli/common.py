"""What every command shares: how an error is said, and the usage-error exit code."""
from __future__ import annotations

import argparse
import sys

USAGE_ERROR = 2


def err(message: str) -> None:
    print(f"repair-agent: {message}", file=sys.stderr)


class RunsDirAction(argparse.Action):
    """Stores --runs-dir and notes that it was given (not the default), for the commands that
    do not keep runs there."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        namespace.runs_dir_given = True
