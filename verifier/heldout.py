"""Held-out behaviour checks: inputs the visible tests never use, expected values that never
leave the host.

A scenario author writes `NAME.heldout.toml` next to the manifest:

    paths = ["src"]                                        # import roots inside the repository
    setup = "from discount_shop.pricing import apply_discount"

    [[case]]
    name = "seven_percent_of_300"
    expr = "apply_discount(300, 7)"
    expect = 279.0                                         # or expect_json = 'null', or raises = "ValueError"

Only `paths`, `setup` and each case's `name`/`setup`/`expr` enter the check container (run by
probe.py in a fresh interpreter after the tests); the comparison happens here, on plain data.
"""
from __future__ import annotations

import json
import math
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .probe import MARKER, to_plain

FLOAT_TOLERANCE = 1e-9


class HeldoutError(ValueError):
    """A held-out file that cannot be used; the message names the file and the case."""


class HeldoutCase(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = Field(pattern=r"^[A-Za-z0-9_.:-]+$")
    expr: str = Field(min_length=1)
    setup: str = ""
    expect: Any = None
    expect_json: str | None = None
    raises: str | None = None
    tolerance: float = Field(FLOAT_TOLERANCE, ge=0)

    @model_validator(mode="after")
    def _one_expectation(self) -> "HeldoutCase":
        given = [self.expect is not None, self.expect_json is not None, self.raises is not None]
        if sum(given) != 1:
            raise ValueError(f"case {self.name!r}: give exactly one of expect, expect_json, raises")
        if self.expect_json is not None:
            json.loads(self.expect_json)
        return self

    def expected_plain(self) -> Any:
        return to_plain(json.loads(self.expect_json)) if self.expect_json is not None else to_plain(self.expect)


class HeldoutSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    paths: tuple[str, ...] = (".",)
    setup: str = ""
    case: tuple[HeldoutCase, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_names(self) -> "HeldoutSpec":
        names = [c.name for c in self.case]
        if len(set(names)) != len(names):
            raise ValueError(f"case names repeat: {sorted({n for n in names if names.count(n) > 1})}")
        for p in self.paths:
            if p.startswith("/") or ".." in p.split("/"):
                raise ValueError(f"paths must stay inside the repository: {p!r}")
        return self

    @classmethod
    def load(cls, path: Path) -> "HeldoutSpec":
        try:
            return cls.model_validate(tomllib.loads(Path(path).read_text()))
        except (OSError, tomllib.TOMLDecodeError, ValueError) as exc:
            raise HeldoutError(f"{path}: {exc}") from exc

    def request(self, root: str) -> dict:
        """What the probe receives: inputs only, never an expectation."""
        return {"root": root, "paths": list(self.paths), "setup": self.setup,
                "cases": [{"name": c.name, "setup": c.setup, "expr": c.expr} for c in self.case]}


class CaseResult(BaseModel):
    name: str
    ok: bool
    got: Any = None
    expected: Any = None


class HeldoutResult(BaseModel):
    """The host's judgement of one probe run. `cases` holds inputs' names and values: it is for
    the person's report, never for the chooser's view (see `summary`)."""

    ok: bool
    total: int
    passed: int
    problem: str | None = None
    cases: list[CaseResult] = []

    @property
    def summary(self) -> str:
        if self.problem:
            return f"held-out checks: not judged ({self.problem})"
        return f"held-out checks: {self.passed}/{self.total} passed"


def same(expected: Any, got: Any, tolerance: float = FLOAT_TOLERANCE) -> bool:
    """Equality of plain data; floats within tolerance, ints and floats compare by value, bools
    never equal numbers, a tuple may stand where a list is expected."""
    if isinstance(expected, bool) or isinstance(got, bool):
        return type(expected) is type(got) and expected == got
    if isinstance(expected, (int, float)) and isinstance(got, (int, float)):
        return math.isclose(expected, got, rel_tol=tolerance, abs_tol=tolerance)
    if isinstance(expected, list):
        if isinstance(got, dict) and set(got) == {"__tuple__"}:
            got = got["__tuple__"]
        return isinstance(got, list) and len(got) == len(expected) and all(
            same(e, g, tolerance) for e, g in zip(expected, got))
    if isinstance(expected, dict):
        return isinstance(got, dict) and expected.keys() == got.keys() and all(
            same(expected[k], got[k], tolerance) for k in expected)
    return type(expected) is type(got) and expected == got


def parse_probe_output(stdout: str) -> tuple[dict | None, str | None]:
    """The probe's single marked line; more than one (something else printed the marker) or none
    is a doubt, not a result."""
    lines = [line[len(MARKER):] for line in stdout.split("\n") if line.startswith(MARKER)]
    if len(lines) != 1:
        return None, f"expected one probe result line, found {len(lines)}"
    try:
        data = json.loads(lines[0])
    except json.JSONDecodeError as exc:
        return None, f"probe result does not parse: {exc}"
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        return None, "probe result has no results list"
    return data, None


def judge_heldout(spec: HeldoutSpec, probe: dict | None, problem: str | None) -> HeldoutResult:
    """Pure: the host's comparison of the probe's plain data with the expectations it kept."""
    total = len(spec.case)
    if probe is None:
        return HeldoutResult(ok=False, total=total, passed=0, problem=problem or "no probe output")
    by_name: dict[str, dict] = {}
    for row in probe["results"]:
        if not isinstance(row, dict) or not isinstance(row.get("name"), str):
            return HeldoutResult(ok=False, total=total, passed=0, problem="malformed probe row")
        if row["name"] in by_name:
            return HeldoutResult(ok=False, total=total, passed=0, problem=f"case reported twice: {row['name']}")
        by_name[row["name"]] = row
    unknown = sorted(by_name.keys() - {c.name for c in spec.case})
    results = []
    for case in spec.case:
        row = by_name.get(case.name)
        if row is None:
            results.append(CaseResult(name=case.name, ok=False, got="(not reported)", expected=_shown(case)))
            continue
        if case.raises is not None:
            raised = row.get("raised")
            ok = isinstance(raised, list) and any(
                isinstance(n, str) and (n == case.raises or n.rsplit(".", 1)[-1] == case.raises
                                        or n == f"builtins.{case.raises}") for n in raised)
            got = {"raised": raised} if "raised" in row else row.get("value")
        else:
            ok = "raised" not in row and "value" in row and same(case.expected_plain(), row["value"], case.tolerance)
            got = row.get("value") if "raised" not in row else {"raised": row.get("raised")}
        results.append(CaseResult(name=case.name, ok=bool(ok), got=got, expected=_shown(case)))
    passed = sum(r.ok for r in results)
    problem = f"unknown case(s) reported: {unknown[:3]}" if unknown else None
    return HeldoutResult(ok=passed == total and not unknown, total=total, passed=passed, problem=problem,
                         cases=results)


def _shown(case: HeldoutCase) -> Any:
    return {"raises": case.raises} if case.raises is not None else case.expected_plain()


PROBE_SOURCE = Path(__file__).with_name("probe.py")


def run_probe_local(spec: HeldoutSpec, root: Path, *, timeout_s: float = 60.0) -> HeldoutResult:
    """The probe in a plain local subprocess (NOT isolated): for scenario authors and the local
    backend. The verifier's docker backend runs the same probe inside the check container."""
    import subprocess
    import sys

    request = json.dumps(spec.request(str(Path(root).resolve())))
    try:
        proc = subprocess.run([sys.executable, "-I", "-S", str(PROBE_SOURCE)], input=request.encode(),
                              capture_output=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return judge_heldout(spec, None, f"the probe did not finish within {timeout_s:g}s")
    probe, problem = parse_probe_output(proc.stdout.decode(errors="replace"))
    return judge_heldout(spec, probe, problem)


def main(argv: list[str] | None = None) -> int:
    """`python -m verifier.heldout FILE.heldout.toml TREE`: judge a tree locally, print each case."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m verifier.heldout", description=main.__doc__)
    parser.add_argument("heldout", type=Path)
    parser.add_argument("tree", type=Path)
    args = parser.parse_args(argv)
    result = run_probe_local(HeldoutSpec.load(args.heldout), args.tree)
    for case in result.cases:
        print(f"{'ok  ' if case.ok else 'FAIL'} {case.name}: got {json.dumps(case.got)} expected {json.dumps(case.expected)}")
    print(result.summary)
    return 0 if result.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
