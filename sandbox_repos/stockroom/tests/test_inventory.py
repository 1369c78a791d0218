from datetime import date

import pytest

from stockroom.inventory import InsufficientStock, Inventory
from stockroom.items import Item


@pytest.fixture
def inv():
    inventory = Inventory()
    inventory.add(Item("TEA-01", "Green tea", 450), quantity=10)
    inventory.add(Item("MUG-02", "Mug", 1299), quantity=3)
    return inventory


def test_add_and_level(inv):
    assert inv.level("TEA-01") == 10
    assert [item.sku for item in inv.items] == ["TEA-01", "MUG-02"]


def test_add_same_sku_twice_is_refused(inv):
    with pytest.raises(ValueError):
        inv.add(Item("TEA-01", "Green tea again", 450))


def test_receive_increases_level(inv):
    assert inv.receive("MUG-02", 12) == 15


def test_receive_refuses_nothing(inv):
    with pytest.raises(ValueError):
        inv.receive("MUG-02", 0)


def test_pick_decreases_level(inv):
    assert inv.pick("TEA-01", 4) == 6


def test_pick_the_entire_stock(inv):
    assert inv.pick("MUG-02", 3) == 0


def test_pick_more_than_available(inv):
    with pytest.raises(InsufficientStock) as info:
        inv.pick("MUG-02", 4)
    assert (info.value.wanted, info.value.available) == (4, 3)


def test_total_value_in_dollars(inv):
    assert inv.total_value() == 83.97


def test_oldest_best_before_ignores_items_out_of_stock():
    inventory = Inventory()
    inventory.add(Item("MLK-1", "Milk", 129, best_before=date(2024, 3, 5)), quantity=0)
    inventory.add(Item("YOG-1", "Yogurt", 89, best_before=date(2024, 3, 9)), quantity=4)
    assert inventory.oldest_best_before() == date(2024, 3, 9)


def test_oldest_best_before_without_perishables_is_none(inv):
    assert inv.oldest_best_before() is None
