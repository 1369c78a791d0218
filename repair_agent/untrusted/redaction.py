"""Secrets never reach a record: the one place that takes them out of text and data.

What is removed: the values of the keys this process was given (every variable a models file or
the model options name as the key's variable, and the usual key variables), registered as they are
read; anything shaped like a bearer credential (`Authorization: Bearer ...`, `sk-...` tokens); and
URL credentials (`https://user:pass@host` keeps its scheme and host, loses user and password).

Applied where records are written (the journal writer, outputs.py's writers) and where text is
shown (visible.py), never at each caller: a new field or a new message passes through the same
choke points. Pattern matching cannot know every secret shape; a key that was never registered
and has no known shape is not recognised (see docs/threat-model.md).
"""
from __future__ import annotations

import os
import re
import threading
from typing import Any

MASK = "[REDACTED]"
# Read at every redaction, so a key set after import (a test, a resumed run) is still known.
KEY_VARIABLES = ("REPAIR_AGENT_MODEL_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AZURE_OPENAI_API_KEY")
MIN_SECRET = 6  # shorter values would redact ordinary words; no real key is this short

_registered: set[str] = set()
_lock = threading.Lock()

# userinfo of a URL: everything between "scheme://" and the "@" before the host
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@\"'<>\\]+@")
_BEARER = re.compile(r"(?i)\b(bearer)(\s+|%20)[A-Za-z0-9._~+/=-]{8,}")
# a credential header's value: a token with a digit in it (not prose, not a JSON object such as the run's
# own "authorization": {...})
_AUTH_HEADER = re.compile(r"(?i)\b((?:proxy-)?authorization|x-api-key|api[-_]key)(\"?[ \t]*[:=][ \t]*\"?)"
                          r"(?:(?:bearer|basic|token|digest)[ \t]+)?(?=[A-Za-z0-9._~+/=-]*\d)[A-Za-z0-9._~+/=-]{6,}")
_TOKEN = re.compile(r"(?<![A-Za-z0-9])(sk|rk|pk)-[A-Za-z0-9][A-Za-z0-9_-]{15,}")


def register(*values: str | None) -> None:
    """Values that must never be recorded or shown (a key, a URL's password) from now on."""
    with _lock:
        _registered.update(v for v in values if isinstance(v, str) and len(v) >= MIN_SECRET)


def register_variable(name: str | None) -> None:
    """The value of an environment variable named as holding a key."""
    if name:
        register(os.environ.get(name))


def register_url(url: str | None) -> None:
    """A URL's user and password (https://user:pass@host): both are credentials."""
    if not url:
        return
    from urllib.parse import unquote, urlsplit

    try:
        parts = urlsplit(url)
        user, password = parts.username, parts.password
    except ValueError:
        return
    register(*(x for v in (user, password) if v for x in (v, unquote(v))))


def _known() -> list[str]:
    with _lock:
        values = set(_registered)
    values.update(v for name in KEY_VARIABLES if len(v := os.environ.get(name, "")) >= MIN_SECRET)
    return sorted(values, key=len, reverse=True)  # a longer secret first: a shorter one may be part of it


def redact(text: str, known: list[str] | None = None) -> str:
    """`text` without any known secret, bearer credential, token or URL credential. `known`: the
    secrets, when a caller redacting many strings has read them once."""
    if not isinstance(text, str) or not text:
        return text
    for secret in _known() if known is None else known:
        if secret in text:
            text = text.replace(secret, MASK)
    text = _URL_USERINFO.sub(lambda m: f"{m.group(1)}{MASK}@", text)
    text = _AUTH_HEADER.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", text)
    text = _BEARER.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", text)
    return _TOKEN.sub(MASK, text)


def redact_data(data: Any) -> Any:
    """JSON-like data with every string (keys too) redacted; anything else as it is. Iterative: a
    chooser's raw proposal may nest as deep as JSON allows, deeper than Python's recursion limit."""
    known = _known()  # once, not for every string of a record
    if isinstance(data, str):
        return redact(data, known)
    if not isinstance(data, (dict, list, tuple)):
        return data
    top: dict | list = {} if isinstance(data, dict) else []
    pending: list[tuple[Any, dict | list]] = [(data, top)]
    while pending:
        source, copy = pending.pop()
        pairs = source.items() if isinstance(source, dict) else enumerate(source)
        for key, value in pairs:
            if isinstance(value, (dict, list, tuple)):
                child: Any = {} if isinstance(value, dict) else []
                pending.append((value, child))  # filled later; its place in `copy` is taken now
            else:
                child = redact(value, known) if isinstance(value, str) else value
            if isinstance(copy, dict):
                copy[redact(key, known) if isinstance(key, str) else key] = child
            else:
                copy.append(child)
    return top
