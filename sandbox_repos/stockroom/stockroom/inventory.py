"""Stock levels per item."""


class InsufficientStock(Exception):
    """A pick asked for more units than are on hand."""

    def __init__(self, sku, wanted, available):
        super().__init__(f"{sku}: wanted {wanted}, only {available} on hand")
        self.sku, self.wanted, self.available = sku, wanted, available


class Inventory:
    """Items and how many units of each are on hand."""

    def __init__(self):
        self._items = {}
        self._levels = {}

    def add(self, item, quantity=0):
        """Register ``item`` with an opening stock of ``quantity`` units."""
        if item.sku in self._items:
            raise ValueError(f"{item.sku} is already registered")
        if quantity < 0:
            raise ValueError("opening quantity must not be negative")
        self._items[item.sku] = item
        self._levels[item.sku] = quantity

    def item(self, sku):
        return self._items[sku]

    @property
    def items(self):
        return list(self._items.values())

    def level(self, sku):
        """Units of ``sku`` on hand (``KeyError`` for an unknown SKU)."""
        return self._levels[sku]

    def receive(self, sku, quantity):
        """Book ``quantity`` (> 0) incoming units; returns the new level."""
        if quantity <= 0:
            raise ValueError(f"received quantity must be positive, got {quantity!r}")
        self._levels[sku] = self.level(sku) + quantity
        return self._levels[sku]

    def pick(self, sku, quantity):
        """Take ``quantity`` units out for an order; returns the new level."""
        available = self.level(sku)
        if quantity > available:
            raise InsufficientStock(sku, quantity, available)
        self._levels[sku] = available - quantity
        return self._levels[sku]

    def total_value(self):
        """Value of everything on hand at cost, in dollars (costs are kept in cents)."""
        cents = sum(item.unit_cost_cents * self._levels[item.sku] for item in self._items.values())
        return round(cents / 100, 2)

    def oldest_best_before(self):
        """The earliest best-before date among items in stock, or ``None`` if there is none."""
        dates = [item.best_before for item in self._items.values()
                 if item.best_before is not None and self._levels[item.sku] > 0]
        if not dates:
            return None
        return min(dates)
