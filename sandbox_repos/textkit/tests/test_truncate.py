import pytest

from textkit.truncate import truncate, truncate_words


def test_truncate_short_text_unchanged():
    assert truncate("short", 10) == "short"


def test_truncate_text_of_exactly_the_limit_unchanged():
    assert truncate("exactly", 7) == "exactly"


def test_truncate_cuts_and_adds_ellipsis():
    assert truncate("Hello, world", 8) == "Hello..."


def test_truncate_custom_ellipsis():
    assert truncate("abcdefghij", 5, ellipsis="~") == "abcd~"


def test_truncate_limit_shorter_than_ellipsis():
    with pytest.raises(ValueError):
        truncate("abcdef", 2)


def test_truncate_words_drops_the_rest():
    assert truncate_words("one two three four", 2) == "one two..."


def test_truncate_words_keeps_short_text():
    assert truncate_words("one   two", 5) == "one two"
