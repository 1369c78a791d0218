"""Greedy word wrapping."""

from .normalize import collapse_whitespace


def wrap(text, width=70):
    """Split ``text`` into lines of at most ``width`` characters, breaking between words.

    Whitespace runs are collapsed first.  A single word longer than ``width`` gets a line
    of its own rather than being split.
    """
    if width < 1:
        raise ValueError(f"width must be positive, got {width!r}")
    lines = []
    current = ""
    for word in collapse_whitespace(text).split(" "):
        if not word:
            continue
        if not current:
            current = word
        elif len(current) + 1 + len(word) <= width:
            current = f"{current} {word}"
        else:
            lines.append(current)
            current = word
    if current:
        lines.append(current)
    return lines


def fill(text, width=70, indent=""):
    """Wrapped ``text`` as one string; every line starts with ``indent``, which counts toward ``width``."""
    if len(indent) >= width:
        raise ValueError("indent must be shorter than width")
    return "\n".join(indent + line for line in wrap(text, width - len(indent)))
