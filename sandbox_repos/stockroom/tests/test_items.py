from datetime import date

import pytest

from stockroom.items import Item


def test_item_defaults():
    item = Item("TEA-01", "Green tea", 450)
    assert (item.reorder_point, item.reorder_qty, item.lead_time_days, item.best_before) == (0, 0, 5, None)


def test_item_rejects_negative_cost():
    with pytest.raises(ValueError):
        Item("TEA-01", "Green tea", -1)


def test_item_rejects_blank_sku():
    with pytest.raises(ValueError):
        Item("  ", "Nameless", 100)


def test_item_keeps_best_before():
    assert Item("MLK-1", "Milk", 129, best_before=date(2024, 3, 5)).best_before == date(2024, 3, 5)
