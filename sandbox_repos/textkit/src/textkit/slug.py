"""URL slugs."""

import re

from .normalize import strip_accents

_WORD_RE = re.compile(r"[a-z0-9]+")
_REPLACEMENTS = (("&", " and "), ("@", " at "))


def slugify(text, separator="-", max_length=None):
    """Lower-case ASCII words of ``text`` joined by ``separator``.

    Accents are stripped, ``&`` and ``@`` are spelled out, everything else that is not a
    letter or digit separates words.  With ``max_length`` the slug is cut to at most that
    many characters, never leaving a separator at the end.

    >>> slugify("Crème Brûlée & Co")
    'creme-brulee-and-co'
    """
    if max_length is not None and max_length < 1:
        raise ValueError(f"max_length must be positive, got {max_length!r}")
    for symbol, spelled in _REPLACEMENTS:
        text = text.replace(symbol, spelled)
    words = _WORD_RE.findall(strip_accents(text).lower())
    slug = separator.join(words)
    if max_length is not None and len(slug) > max_length:
        slug = slug[:max_length].rstrip(separator)
    return slug


def unique_slug(text, taken, separator="-"):
    """A slug of ``text`` not in ``taken``, adding ``-2``, ``-3`` … as needed."""
    base = slugify(text, separator=separator)
    if base not in taken:
        return base
    counter = 2
    while f"{base}{separator}{counter}" in taken:
        counter += 1
    return f"{base}{separator}{counter}"
