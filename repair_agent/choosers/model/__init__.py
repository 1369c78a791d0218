"""The model chooser: a View rendered as a prompt (prompt.py), sent with retries (transport.py), the
reply read as one tool call (replies.py), every request kept in typed records (records.py); the
chooser itself (chooser.py) ties one step together.

Its names are imported when asked for: reading a journal's call records (records.py) does not load
the HTTP client."""
from __future__ import annotations

import importlib
from typing import Any

_HOMES = {"CHECK_CALL": "chooser", "ModelCheck": "chooser", "ModelChooser": "chooser", "SYSTEM_PROMPT": "prompt",
          "USER_PROMPT_CAP": "prompt", "render_view": "prompt", "ModelCall": "records", "Reask": "records",
          "RequestError": "records", "RequestRecord": "records"}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = sorted(_HOMES)
