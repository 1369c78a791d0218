"""What every command shares: how an error is said, and the usage-error exit code."""
from __future__ import annotations

import argparse
import os
import sys

from ..untrusted.visible import terminal

USAGE_ERROR = 2


def add_sandbox_option(parser: argparse.ArgumentParser, help: str) -> None:
    """`--sandbox NAME`: a backend by its name in the one registry (sandbox.backends.BACKENDS)."""
    from ..sandbox.backends import BACKENDS

    parser.add_argument("--sandbox", choices=list(BACKENDS), default="docker", help=help)


def err(message: str) -> None:
    # Messages carry outside text (paths, server errors, chooser output): shown, never acted on.
    print(f"repair-agent: {terminal(message)}", file=sys.stderr)


def say(text: object = "") -> None:
    """One printed line (or block) of outside text: secrets out, hidden characters named (visible.py)."""
    try:
        print(terminal(text), flush=True)
    except BrokenPipeError:
        # A run keeps going to its end, records and cleanup included, instead of a traceback.
        reader_gone()


def reader_gone() -> None:
    """The reader of standard output went away (`repair-agent show RUN | head`): the rest of the
    output goes nowhere, quietly, as with `cat`."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


class RunsDirAction(argparse.Action):
    """Stores --runs-dir and notes that it was given (not the default), for the commands that
    do not keep runs there."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        namespace.runs_dir_given = True
