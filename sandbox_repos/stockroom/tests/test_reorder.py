from datetime import date

from stockroom.inventory import Inventory
from stockroom.items import Item
from stockroom.reorder import Suggestion, needs_reorder, suggestions

FRIDAY = date(2024, 3, 1)


def test_needs_reorder_at_the_reorder_point():
    assert needs_reorder(Item("TEA-01", "Green tea", 450, reorder_point=5), 5)


def test_no_reorder_above_the_point():
    assert not needs_reorder(Item("TEA-01", "Green tea", 450, reorder_point=5), 6)


def test_suggestions_quantity_and_arrival():
    inventory = Inventory()
    inventory.add(Item("TEA-01", "Green tea", 450, reorder_point=5, reorder_qty=20, lead_time_days=3), quantity=2)
    inventory.add(Item("MUG-02", "Mug", 1299, reorder_point=2, reorder_qty=6), quantity=10)
    assert suggestions(inventory, FRIDAY) == [Suggestion("TEA-01", 20, date(2024, 3, 6))]


def test_suggested_quantity_lifts_stock_above_the_point():
    inventory = Inventory()
    inventory.add(Item("BOX-9", "Boxes", 30, reorder_point=50, reorder_qty=10, lead_time_days=1), quantity=5)
    [suggestion] = suggestions(inventory, FRIDAY)
    assert suggestion.quantity == 46 and suggestion.arrives == date(2024, 3, 4)


def test_no_suggestions_when_everything_is_stocked():
    inventory = Inventory()
    inventory.add(Item("TEA-01", "Green tea", 450, reorder_point=5, reorder_qty=20), quantity=30)
    assert suggestions(inventory, FRIDAY) == []
