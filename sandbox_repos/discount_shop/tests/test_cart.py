from datetime import date

import pytest

from discount_shop.cart import Cart, LineItem
from discount_shop.coupons import CouponError, make_coupon


def test_empty_cart_is_all_zero():
    cart = Cart(tax_rate=0.08)
    assert (cart.item_count, cart.subtotal, cart.tax, cart.total) == (0, 0.0, 0.0, 0.0)


def test_subtotal_multiplies_quantities():
    cart = Cart()
    cart.add("MUG-01", 12.50, quantity=2)
    cart.add("TEE-XL", 19.99)
    assert cart.subtotal == 44.99
    assert cart.item_count == 3


def test_adding_same_sku_merges_quantity():
    cart = Cart()
    cart.add("PEN", 0.10, quantity=3)
    cart.add("PEN", 0.10)
    assert [(i.sku, i.quantity) for i in cart.items] == [("PEN", 4)]
    assert cart.subtotal == 0.40


def test_set_quantity_zero_removes_item_and_remove_unknown_raises():
    cart = Cart()
    cart.add("MUG-01", 12.50)
    cart.set_quantity("MUG-01", 0)
    assert cart.items == []
    with pytest.raises(KeyError):
        cart.remove("MUG-01")


@pytest.mark.parametrize("quantity", [0, -2])
def test_line_item_needs_positive_quantity(quantity):
    with pytest.raises(ValueError, match="quantity must be at least 1"):
        LineItem("MUG-01", 12.50, quantity)


def test_tax_rounds_half_up_and_total_includes_it():
    cart = Cart(tax_rate=0.08)
    cart.add("MUG-01", 12.50, quantity=2)
    cart.add("TEE-XL", 19.99)
    assert cart.tax == 3.60
    assert cart.total == 48.59


def test_expired_coupon_is_rejected_and_not_attached():
    cart = Cart()
    cart.add("MUG-01", 12.50)
    with pytest.raises(CouponError, match="expired"):
        cart.apply_coupon(make_coupon("SAVE10", expires=date(2024, 1, 31)), today=date(2024, 2, 1))
    assert cart.coupon is None
    assert cart.total == 12.50
