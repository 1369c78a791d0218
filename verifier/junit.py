"""pytest's JUnit XML, read as untrusted input: defusedxml, a size cap, no symlink followed."""
from __future__ import annotations

from pathlib import Path
from typing import Literal

from defusedxml import ElementTree as SafeET
from defusedxml.common import DefusedXmlException
from pydantic import BaseModel

from .isolation import read_capped

MAX_JUNIT_BYTES = 8 * 1024 * 1024


Outcome = Literal["passed", "failed", "error", "skipped"]


class TestCase(BaseModel):
    __test__ = False  # not a pytest test class
    key: str
    outcome: Outcome
    message: str = ""


def parse_junit_bytes(data: bytes | None) -> tuple[list[TestCase], str | None]:
    if data is None:
        return [], "no JUnit report was written"
    if len(data) > MAX_JUNIT_BYTES:
        return [], "JUnit report is implausibly large"
    try:
        root = SafeET.fromstring(data)
    except (SafeET.ParseError, DefusedXmlException, ValueError) as exc:
        return [], f"JUnit report does not parse: {type(exc).__name__}: {str(exc)[:200]}"
    cases = []
    for tc in root.iter("testcase"):
        key = f"{tc.get('classname', '')}::{tc.get('name', '')}"
        outcome: Outcome = "passed"
        message = ""
        readings: tuple[tuple[str, Outcome], ...] = (("failure", "failed"), ("error", "error"), ("skipped", "skipped"))
        for tag, meaning in readings:
            child = tc.find(tag)
            if child is not None:
                outcome = meaning
                first = (child.get("message") or child.text or "").strip().splitlines()[:1]
                message = first[0][:300] if first else ""
                break
        cases.append(TestCase(key=key, outcome=outcome, message=message))
    return cases, None


def read_result_file(path: Path, cap: int = MAX_JUNIT_BYTES) -> tuple[bytes | None, str | None]:
    """A file a check process wrote, read on the host with the same bounds as inside a container."""
    data, why = read_capped(str(path), cap)
    return data, f"result file {Path(path).name} refused: {why}" if why else None
