"""Best-before dates."""


def days_left(item, today):
    """Whole days from ``today`` to the item's best-before date: 0 on the date itself,
    negative once it has passed, ``None`` for goods that do not perish."""
    if item.best_before is None:
        return None
    return (item.best_before - today).days


def is_expired(item, today):
    """True once the best-before date has passed; the item may still be sold on the date itself."""
    if item.best_before is None:
        return False
    return days_left(item, today) < 0


def expiring_within(inventory, today, window=7):
    """Items in stock, not yet expired, whose best-before date is at most ``window`` days away,
    soonest first."""
    soon = []
    for item in inventory.items:
        left = days_left(item, today)
        if left is not None and inventory.level(item.sku) > 0 and 0 <= left <= window:
            soon.append(item)
    return sorted(soon, key=lambda item: item.best_before)
