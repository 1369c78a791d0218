"""A tiny INI reader: ``[section]`` headers, ``key = value`` lines, ``#`` and ``;`` comments."""


class IniError(ValueError):
    """A line that is neither a section header, a key/value pair, a comment nor blank."""

    def __init__(self, lineno, line, reason):
        super().__init__(f"line {lineno}: {reason}: {line!r}")
        self.lineno = lineno


def parse_ini(text, default_section="DEFAULT"):
    """A dict of sections, each a dict of string values.

    Keys are lower-cased and stripped; values are stripped.  Only the first ``=`` (or
    ``:``) separates key and value, so values may contain ``=``.  Keys before any header
    go to ``default_section``.  A repeated key overrides the earlier one.
    """
    sections = {}
    current = default_section
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            if not line.endswith("]") or len(line) < 3:
                raise IniError(lineno, raw, "malformed section header")
            current = line[1:-1].strip()
            sections.setdefault(current, {})
            continue
        cut = _separator_index(line)
        if cut < 0:
            raise IniError(lineno, raw, "expected 'key = value'")
        key = line[:cut].strip().lower()
        if not key:
            raise IniError(lineno, raw, "empty key")
        sections.setdefault(current, {})[key] = line[cut + 1:].strip()
    return sections


def _separator_index(line):
    """Index of the first ``=`` or ``:``, or -1."""
    positions = [i for i in (line.find("="), line.find(":")) if i >= 0]
    return min(positions) if positions else -1


def get_bool(sections, section, key, default=False):
    """Read a boolean: ``yes/true/on/1`` and ``no/false/off/0``, case-insensitive."""
    value = sections.get(section, {}).get(key)
    if value is None:
        return default
    lowered = value.lower()
    if lowered in ("yes", "true", "on", "1"):
        return True
    if lowered in ("no", "false", "off", "0"):
        return False
    raise ValueError(f"[{section}] {key}: not a boolean: {value!r}")
