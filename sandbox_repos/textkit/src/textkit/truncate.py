"""Shortening text for display."""


def truncate(text, limit, ellipsis="..."):
    """``text`` cut to at most ``limit`` characters, ending in ``ellipsis`` when it was cut.

    >>> truncate("Hello, world", 8)
    'Hello...'
    """
    if limit < len(ellipsis):
        raise ValueError(f"limit {limit} is shorter than the ellipsis {ellipsis!r}")
    if len(text) <= limit:
        return text
    return text[: limit - len(ellipsis)] + ellipsis


def truncate_words(text, count, ellipsis="..."):
    """The first ``count`` words of ``text``; ``ellipsis`` is appended when words were dropped."""
    if count < 0:
        raise ValueError(f"count must not be negative, got {count!r}")
    words = text.split()
    if len(words) <= count:
        return " ".join(words)
    return " ".join(words[:count]) + ellipsis
