"""discount_shop: money helpers, percentage discounts, coupons and carts."""

from .cart import Cart, LineItem
from .coupons import Coupon, CouponError, make_coupon, normalize_code, parse_coupon_code
from .money import format_money, parse_money
from .pricing import apply_discount, round_money

__all__ = [
    "Cart",
    "Coupon",
    "CouponError",
    "LineItem",
    "apply_discount",
    "format_money",
    "make_coupon",
    "normalize_code",
    "parse_coupon_code",
    "parse_money",
    "round_money",
]

__version__ = "0.3.1"
