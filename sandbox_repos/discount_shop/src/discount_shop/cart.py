"""Shopping cart with quantities, an optional coupon and sales tax."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from .pricing import apply_discount, round_money


@dataclass
class LineItem:
    sku: str
    unit_price: float
    quantity: int = 1

    def __post_init__(self):
        if not isinstance(self.sku, str) or not self.sku.strip():
            raise ValueError("sku must be a non-empty string")
        if self.unit_price < 0:
            raise ValueError(f"unit_price must not be negative, got {self.unit_price!r}")
        if isinstance(self.quantity, bool) or not isinstance(self.quantity, int):
            raise TypeError("quantity must be an int")
        if self.quantity < 1:
            raise ValueError(f"quantity must be at least 1, got {self.quantity!r}")

    @property
    def line_total(self):
        return round_money(self.unit_price * self.quantity)


class Cart:
    def __init__(self, tax_rate=0.0):
        if not 0 <= tax_rate < 1:
            raise ValueError(f"tax_rate must be in [0, 1), got {tax_rate!r}")
        self.tax_rate = tax_rate
        self._items = {}
        self.coupon = None

    # -- items -----------------------------------------------------------
    def add(self, sku, unit_price, quantity=1):
        """Add ``quantity`` units of ``sku``; repeated adds merge quantities."""
        existing = self._items.get(sku)
        if existing is None:
            self._items[sku] = LineItem(sku, unit_price, quantity)
            return self._items[sku]
        if existing.unit_price != unit_price:
            raise ValueError(f"{sku} is already in the cart at {existing.unit_price}")
        merged = LineItem(sku, unit_price, existing.quantity + quantity)
        self._items[sku] = merged
        return merged

    def remove(self, sku):
        if sku not in self._items:
            raise KeyError(sku)
        del self._items[sku]

    def set_quantity(self, sku, quantity):
        """Change the quantity of ``sku``; a quantity of 0 removes it."""
        if sku not in self._items:
            raise KeyError(sku)
        if quantity == 0:
            self.remove(sku)
            return
        self._items[sku] = LineItem(sku, self._items[sku].unit_price, quantity)

    @property
    def items(self):
        return list(self._items.values())

    @property
    def item_count(self):
        return sum(item.quantity for item in self._items.values())

    # -- coupon ----------------------------------------------------------
    def apply_coupon(self, coupon, today=None):
        coupon.check(self.subtotal, today or date.today())
        self.coupon = coupon

    def remove_coupon(self):
        self.coupon = None

    # -- money -----------------------------------------------------------
    @property
    def subtotal(self):
        return round_money(sum(item.line_total for item in self._items.values()))

    @property
    def discounted_subtotal(self):
        if self.coupon is None:
            return self.subtotal
        return apply_discount(self.subtotal, self.coupon.percent)

    @property
    def discount(self):
        return round_money(self.subtotal - self.discounted_subtotal)

    @property
    def tax(self):
        return round_money(self.discounted_subtotal * self.tax_rate)

    @property
    def total(self):
        return round_money(self.discounted_subtotal + self.tax)
