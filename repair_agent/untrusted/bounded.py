"""Bounded records of values that cannot be trusted to read back: a hostile object's repr, a value
nested past what JSON or the recursion limit holds, an exception whose text raises. One place for
what the journal, the plug-in reader and the report keep of them."""
from __future__ import annotations

import hashlib
import json
import reprlib
from typing import Any

MAX_RECORD_CHARS = 20_000        # what the journal keeps of an object that could not be read


def bounded_record(value: Any, max_chars: int = MAX_RECORD_CHARS) -> Any:
    """What the journal keeps of a value that could not be read as plain data: its JSON with anything
    else as text (as the journal writes any value), or a bounded repr that says why not."""
    try:
        text = json.dumps(value, default=str)
    except BaseException as exc:
        return {"unjournalable": type_name(value), "why": describe(exc)[:300], "repr": bounded_repr(value)}
    if len(text) > max_chars:
        return capped(text)
    return json.loads(text)


def capped(text: str) -> dict[str, Any]:
    return {"capped": True, "chars": len(text), "head": text[:2000],
            "sha256": hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()}


def bounded_repr(value: Any) -> str:
    short = reprlib.Repr()
    short.maxlevel, short.maxstring, short.maxother, short.maxdict, short.maxlist = 6, 2000, 2000, 50, 50
    try:
        text = short.repr(value)
        if type(text) is not str:
            raise TypeError("repr did not return text")
        return text[:MAX_RECORD_CHARS]
    except BaseException as exc:  # a hostile __repr__
        return f"<{type_name(value)}: repr failed with {type_name(exc)}>"


def describe(exc: BaseException) -> str:
    return f"{type_name(exc)}: {exception_text(exc)}"


def exception_text(exc: BaseException) -> str:
    try:
        text = str(exc)
        return text[:500] if type(text) is str else "<message unreadable>"
    except BaseException:
        return "<message unreadable>"


def type_name(value: Any) -> str:
    try:
        name = type(value).__name__
        return name[:100] if type(name) is str else "object"
    except BaseException:
        return "object"
