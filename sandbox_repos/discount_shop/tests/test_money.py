import pytest

from discount_shop.money import format_money, parse_money


@pytest.mark.parametrize(
    "text, expected",
    [("$1,234.50", 1234.5), ("12", 12.0), ("  $0.99 ", 0.99), ("-$5.00", -5.0)],
)
def test_parse_money(text, expected):
    assert parse_money(text) == expected


@pytest.mark.parametrize("text", ["abc", "$1.2.3", "1.999"])
def test_parse_money_rejects_garbage(text):
    with pytest.raises(ValueError, match="not a money amount"):
        parse_money(text)


@pytest.mark.parametrize(
    "value, expected",
    [(12.5, "$12.50"), (1234567.891, "$1,234,567.89"), (-3.456, "-$3.46")],
)
def test_format_money(value, expected):
    assert format_money(value) == expected


def test_format_then_parse_round_trips():
    assert parse_money(format_money(9876.54)) == 9876.54
