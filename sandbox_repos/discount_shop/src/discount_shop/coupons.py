"""Coupon codes.

A coupon code is a run of letters followed by the discount percentage,
e.g. ``SAVE10`` (10 % off) or ``WELCOME5`` (5 % off).  Codes are
case-insensitive and surrounding whitespace is ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from typing import Optional

_CODE_RE = re.compile(r"^([A-Z]+)(\d{1,3})$")


class CouponError(ValueError):
    """Raised for malformed codes and for coupons that cannot be used."""


def normalize_code(code):
    if not isinstance(code, str):
        raise TypeError(f"coupon code must be a str, got {type(code).__name__}")
    return code.strip().upper()


def parse_coupon_code(code):
    """Return the discount percentage (1..100) encoded in ``code``."""
    normalized = normalize_code(code)
    match = _CODE_RE.match(normalized)
    if match is None:
        raise CouponError(f"malformed coupon code: {code!r}")
    percent = int(match.group(2))
    if not 1 <= percent <= 100:
        raise CouponError(f"coupon percentage out of range in {code!r}")
    return percent


@dataclass(frozen=True)
class Coupon:
    code: str
    percent: int
    expires: Optional[date] = None
    min_subtotal: float = 0.0

    def is_active(self, today):
        """A coupon is usable up to and including its expiry date."""
        return self.expires is None or today <= self.expires

    def check(self, subtotal, today):
        """Raise :class:`CouponError` unless the coupon may be used."""
        if not self.is_active(today):
            raise CouponError(f"coupon {self.code} expired on {self.expires.isoformat()}")
        if subtotal < self.min_subtotal:
            raise CouponError(
                f"coupon {self.code} needs a subtotal of at least {self.min_subtotal:.2f}"
            )


def make_coupon(code, expires=None, min_subtotal=0.0):
    """Build a :class:`Coupon` from its code, validating the code."""
    if min_subtotal < 0:
        raise CouponError("min_subtotal must not be negative")
    percent = parse_coupon_code(code)
    return Coupon(normalize_code(code), percent, expires, float(min_subtotal))
