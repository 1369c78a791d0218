"""The sandbox role: one typed interface over the real files, with two implementations."""
from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

from verifier.isolation import CommandResult
from verifier.scope import recount_hunks


@runtime_checkable
class Sandbox(Protocol):
    kind: str        # its backend's name: where an observation came from ("sandbox:KIND"); what it isolates
                     # is the backend's to say (backends.Backend.isolated)
    python: str      # the interpreter a program run in it uses
    workspace: Path  # host path of the workspace (kept in the run directory for review)
    base_commit: str  # the workspace's one commit: the pristine tree every diff is taken against

    def run(self, argv: list[str], *, timeout_s: float = ..., output_cap: int | None = None,
            env: dict[str, str] | None = None) -> CommandResult: ...
    def read_file(self, path: str, start_line: int | None = None, end_line: int | None = None,
                  line_numbers: bool = False) -> CommandResult: ...
    def write_file(self, path: str, content: bytes) -> None: ...
    def search(self, query: str, path_glob: str | None = None) -> CommandResult: ...
    def apply_patch(self, diff: str) -> CommandResult: ...
    def apply_patch_and_diff(self, diff: str) -> tuple[CommandResult, str | None]: ...
    def diff(self) -> str: ...
    def use_keep_budget(self, budget) -> None:
        """Count this sandbox's kept output against the run's bound (verifier.isolation.KeepBudget)."""
        ...
    def close(self) -> bool:
        """Remove what the sandbox holds; False when that could not be done (the caller says so)."""
        ...


def search_argv(query: str, path_glob: str | None) -> list[str]:
    # Literal search over tracked and new files; `-e` keeps a query starting with '-' a pattern.
    argv = ["git", "grep", "-n", "-I", "--untracked", "--no-color", "-F", "-e", query, "--"]
    return argv + ([f":(glob){path_glob}"] if path_glob else [])


def read_argv(path: str, start_line: int | None, end_line: int | None, line_numbers: bool = False) -> list[str]:
    first, last = start_line or 1, end_line or 10**9
    if line_numbers:
        # `cat -n` style: a model writing a hunk header needs the numbers. "./" keeps awk from
        # reading a path such as `a=b.py` as a variable assignment.
        program = 'NR >= a { printf "%6d\\t%s\\n", NR, $0 } NR >= b { exit }'
        return ["awk", "-v", f"a={first}", "-v", f"b={last}", program, f"./{path}"]
    return ["sed", "-n", f"{first},{last}p", "--", path]


DIFF_SCRIPT = ("git add -A -- . && git diff --cached --no-color --no-ext-diff --no-renames "
               "--binary --full-index \"$0\"")
INCOMING = ".git/ra-incoming.diff"  # inside .git: the patch file itself never shows up in the diff
APPLY_ARGV = ["git", "apply", "--recount", "--whitespace=nowarn", "--verbose", INCOMING]
# git apply, then (only if it applied) the new diff: one command in the sandbox instead of two. The
# apply's messages go to stderr, the diff alone to stdout; a failure after the apply exits with
# DIFF_FAILED, which git apply itself never uses.
DIFF_FAILED = 97
APPLY_AND_DIFF_SCRIPT = (f"{' '.join(APPLY_ARGV)} 1>&2 || exit $?; "
                         f"{{ {DIFF_SCRIPT}; }} || exit {DIFF_FAILED}")


# A patch small enough for one environment string (the kernel's limit is 128 KiB) travels in the
# command's environment, base64-encoded, and the command writes it: no separate trip through the
# engine's archive API before the apply.
PATCH_ENV_MAX = 96 * 1024
PATCH_FROM_ENV = f'printf %s "$RA_PATCH" | base64 -d > {INCOMING} || exit 96; '

# The whole candidate diff must come back: larger than this is refused, never truncated.
DIFF_CAP = 4 * 1024 * 1024


class SandboxError(RuntimeError):
    """A sandbox operation failed in a way that is not the candidate's doing."""


class GitToolsMixin:
    """The tool commands both sandboxes share; each sandbox supplies `run` and `write_file` (and may
    replace `incoming`)."""

    base_commit: str

    def read_file(self, path: str, start_line: int | None = None, end_line: int | None = None,
                  line_numbers: bool = False) -> CommandResult:
        return self.run(read_argv(path, start_line, end_line, line_numbers))

    def search(self, query: str, path_glob: str | None = None) -> CommandResult:
        return self.run(search_argv(query, path_glob))

    def incoming(self, patch: bytes) -> tuple[str, dict[str, str]]:
        """Put `patch` at INCOMING, or say how the command does: (a shell prefix that writes it,
        that prefix's environment). Here: written before the command, nothing to add."""
        self.write_file(INCOMING, patch)
        return "", {}

    def apply_patch(self, diff: str) -> CommandResult:
        # Applied with its hunk headers recounted: exactly the text the scope check parsed
        # (verifier.scope.recount_hunks).
        prefix, env = self.incoming(recount_hunks(diff).encode("utf-8", errors="surrogateescape"))
        return self.run(["sh", "-c", prefix + " ".join(APPLY_ARGV)] if prefix else APPLY_ARGV, env=env)

    def apply_patch_and_diff(self, diff: str) -> tuple[CommandResult, str | None]:
        """apply_patch, then diff() if it applied, in one command: (the command, the new diff or None
        when the patch did not apply). Its stdout is the diff, its stderr the apply's messages."""
        prefix, env = self.incoming(recount_hunks(diff).encode("utf-8", errors="surrogateescape"))
        res = self.run(["sh", "-c", prefix + APPLY_AND_DIFF_SCRIPT, self.base_commit], output_cap=DIFF_CAP, env=env)
        if res.exit_code == DIFF_FAILED or (res.ok and res.stdout.truncated):
            raise SandboxError(f"git diff failed (exit {res.exit_code}, truncated={res.stdout.truncated}): "
                               f"{res.stderr.text[-1000:]}")
        return res, (res.stdout.text if res.ok else None)

    def diff(self) -> str:
        res = self.run(["sh", "-c", DIFF_SCRIPT, self.base_commit], output_cap=DIFF_CAP)
        if not res.ok or res.stdout.truncated:
            raise SandboxError(f"git diff failed (exit {res.exit_code}, truncated={res.stdout.truncated}): "
                               f"{res.stderr.text[-1000:]}")
        return res.stdout.text
