"""Reorder points and purchase suggestions."""

from dataclasses import dataclass

from .dates import add_business_days


@dataclass(frozen=True)
class Suggestion:
    sku: str
    quantity: int
    arrives: object  # datetime.date


def needs_reorder(item, level):
    """An item is reordered once its level is at or below its reorder point."""
    return level <= item.reorder_point


def suggestions(inventory, today, holidays=()):
    """A purchase suggestion for every item that needs reordering, by SKU.

    The quantity is the item's ``reorder_qty``, raised if needed so that the stock ends up
    above the reorder point; ``arrives`` counts the lead time in business days from ``today``.
    """
    out = []
    for item in sorted(inventory.items, key=lambda item: item.sku):
        level = inventory.level(item.sku)
        if not needs_reorder(item, level):
            continue
        quantity = max(item.reorder_qty, item.reorder_point - level + 1)
        out.append(Suggestion(item.sku, quantity, add_business_days(today, item.lead_time_days, holidays)))
    return out
