"""LocalSandbox: a temporary directory and subprocesses. It does NOT isolate anything."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from verifier.isolation import CommandResult, Limits, LocalRunner

from .base import GitToolsMixin, SandboxError


class LocalSandbox(GitToolsMixin):
    kind = "local"
    python = sys.executable

    def __init__(self, workspace: Path, base_commit: str, *, output_dir: Path, limits: Limits | None = None):
        self.workspace, self.base_commit, self.output_dir = Path(workspace), base_commit, Path(output_dir)
        self.runner = LocalRunner(limits, workdir=self.workspace)
        self.limits = self.runner.limits
        # Stop git from walking up into an enclosing repository.
        self.env = {"GIT_CEILING_DIRECTORIES": str(self.workspace.parent), "GIT_CONFIG_NOSYSTEM": "1"}

    def use_keep_budget(self, budget) -> None:
        """Share the run's bound on kept output (verifier.isolation.KeepBudget)."""
        self.runner.budget = budget

    def run(self, argv: list[str], *, timeout_s: float = 30.0, output_cap: int | None = None,
            env: dict[str, str] | None = None) -> CommandResult:
        return self.runner.exec(argv, timeout_s=timeout_s, output_dir=self.output_dir, env={**(env or {}), **self.env},
                                output_cap=output_cap)

    def write_file(self, path: str, content: bytes) -> None:
        target = (self.workspace / path).resolve()
        if not str(target).startswith(str(self.workspace.resolve()) + os.sep):
            raise SandboxError(f"refusing to write outside the workspace: {path}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)

    def close(self) -> bool:
        return True  # nothing to remove: the workspace stays in the run directory for review
