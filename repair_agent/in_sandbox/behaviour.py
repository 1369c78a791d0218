"""How much a fix changes what the passing tests do, beyond what they assert (stdlib only, Python 3.9
and later, no import of the project: shipped into the sandbox for the mutation analysis).

Several mutants often make every failing target pass and break no passing test; the tests cannot
tell them apart, yet most are wrong (plausible patches). A correct fix tends to change the program's
behaviour on the failing tests and leave it alone on the passing ones, while an overfitting one
changes it there too without breaking an assertion (the patch-similarity heuristic of PATCH-SIM,
Xiong et al., ICSE 2018). `Returns` records, while tests run, the values the writable scope's
functions return (or yield), as short fingerprints; `changed` counts how many of those returns
differ between the original code and a fix, on the same passing tests.
"""
from __future__ import annotations

import os
from typing import Any, Callable, Dict, Sequence, Tuple

MAX_ITEMS = 20      # a container longer than this is fingerprinted by its type and length
MAX_TEXT = 200      # the first characters of a text or a number's repr


def fingerprint(value: Any, depth: int = 0) -> str:
    """A short, deterministic description of a value: its repr for plain data (texts, numbers, None,
    and lists, tuples, sets and dicts of them, two levels deep), else its type's name (an object's
    repr may hold its address)."""
    try:
        if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
            return repr(value)[:MAX_TEXT]
        kind = type(value).__name__
        if depth < 2 and isinstance(value, (list, tuple, set, frozenset, dict)) and len(value) <= MAX_ITEMS:
            if isinstance(value, dict):
                items = sorted("%s:%s" % (fingerprint(k, depth + 1), fingerprint(v, depth + 1)) for k, v in value.items())
            elif isinstance(value, (set, frozenset)):
                items = sorted(fingerprint(x, depth + 1) for x in value)
            else:
                items = [fingerprint(x, depth + 1) for x in value]
            return "%s(%s)" % (kind, ",".join(items))
        if isinstance(value, (list, tuple, set, frozenset, dict)):
            return "%s[%d]" % (kind, len(value))
        return kind
    except Exception:   # a value whose repr or comparison raises
        return "?"


class Returns:
    """A profiler (sys.setprofile) that counts each (function, returned value) of the files `wanted`
    says belong to the writable scope."""

    def __init__(self, wanted: Callable[[str], bool]) -> None:
        self.wanted = wanted
        self.files: Dict[str, bool] = {}
        self.seen: Dict[Tuple[str, str], int] = {}

    def profile(self, frame: Any, event: str, arg: Any) -> None:
        if event != "return":
            return
        code = frame.f_code
        name = code.co_filename
        ok = self.files.get(name)
        if ok is None:
            ok = self.files[name] = not name.startswith("<") and self.wanted(os.path.realpath(name))
        if ok:
            key = (code.co_name, fingerprint(arg))   # not its line: a fix that inserts lines moves the functions after it
            self.seen[key] = self.seen.get(key, 0) + 1


def changed(original: Dict[Tuple[str, str], int], fixed: Dict[Tuple[str, str], int]) -> int:
    """How many returns differ between two recordings of the same tests (as multisets: a call added,
    dropped or returning another value; the order they came in does not matter)."""
    keys = set(original) | set(fixed)
    return (sum(abs(original.get(k, 0) - fixed.get(k, 0)) for k in keys) + 1) // 2


def recorded(run: Callable[[Sequence[str]], Dict[str, str]], tests: Sequence[str],
             wanted: Callable[[str], bool]) -> Tuple[Dict[str, str], Dict[Tuple[str, str], int]]:
    """`run(tests)` with the returns of the writable scope recorded: its outcomes, and the record."""
    import sys

    returns = Returns(wanted)
    previous = sys.getprofile()
    sys.setprofile(returns.profile)
    try:
        outcomes = run(tests)
    finally:
        sys.setprofile(previous)
    return outcomes, returns.seen
