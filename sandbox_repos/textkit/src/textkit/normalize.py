"""Normalisation helpers shared by the other modules."""

import re
import unicodedata

_WHITESPACE_RE = re.compile(r"\s+")


def strip_accents(text):
    """Remove combining marks: ``"Crème Brûlée"`` becomes ``"Creme Brulee"``.

    Characters that have no ASCII base letter (``"ß"``, ``"ø"``) are kept as they are.
    """
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def collapse_whitespace(text):
    """Replace every run of whitespace (spaces, tabs, newlines) by one space and trim the ends."""
    return _WHITESPACE_RE.sub(" ", text).strip()


def normalize_newlines(text):
    """Turn Windows (``\\r\\n``) and old Mac (``\\r``) line endings into ``\\n``."""
    return text.replace("\r\n", "\n").replace("\r", "\n")
