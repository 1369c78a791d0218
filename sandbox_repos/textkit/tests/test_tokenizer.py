import pytest

from textkit.tokenizer import Token, TokenizeError, names, tokenize


def kinds_and_texts(source):
    return [(t.kind, t.text) for t in tokenize(source)]


def test_tokenize_simple_expression():
    assert kinds_and_texts("rate * (price + 2)") == [
        ("name", "rate"), ("op", "*"), ("op", "("), ("name", "price"), ("op", "+"),
        ("number", "2"), ("op", ")")]


def test_tokenize_decimal_number():
    assert kinds_and_texts("2.5+.75") == [("number", "2.5"), ("op", "+"), ("number", ".75")]


def test_tokenize_two_character_operators():
    assert [t.text for t in tokenize("a**2 // b <= c")] == ["a", "**", "2", "//", "b", "<=", "c"]


def test_tokenize_positions():
    assert tokenize("  x1 ,y") == [Token("name", "x1", 2), Token("op", ",", 5), Token("name", "y", 6)]


def test_tokenize_rejects_unknown_character():
    with pytest.raises(TokenizeError) as info:
        tokenize("a $ b")
    assert info.value.pos == 2


def test_names_in_order_of_first_use():
    assert names("total + a * b - a") == ["total", "a", "b"]
