"""pytest's JUnit XML, read as untrusted input: defusedxml, a size cap, no symlink followed."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from defusedxml import ElementTree as SafeET
from defusedxml.common import DefusedXmlException
from pydantic import BaseModel

from .isolation import read_capped
from .spec import stable_key

MAX_JUNIT_BYTES = 8 * 1024 * 1024


Outcome = Literal["passed", "failed", "error", "skipped"]


class TestCase(BaseModel):
    __test__ = False  # not a pytest test class
    key: str
    outcome: Outcome
    message: str = ""
    # pytest could not collect a file or directory: `key` is "::" + its dotted path (pytest's JUnit
    # name for it), `message` the cause in pytest's own words (collection_cause).
    collection: bool = False
    seconds: float = 0.0  # pytest's own timing of the test (setup, call and teardown)

    @property
    def collected_path(self) -> str:
        """The dotted path a collection error covers (e.g. `tests.test_x`)."""
        return self.key.split("::", 1)[-1]


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
        key = stable_key(f"{tc.get('classname', '')}::{tc.get('name', '')}")
        outcome: Outcome = "passed"
        message = ""
        readings: tuple[tuple[str, Outcome], ...] = (("failure", "failed"), ("error", "error"), ("skipped", "skipped"))
        collection = False
        for tag, meaning in readings:
            child = tc.find(tag)
            if child is not None:
                outcome = meaning
                # pytest reports a module it could not import as an error "collection failure"
                # whose text is the traceback: its cause is the line worth reading.
                collection = tag == "error" and child.get("message") == "collection failure"
                first = (child.get("message") or child.text or "").strip().splitlines()[:1]
                message = collection_cause(child.text or "") if collection else (first[0][:300] if first else "")
                break
        try:
            seconds = max(0.0, float(tc.get("time") or 0.0))
        except ValueError:
            seconds = 0.0
        cases.append(TestCase(key=key, outcome=outcome, message=message, collection=collection, seconds=seconds))
    return cases, None


_RAISED = re.compile(r"^E\s+(\w[\w.]*(?:Error|Exception|Exit|Interrupt|Warning)\b.*)$")
_WHERE = re.compile(r"^([^/<\s][^:\s]*\.py):(\d+): in ")


def collection_cause(text: str) -> str:
    """The cause of a collection error in pytest's words: the raised line (`ModuleNotFoundError: No
    module named 'six'`), where in the project it was raised, and a hint when it is the environment."""
    lines = text.splitlines()
    raised = [m.group(1).strip() for m in map(_RAISED.match, lines) if m]
    e_lines = [line[1:].strip() for line in lines if line.startswith("E ")]
    cause = (raised or e_lines or [line.strip() for line in lines if line.strip()][-1:] or ["unknown"])[-1][:300]
    where = [f"{m.group(1)}:{m.group(2)}" for m in map(_WHERE.match, lines) if m]
    hint = " (add it to the environment)" if cause.startswith(("ModuleNotFoundError", "ImportError: No module")) else ""
    return cause + (f" at {where[-1]}" if where else "") + hint


def collection_error_for(key: str, errors: dict[str, str]) -> str | None:
    """The cause of the collection error (dotted path -> cause) a test's JUnit key or dotted path is
    under, or None: `tests.test_x::test_a` and `tests.test_x.TestK::test_b` are under `tests.test_x`."""
    dotted = key.split("::", 1)[0]
    for path, cause in errors.items():
        if dotted == path or dotted.startswith(path + ".") or not path:
            return cause
    return None


def read_result_file(path: Path, cap: int = MAX_JUNIT_BYTES) -> tuple[bytes | None, str | None]:
    """A file a check process wrote, read on the host with the same bounds as inside a container."""
    data, why = read_capped(str(path), cap)
    return data, f"result file {Path(path).name} refused: {why}" if why else None


_EXCEPTION_LINE = re.compile(r"^(?:INTERNALERROR>\s*|E\s+)?((?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception): .+)$")


def last_exception(lines: list[str]) -> str | None:
    """The last `SomeError: message` line of a traceback-bearing output (pytest's `E` and
    `INTERNALERROR>` prefixes left off): what a crash or a failed build says in its own words."""
    for line in reversed(lines):
        m = _EXCEPTION_LINE.match(line.strip())
        if m:
            return m.group(1)
    return None


def crash_cause(output: str) -> str:
    """Why pytest ended without a report, in its own words: the last exception line of its output
    (`OSError: [Errno 30] Read-only file system: '.coverage'`) or its `ERROR:` usage line."""
    lines = output.splitlines()
    said = last_exception(lines) or next((line.strip() for line in reversed(lines)
                                           if line.strip().startswith("ERROR: ")), None)
    if said:
        return said[:300]
    tail = [line.strip() for line in lines if line.strip()]
    return tail[-1][:300] if tail else "no output"
