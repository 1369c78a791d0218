"""Canary tests: added to the verifier's own copy of a test file for one check, with names,
values and a place the candidate cannot know in advance. Some must fail, some must pass.

A process that reports a must-fail canary as passed (or a must-pass one as failed, or loses one)
lied about its results, however it did it: blanket suppression of failures, a rewritten report,
patched runner internals. The check then fails as tampered. Nothing here needs to know the trick.
"""
from __future__ import annotations

import re
import secrets
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from .junit import TestCase
from .spec import nodeid_to_junit_key

_RANDOM = secrets.SystemRandom()
_VERBS = ("parses", "keeps", "rounds", "splits", "merges", "orders", "accepts", "rejects", "formats", "counts",
          "handles", "returns", "maps", "builds", "reads", "updates", "skips", "joins", "scales", "limits")
_NOUNS = ("empty_input", "large_values", "unicode", "defaults", "boundaries", "duplicates", "negative_numbers",
          "nested_items", "whitespace", "zero", "single_item", "mixed_case", "long_names", "trailing_data",
          "precision", "ordering", "none_values", "repeats", "small_steps", "edge_case")


class Canary(BaseModel):
    model_config = ConfigDict(frozen=True)

    path: str                       # the test file it was added to (repository-relative)
    name: str
    must: Literal["pass", "fail"]
    token: str                      # a must-fail canary's failure message carries it

    @property
    def nodeid(self) -> str:
        return f"{self.path}::{self.name}"

    @property
    def key(self) -> str:
        return nodeid_to_junit_key(self.nodeid)


def host_file(target_tests: tuple[str, ...], tree: Path) -> str | None:
    """The test file canaries go into: the first target's file, when it is a Python file in the tree."""
    for target in target_tests:
        path = target.split("::", 1)[0]
        if path.endswith(".py") and (tree / path).is_file() and not (tree / path).is_symlink():
            return path
    return None


def plan(path: str) -> list[Canary]:
    """Two to four canaries, at least one of each kind, with fresh names and tokens."""
    extra: list[Literal["pass", "fail"]] = ["fail", "pass", "fail", "pass"]
    kinds: list[Literal["pass", "fail"]] = ["fail", "pass", *_RANDOM.sample(extra, _RANDOM.randint(0, 2))]
    _RANDOM.shuffle(kinds)
    names: set[str] = set()
    while len(names) < len(kinds):
        names.add(f"test_{_RANDOM.choice(_VERBS)}_{_RANDOM.choice(_NOUNS)}_{secrets.token_hex(3)}")
    return [Canary(path=path, name=name, must=must, token=secrets.token_hex(8))
            for name, must in zip(sorted(names, key=lambda _: _RANDOM.random()), kinds)]


def _body(canary: Canary) -> str:
    a, b = _RANDOM.randint(2, 9999), _RANDOM.randint(2, 9999)
    if canary.must == "pass":
        return f"    assert {a} * {b} == {a * b}\n"
    if _RANDOM.random() < 0.5:
        return f"    assert {a} + {b} == {a + b + _RANDOM.randint(1, 99)}, {canary.token!r}\n"
    return f"    raise ValueError({canary.token!r})\n"


def place(tree: Path, canaries: list[Canary]) -> None:
    """Append the canaries to their file in this check's tree (never the verifier's snapshot)."""
    if not canaries:
        return
    path = tree / canaries[0].path
    text = path.read_text(encoding="utf-8", errors="surrogateescape")
    code = "".join(f"\n\ndef {c.name}():\n{_body(c)}" for c in canaries)
    path.write_text(text + ("" if text.endswith("\n") else "\n") + code, encoding="utf-8", errors="surrogateescape")


def judge(canaries: list[Canary], cases: list[TestCase]) -> tuple[list[TestCase], list[str]]:
    """(the cases without the canaries, what the canaries say is wrong)."""
    keys = {c.key: c for c in canaries}
    by_key = {case.key: case for case in cases}
    problems = []
    for canary in canaries:
        case = by_key.get(canary.key)
        if case is None:
            problems.append(f"a canary test that must {canary.must} was not reported")
        elif canary.must == "fail" and (case.outcome not in ("failed", "error") or canary.token not in case.message):
            problems.append(f"a canary test that must fail was reported {case.outcome}: "
                            "the check process misreports failures")
        elif canary.must == "pass" and case.outcome != "passed":
            problems.append(f"a canary test that must pass was reported {case.outcome}: "
                            "the check process misreports results")
    return [case for case in cases if case.key not in keys], problems


_SECTION = re.compile(r"^(_{3,}|={3,}) .* (_{3,}|={3,})$")
_COUNT = re.compile(r"(\d+) (failed|passed)")


def scrub(text: str, canaries: list[Canary]) -> str:
    """pytest's console output without the canaries, for the chooser's view: their failure sections
    and summary lines go, and the final counts leave them out (a chooser that saw them could learn
    their names, and would read their failures as the bug's). The whole output stays on the host."""
    if not canaries:
        return text
    marks = [c.name for c in canaries] + [c.token for c in canaries]
    out: list[str] = []
    skipping = False
    for line in text.split("\n"):
        if _SECTION.match(line):
            skipping = any(m in line for m in marks)
        if skipping or any(m in line for m in marks):
            continue
        out.append(line)
    failed = sum(c.must == "fail" for c in canaries)
    passed = len(canaries) - failed
    for i in range(len(out) - 1, -1, -1):  # the last counts line: "3 failed, 134 passed in 1.2s"
        if _COUNT.search(out[i]) and (" in " in out[i]):
            out[i] = _COUNT.sub(lambda m: f"{max(0, int(m.group(1)) - (failed if m.group(2) == 'failed' else passed))} "
                                          f"{m.group(2)}", out[i])
            break
    return "\n".join(out)
