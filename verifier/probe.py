"""Held-out behaviour probe: evaluates the scenario's held-out inputs on the candidate tree and
prints what came back as plain data. Stdlib only; copied into the check container.

It never sees an expected value: the verifier keeps those on the host and compares them with
this probe's output in its own process. Code under test can make this process print anything,
but without the expected values the only way to print the right answers is to compute them.

Usage: python3 probe.py REQUEST.json     (or the JSON on stdin, or in RA_PROBE)
    {"root": "/workspace", "paths": ["src"], "setup": "...", "cases": [{"name", "setup", "expr"}],
     "case_timeout_s": 2.0, "budget_s": 20}     (optional: each case's and all cases' time limit)
Prints one line: MARKER + JSON {"results": [{"name", "value" | "raised": [mro names] | "timed_out": true}],
"clock": the time.time() this process saw when it started}.

The host imports `to_plain` from this same file, so both sides encode values the same way.
"""
import datetime
import decimal
import fractions
import json
import math
import os
import signal
import sys
import time

MARKER = "\x1eRA-PROBE "
MAX_ITEMS = 10_000
MAX_DEPTH = 20

# Captured before any candidate import: code under test may rebind the builtins later.
_type, _isinstance, _len, _str, _repr_float = type, isinstance, len, str, float.__repr__
_dict_items, _list_iter = dict.items, list.__iter__
_PLAIN_SCALARS = (type(None), bool, int, str)


class _CaseTimedOut(BaseException):
    """One case ran past its time limit."""


def _type_name(cls) -> str:
    """A class's real module and qualified name, read from the type's own slots (not from
    attributes a class can override)."""
    qualname = type.__dict__["__qualname__"].__get__(cls)
    module = type.__dict__["__module__"].__get__(cls)
    return f"{module}.{qualname}" if _type(module) is str and _type(qualname) is str else "?"


def to_plain(value, depth=0, budget=None):
    """Plain JSON for values of exactly the built-in types the judge can compare; everything
    else (subclasses included: a float subclass may lie in __eq__) becomes a tagged type name.
    No method of the value's own class is ever called."""
    budget = budget if budget is not None else [MAX_ITEMS]
    budget[0] -= 1
    if budget[0] < 0 or depth > MAX_DEPTH:
        return {"__unjudgeable__": "too large or too deep"}
    t = _type(value)
    if t in _PLAIN_SCALARS:
        return value
    if t is float:
        return value if math.isfinite(value) else {"__float__": _repr_float(value)}
    if t is list or t is tuple:
        items = [to_plain(v, depth + 1, budget) for v in _list_iter(list(value))] if t is tuple \
            else [to_plain(v, depth + 1, budget) for v in _list_iter(value)]
        return items if t is list else {"__tuple__": items}
    if t is dict:
        pairs = [[to_plain(k, depth + 1, budget), to_plain(v, depth + 1, budget)] for k, v in _dict_items(value)]
        if all(_type(k) is str for k, _ in pairs):
            return {"__dict__": {k: v for k, v in pairs}}
        return {"__dict_pairs__": pairs}
    if t is set or t is frozenset:
        items = [to_plain(v, depth + 1, budget) for v in value]
        return {"__set__": sorted(items, key=lambda x: json.dumps(x, sort_keys=True))}
    if t is datetime.date:
        return {"__date__": datetime.date.isoformat(value)}
    if t is datetime.datetime:
        return {"__datetime__": datetime.datetime.isoformat(value)}
    if t is datetime.time:
        return {"__time__": datetime.time.isoformat(value)}
    if t is datetime.timedelta:
        return {"__timedelta__": [value.days, value.seconds, value.microseconds]}
    if t is decimal.Decimal:
        return {"__decimal__": decimal.Decimal.__str__(value)}
    if t is fractions.Fraction:
        return {"__fraction__": [value.numerator, value.denominator]}
    if t is bytes:
        return {"__bytes__": bytes.hex(value)}
    return {"__unjudgeable__": _type_name(t)}


def _raised(exc) -> list:
    """The exception's class and its bases, by real name: the judge accepts a subclass."""
    return [_type_name(c) for c in type.__dict__["__mro__"].__get__(_type(exc))]


def main() -> int:
    # What this process's clock said before any code under test ran: the host learns from it
    # whether a shifted clock (libfaketime) took effect.
    clock = time.time()
    started = time.monotonic()
    # The verifier names a request file; authors pipe the request in (or set RA_PROBE).
    if len(sys.argv) > 1:
        with open(sys.argv[1], encoding="utf-8") as f:
            request = json.load(f)
    else:
        request = json.loads(os.environ.pop("RA_PROBE", "") or sys.stdin.read())
    # Our own copy of stdout; the standard streams themselves go nowhere, so nothing code under test
    # prints (a flood, a line without its newline, a forged result line) reaches the host.
    out_fd = os.dup(1)
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)
    os.dup2(quiet, 2)
    root = request["root"]
    for rel in reversed(request.get("paths") or ["."]):
        sys.path.insert(0, os.path.join(root, rel))
    os.chdir(request.get("cwd") or root)  # a script may be run from anywhere
    results = []
    # A case that runs too long fails alone (a generated input may make the code loop); the
    # alarm's exception is a BaseException, so `except Exception` in code under test cannot keep it.
    case_s = float(request.get("case_timeout_s") or 0)
    # All cases together stop after this long (0: no limit); the rest are reported as not run, so a
    # slow tree costs its own answers, never the ones already made.
    budget_s = float(request.get("budget_s") or 0)

    def on_alarm(signum, frame):
        raise _CaseTimedOut()

    signal.signal(signal.SIGALRM, on_alarm)
    for case in request["cases"]:
        limit = float(case.get("timeout_s") or case_s)  # a case may carry its own limit
        if budget_s and time.monotonic() - started > budget_s:
            results.append({"name": case["name"], "timed_out": True, "not_run": True})
            continue
        namespace = {"__name__": "__main__"}  # as a person's script that calls the code would be
        if limit:
            signal.setitimer(signal.ITIMER_REAL, limit)
        try:
            exec(compile(request.get("setup") or "", "<heldout setup>", "exec"), namespace)
            exec(compile(case.get("setup") or "", "<heldout case setup>", "exec"), namespace)
            value = eval(compile(case["expr"], "<heldout expr>", "eval"), namespace)
            results.append({"name": case["name"], "value": to_plain(value)})
        except _CaseTimedOut:
            results.append({"name": case["name"], "timed_out": True})
        except BaseException as exc:  # noqa: BLE001 - the exception is the observation
            if _isinstance(exc, (SystemExit, KeyboardInterrupt)) and not _isinstance(exc, Exception):
                results.append({"name": case["name"], "raised": _raised(exc), "fatal": True})
                break
            results.append({"name": case["name"], "raised": _raised(exc)})
        finally:
            if limit:
                signal.setitimer(signal.ITIMER_REAL, 0)
    # On a line of its own, whatever was written before it.
    os.write(out_fd, ("\n" + MARKER + json.dumps({"results": results, "clock": clock}, sort_keys=True) + "\n").encode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
