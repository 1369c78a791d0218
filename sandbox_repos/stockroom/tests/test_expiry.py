from datetime import date

import pytest

from stockroom.expiry import days_left, expiring_within, is_expired
from stockroom.inventory import Inventory
from stockroom.items import Item

TODAY = date(2024, 3, 1)


def perishable(sku, days, quantity=5):
    return Item(sku, sku.title(), 100, best_before=date.fromordinal(TODAY.toordinal() + days)), quantity


@pytest.fixture
def shelf():
    inventory = Inventory()
    for sku, days, quantity in [("bread", 2, 5), ("milk", 3, 5), ("cheese", 6, 5), ("ham", 9, 5),
                                ("old-eggs", -1, 5), ("empty-jam", 1, 0)]:
        inventory.add(*perishable(sku, days, quantity))
    inventory.add(Item("salt", "Salt", 50), quantity=8)
    return inventory


def test_days_left():
    item, _ = perishable("milk", 3)
    assert days_left(item, TODAY) == 3
    assert days_left(Item("salt", "Salt", 50), TODAY) is None


def test_not_expired_on_the_best_before_date():
    item, _ = perishable("milk", 0)
    assert not is_expired(item, TODAY)


def test_expired_after_the_best_before_date():
    item, _ = perishable("milk", -1)
    assert is_expired(item, TODAY)


def test_non_perishable_never_expires():
    assert not is_expired(Item("salt", "Salt", 50), TODAY)


def test_expiring_within_includes_the_last_day_of_the_window(shelf):
    assert [item.sku for item in expiring_within(shelf, TODAY, window=3)] == ["bread", "milk"]


def test_expiring_within_defaults_to_a_week(shelf):
    assert [item.sku for item in expiring_within(shelf, TODAY)] == ["bread", "milk", "cheese"]
