"""The item record."""

from dataclasses import dataclass
from datetime import date
from typing import Optional


@dataclass(frozen=True)
class Item:
    """One stock-keeping unit.

    ``unit_cost_cents`` is an integer number of cents.  At or below ``reorder_point`` units
    the item should be reordered, ``reorder_qty`` at a time; an order arrives
    ``lead_time_days`` business days after it is placed.  ``best_before`` is ``None`` for
    goods that do not perish.
    """

    sku: str
    name: str
    unit_cost_cents: int
    reorder_point: int = 0
    reorder_qty: int = 0
    lead_time_days: int = 5
    best_before: Optional[date] = None

    def __post_init__(self):
        if not self.sku or not self.sku.strip():
            raise ValueError("sku must not be empty")
        if self.unit_cost_cents < 0:
            raise ValueError(f"{self.sku}: unit cost must not be negative")
        if self.reorder_point < 0 or self.reorder_qty < 0 or self.lead_time_days < 0:
            raise ValueError(f"{self.sku}: reorder point, quantity and lead time must not be negative")
