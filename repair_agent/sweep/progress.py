"""A sweep's progress: a rich progress bar on a terminal, plain lines otherwise."""
from __future__ import annotations

import sys

from .jobs import SweepResult

class Progress:
    """A rich progress bar on a terminal; plain lines otherwise."""

    def __init__(self, total: int, done: int, stream=None):
        self.stream = stream or sys.stderr
        self.total, self.done = total, done
        self.bar = None
        if self.stream.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress as RichProgress, TextColumn, \
                TimeElapsedColumn, TimeRemainingColumn

            self.bar = RichProgress(TextColumn("sweep"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                    TimeRemainingColumn(), TextColumn("{task.description}"),
                                    console=Console(file=self.stream))
            self.task = self.bar.add_task("", total=total, completed=done)
            self.bar.start()
        else:
            print(f"sweep: {total} run(s), {done} already finished", file=self.stream, flush=True)

    def advance(self, result: SweepResult) -> None:
        self.done += 1
        text = (f"{result.scenario} {result.chooser} b={result.budget} s={result.seed}: "
                f"{result.status} ({result.steps} steps, {result.wall_s:.1f}s)")
        if self.bar is not None:
            self.bar.console.print(f"[{self.done}/{self.total}] {text}", highlight=False, markup=False)
            self.bar.update(self.task, advance=1, description="")
        else:
            print(f"[{self.done}/{self.total}] {text}", file=self.stream, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
