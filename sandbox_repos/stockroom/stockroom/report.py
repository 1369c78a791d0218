"""Plain-text report lines."""


def format_money(cents):
    """``123456`` cents as ``"$1,234.56"`` (``"-$0.05"`` when negative)."""
    sign = "-" if cents < 0 else ""
    dollars, rest = divmod(abs(cents), 100)
    return f"{sign}${dollars:,}.{rest:02d}"


def low_stock_lines(inventory):
    """One line per item at or below its reorder point, lowest level first:
    ``"SKU  name  level/reorder point"``."""
    low = [(inventory.level(item.sku), item) for item in inventory.items
           if inventory.level(item.sku) <= item.reorder_point]
    low.sort(key=lambda pair: (pair[0], pair[1].sku))
    return [f"{item.sku}  {item.name}  {level}/{item.reorder_point}" for level, item in low]
