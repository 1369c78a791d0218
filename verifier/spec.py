"""Acceptance specs: what must become true, what may be written, and what may never be touched."""
from __future__ import annotations

import functools
import hashlib
import re
import shutil
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

# The tree helpers live in trees.py; spec keeps their names for its importers.
from .trees import copy_tree, sha256_file, tree_files, tree_sha256  # noqa: F401

# Always protected, whatever a manifest says: the referee and everything that configures it.
DEFAULT_PROTECTED: tuple[str, ...] = (
    ".git/**", "tests/**", "test/**", "**/conftest.py", "pyproject.toml", "setup.cfg", "setup.py",
    "tox.ini", "pytest.ini", ".pytest.ini", "**/pytest.ini", "**/tox.ini", "**/setup.cfg",
    "**/pyproject.toml", ".gitattributes", "**/.gitattributes", ".gitmodules",
)
# Test infrastructure a candidate may never add, even inside a writable glob: each of these
# can change what pytest or the interpreter does before a single test runs.
REFUSED_INFRASTRUCTURE: tuple[str, ...] = (
    "**/conftest.py", "**/sitecustomize.py", "**/usercustomize.py", "**/*.pth",
    "**/pytest.ini", "**/.pytest.ini", "**/tox.ini", "**/setup.cfg", "**/pyproject.toml",
    "**/pytest.py", "**/_pytest/**",
)


@functools.lru_cache(maxsize=512)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """`**` spans directories, `*` and `?` stay within one path segment; `**/x` also matches `x`."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def glob_match(path: str, patterns) -> str | None:
    """The first pattern that matches `path` (repository-relative, POSIX), or None."""
    for pattern in patterns:
        if glob_regex(pattern).match(path):
            return pattern
    return None

PER_TEST_FLOOR_S = 5.0


class AcceptanceSpec(BaseModel):
    """The protected goal's technical half. Frozen: nothing inside the loop can change it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    scenario: str
    target_tests: tuple[str, ...] = Field(min_length=1, description="fail-to-pass pytest node ids")
    # Pass-to-pass pytest node ids. Empty: the suite condition is the whole suite. Given: it is
    # "these tests pass" and only the targets and these tests run (real suites are slow and have
    # failures that depend on where they run).
    pass_to_pass: tuple[str, ...] = ()
    writable: tuple[str, ...] = ("src/**",)
    protected: tuple[str, ...] = ()
    test_timeout_s: float = 120.0
    # One test's call may take this long; beyond it that test fails alone (0: no per-test limit).
    per_test_timeout_s: float = 60.0
    max_diff_bytes: int = 200_000
    max_changed_lines: int = 2_000

    @property
    def check_per_test_timeout_s(self) -> float:
        """The per-test limit a check passes to pytest-timeout: the spec's, but at most a quarter of
        the suite's limit (never under 5 s unless the suite's is under 10 s), so a test that hangs
        fails alone with its id instead of the suite limit cutting pytest before it reports anything."""
        if not self.per_test_timeout_s:
            return 0.0
        return min(self.per_test_timeout_s, max(min(PER_TEST_FLOOR_S, self.test_timeout_s / 2), self.test_timeout_s / 4))

    @property
    def suite_selection(self) -> tuple[str, ...]:
        """The node ids a suite run passes to pytest: none (the whole suite) or targets + the list."""
        if not self.pass_to_pass:
            return ()
        return tuple(dict.fromkeys(self.target_tests + self.pass_to_pass))

    @property
    def all_protected(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(DEFAULT_PROTECTED + self.protected))

    def is_protected(self, path: str) -> str | None:
        return glob_match(path, self.all_protected)

    def is_writable(self, path: str) -> bool:
        return glob_match(path, self.writable) is not None and not self.is_protected(path)


def nodeid_to_junit_key(nodeid: str) -> str:
    """pytest's own JUnit naming: `tests/test_a.py::TestX::test_y[1]` -> `tests.test_a.TestX::test_y[1]`."""
    parts = nodeid.split("::")
    module = parts[0]
    if module.endswith(".py"):
        module = module[:-3]
    names = [module.replace("/", ".")] + parts[1:-1]
    return stable_key(".".join(names) + "::" + parts[-1])


_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{6,}\b")


def stable_key(key: str) -> str:
    """A test's key the same in every run: a parameter shown by its default repr carries its memory
    address (`[<FakeDate object at 0x7feb1ff26650>]`), which differs from one process to the next."""
    return _ADDRESS.sub("0x?", key)


class ProtectedSnapshot(BaseModel):
    """The verifier's own copy of the pristine repository and the sha256 of every protected file."""

    model_config = ConfigDict(frozen=True)

    root: str
    protected_sha256: dict[str, str]
    tree_sha256: str

    @property
    def manifest_sha256(self) -> str:
        lines = "".join(f"{h}  {p}\n" for p, h in sorted(self.protected_sha256.items()))
        return hashlib.sha256(lines.encode()).hexdigest()

    @classmethod
    def capture(cls, pristine: Path, dest: Path, spec: AcceptanceSpec) -> "ProtectedSnapshot":
        if dest.exists():
            shutil.rmtree(dest)
        copy_tree(pristine, dest)
        digests = {rel: sha256_file(dest / rel) for rel in tree_files(dest)}
        protected = {rel: digest for rel, digest in digests.items() if spec.is_protected(rel)}
        # The snapshot must stay read-only for everyone but the verifier (a script the suite runs
        # keeps its executable bit).
        for p in [dest, *dest.rglob("*")]:
            if not p.is_symlink():
                p.chmod(0o555 if p.is_dir() or p.stat().st_mode & 0o100 else 0o444)
        return cls(root=str(dest), protected_sha256=protected, tree_sha256=tree_sha256(dest, digests))

    def check_intact(self) -> list[str]:
        """Protected files of the snapshot whose content no longer matches the captured hash."""
        root = Path(self.root)
        return [rel for rel, digest in self.protected_sha256.items()
                if not ((root / rel).is_symlink() or (root / rel).is_file()) or sha256_file(root / rel) != digest]
