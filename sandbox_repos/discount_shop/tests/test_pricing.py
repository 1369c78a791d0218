import pytest

from discount_shop.pricing import apply_discount, round_money


def test_ten_percent_discount():
    assert apply_discount(100, 10) == 90


@pytest.mark.parametrize(
    "price, expected",
    [(100, 100), (59.99, 59.99), (0, 0), (12.345, 12.35)],
)
def test_zero_discount_keeps_price(price, expected):
    assert apply_discount(price, 0) == expected


def test_negative_price_is_rejected():
    with pytest.raises(ValueError, match="price must not be negative"):
        apply_discount(-5, 0)


@pytest.mark.parametrize("discount", [-1, 100.5, 250])
def test_discount_outside_percentage_range_is_rejected(discount):
    with pytest.raises(ValueError, match="between 0 and 100"):
        apply_discount(50, discount)


@pytest.mark.parametrize("bad", ["100", True])
def test_apply_discount_rejects_non_numbers(bad):
    with pytest.raises(TypeError):
        apply_discount(bad, 0)


@pytest.mark.parametrize(
    "value, expected",
    [(2.675, 2.68), (1.005, 1.01), (0.125, 0.13), (-1.005, -1.01), (10, 10.0)],
)
def test_round_money_rounds_half_up_to_cents(value, expected):
    assert round_money(value) == expected


def test_round_money_returns_float():
    assert isinstance(round_money(3), float)
