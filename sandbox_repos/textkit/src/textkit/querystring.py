"""``application/x-www-form-urlencoded`` query strings: ``a=1&b=x+y&c=%2F``."""

_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")


def unquote(text):
    """Decode ``+`` as a space and ``%XX`` escapes as UTF-8 bytes."""
    text = text.replace("+", " ")
    out = bytearray()
    i = 0
    while i < len(text):
        if text[i] == "%" and i + 2 < len(text) and _is_hex(text[i + 1: i + 3]):
            out.append(int(text[i + 1: i + 3], 16))
            i += 3
        else:
            out.extend(text[i].encode("utf-8"))
            i += 1
    return out.decode("utf-8", errors="replace")


def _is_hex(pair):
    return len(pair) == 2 and all(ch in "0123456789abcdefABCDEF" for ch in pair)


def quote(text):
    """Encode ``text`` so that :func:`unquote` gives it back; spaces become ``+``."""
    out = []
    for byte in text.encode("utf-8"):
        ch = chr(byte)
        if ch in _SAFE:
            out.append(ch)
        elif ch == " ":
            out.append("+")
        else:
            out.append(f"%{byte:02X}")
    return "".join(out)


def parse_qs(query, keep_blank=False):
    """A dict mapping each key to the list of its values, in order of appearance.

    A leading ``?`` is ignored, as are empty pairs (``a=1&&b=2``).  A key without ``=``
    has the value ``""``; pairs with an empty value are dropped unless ``keep_blank``.
    """
    if query.startswith("?"):
        query = query[1:]
    result = {}
    for pair in query.split("&"):
        if not pair:
            continue
        key, _, value = pair.partition("=")
        key, value = unquote(key), unquote(value)
        if not value and not keep_blank:
            continue
        result.setdefault(key, []).append(value)
    return result


def build_qs(params):
    """The inverse of :func:`parse_qs`; a list value gives the key once per item."""
    parts = []
    for key, value in params.items():
        values = value if isinstance(value, (list, tuple)) else [value]
        for item in values:
            parts.append(f"{quote(str(key))}={quote(str(item))}")
    return "&".join(parts)
