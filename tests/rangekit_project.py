"""A small real Python project with a bug-fix history, built as a git repository by the tests that
import scenarios from it (SWE-bench-style JSONL, fix commits).

History: `initial` (two bugs: in_range excludes its upper bound, span forgets one end), `fix
in_range` (source fix + a new test), `fix span` (source fix + a new test, in one commit).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import git

from helpers import git_history

CORE_BUGGY = '''\
"""Integer ranges."""


def in_range(value, low, high):
    """True when low <= value <= high (both ends included)."""
    return low <= value < high


def clamp(value, low, high):
    """value limited to [low, high]."""
    return max(low, min(value, high))


def span(low, high):
    """How many integers lie in [low, high]."""
    return high - low
'''
TESTS_INITIAL = '''\
from rangekit.core import clamp, in_range, span


def test_clamp_inside():
    assert clamp(5, 0, 10) == 5


def test_clamp_outside():
    assert clamp(-3, 0, 10) == 0
    assert clamp(12, 0, 10) == 10


def test_in_range_low_end():
    assert in_range(0, 0, 10)


def test_span_is_positive():
    assert span(2, 7) > 0
'''
IN_RANGE_TEST = '''

def test_in_range_includes_high():
    assert in_range(10, 0, 10)
'''
SPAN_TEST = '''

def test_span_counts_both_ends():
    assert span(2, 7) == 6
'''


@dataclass
class Rangekit:
    path: Path
    initial: str
    fix_in_range: str
    fix_span: str

    def diff(self, a: str, b: str, *paths: str) -> str:
        return git.Repo(self.path).git.diff(a, b, "--", *paths) + "\n"


def build_rangekit(path: Path) -> Rangekit:
    """The repository at `path`, three commits."""
    (path / "src/rangekit").mkdir(parents=True)
    (path / "tests").mkdir()
    (path / "src/rangekit/__init__.py").write_text('"""rangekit: integer ranges."""\n')
    (path / "src/rangekit/core.py").write_text(CORE_BUGGY)
    (path / "tests/test_core.py").write_text(TESTS_INITIAL)
    (path / "pyproject.toml").write_text('[project]\nname = "rangekit"\nversion = "0.1.0"\n\n'
                                         '[tool.pytest.ini_options]\npythonpath = ["src"]\n')
    commit = git_history(path, "Rangekit Dev", "dev@rangekit.example")

    initial = commit("initial")
    core = path / "src/rangekit/core.py"
    core.write_text(CORE_BUGGY.replace("low <= value < high", "low <= value <= high"))
    (path / "tests/test_core.py").write_text(TESTS_INITIAL + IN_RANGE_TEST)
    fix_in_range = commit("fix in_range: the upper bound is included")
    core.write_text(core.read_text().replace("return high - low", "return high - low + 1"))
    (path / "tests/test_core.py").write_text(TESTS_INITIAL + IN_RANGE_TEST + SPAN_TEST)
    fix_span = commit("fix span: count both ends")
    return Rangekit(path, initial, fix_in_range, fix_span)
