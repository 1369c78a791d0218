from datetime import date

import pytest

from discount_shop.coupons import CouponError, make_coupon, parse_coupon_code


@pytest.mark.parametrize(
    "code, percent",
    [("SAVE10", 10), ("  Welcome5 ", 5), ("FREE100", 100)],
)
def test_parse_coupon_code(code, percent):
    assert parse_coupon_code(code) == percent


@pytest.mark.parametrize("code", ["", "SAVE", "10OFF", "SAVE0", "SAVE101"])
def test_malformed_coupon_codes_are_rejected(code):
    with pytest.raises(CouponError):
        parse_coupon_code(code)


def test_make_coupon_normalizes_code():
    coupon = make_coupon(" spring15 ", expires=date(2024, 4, 30))
    assert (coupon.code, coupon.percent, coupon.expires) == ("SPRING15", 15, date(2024, 4, 30))


def test_coupon_is_active_through_its_expiry_day():
    coupon = make_coupon("SAVE10", expires=date(2024, 1, 31))
    assert coupon.is_active(date(2024, 1, 31))
    assert not coupon.is_active(date(2024, 2, 1))


def test_coupon_without_expiry_never_expires():
    assert make_coupon("SAVE10").is_active(date(2999, 12, 31))


def test_coupon_minimum_subtotal_is_enforced():
    coupon = make_coupon("BIG20", min_subtotal=50)
    coupon.check(50.0, date(2024, 1, 1))
    with pytest.raises(CouponError, match="at least 50.00"):
        coupon.check(49.99, date(2024, 1, 1))
