"""What a clean mutant does on the tests, as one digest (mutants.py records it for each clean fix).

Several edits often pass every test the analysis ran: `x - len(sep) + 1` and `x` where every test's
separator is one character long. Two fixes with the same digest did the same thing on those tests,
down to what each function of the mutated file returned or yielded to code outside the file and the
shallow state of the object a method ran on: the tests cannot tell them apart. The result carries it
for a chooser to weigh; the search chooser does not yet (trying the one that adds the fewest tokens
first lost two held-out scenarios for one won; counting the returns on the passing tests that differ
from the unmutated code's told no two clean fixes of any corpus apart: docs/results.md).

The standard library only, Python 3.9 and later (shipped as `ra_behaviour`); nothing runs at import.
"""
from __future__ import annotations

import hashlib
import re
import sys
from typing import Any, Dict, List

MAX_EVENTS = 20000        # returns recorded in one run; past it only their number counts
MAX_REPR = 200
MAX_ATTRIBUTES = 20
ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def stable_repr(value: Any, limit: int = MAX_REPR) -> str:
    """A value's repr without the memory addresses that differ from run to run (cut to `limit`)."""
    try:
        text = repr(value)
    except Exception:   # a repr that fails is still a kind of value
        text = "<" + type(value).__name__ + ">"
    return ADDRESS.sub("", text)[:limit]


def shallow_state(obj: Any) -> str:
    """The attributes of the object a method ran on: a container by its size, anything else by its repr."""
    try:
        items = sorted(vars(obj).items())[:MAX_ATTRIBUTES]
    except TypeError:
        return ""
    parts = []
    for name, value in items:
        try:
            shown = f"#{len(value)}" if hasattr(value, "__len__") and not isinstance(value, str) else stable_repr(value, 40)
        except Exception:
            shown = "?"
        parts.append(f"{name}{shown}")
    return "|".join(parts)


class Recorder:
    """A `sys.setprofile` function recording the returns (and yields) of the file's functions to their
    callers outside it: what the tests and the rest of the code can see of it, not how it got there
    (`size = limit` and `size = limit - width(sep) + 1` call `width` or do not, and return the same)."""

    def __init__(self, path: str) -> None:
        self.suffix = "/" + path      # the file's path in the repository: a code object's file name ends with it
        self.events: List[str] = []
        self.dropped = 0

    def __enter__(self) -> "Recorder":
        self.previous = sys.getprofile()
        sys.setprofile(self.profile)
        return self

    def __exit__(self, *exc: Any) -> None:
        sys.setprofile(self.previous)

    def profile(self, frame: Any, event: str, arg: Any) -> None:
        if event != "return" or not frame.f_code.co_filename.endswith(self.suffix):
            return
        if len(self.events) >= MAX_EVENTS:
            self.dropped += 1
            return
        back = frame.f_back
        if back is not None and back.f_code.co_filename.endswith(self.suffix):
            return   # a call within the file: only what its callers outside it get back is behaviour
        code = frame.f_code
        owner = frame.f_locals.get("self") if code.co_varnames[:1] == ("self",) else None
        self.events.append(f"{code.co_name}={stable_repr(arg)}" + (f"@{shallow_state(owner)}" if owner is not None else ""))

    def digest(self, outcomes: Dict[str, str]) -> str:
        """The recorded returns and every test's outcome, as a short hex digest."""
        h = hashlib.sha1()
        for test in sorted(outcomes):
            h.update(f"{test}:{outcomes[test]}\n".encode("utf-8", "replace"))
        for event in self.events:
            h.update(event.encode("utf-8", "replace") + b"\n")
        h.update(str(self.dropped).encode())
        return h.hexdigest()[:12]
