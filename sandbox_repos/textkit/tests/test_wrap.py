import pytest

from textkit.wrap import fill, wrap

LOREM = ("Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor "
         "incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud")


def test_wrap_breaks_between_words():
    assert wrap("the quick brown fox jumps", width=10) == ["the quick", "brown fox", "jumps"]


def test_wrap_word_that_fits_exactly_stays_on_the_line():
    assert wrap("abcd efgh ijkl", width=9) == ["abcd efgh", "ijkl"]


def test_wrap_long_word_gets_its_own_line():
    assert wrap("a extraordinarily b", width=6) == ["a", "extraordinarily", "b"]


def test_wrap_default_width_is_seventy():
    lines = wrap(LOREM)
    assert lines[0] == "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do"
    assert all(len(line) <= 70 for line in lines)


def test_wrap_empty_text():
    assert wrap("   ") == []


def test_wrap_rejects_zero_width():
    with pytest.raises(ValueError):
        wrap("text", width=0)


def test_fill_indent_counts_toward_width():
    assert fill("one two three four", width=11, indent="> ") == "> one two\n> three\n> four"
