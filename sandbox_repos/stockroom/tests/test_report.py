from stockroom.inventory import Inventory
from stockroom.items import Item
from stockroom.report import format_money, low_stock_lines


def test_format_money():
    assert format_money(123456) == "$1,234.56"
    assert format_money(7) == "$0.07"


def test_format_negative_money():
    assert format_money(-5) == "-$0.05"


def test_low_stock_lines_include_an_item_at_its_reorder_point():
    inventory = Inventory()
    inventory.add(Item("TEA-01", "Green tea", 450, reorder_point=5), quantity=5)
    inventory.add(Item("MUG-02", "Mug", 1299, reorder_point=2), quantity=9)
    assert low_stock_lines(inventory) == ["TEA-01  Green tea  5/5"]


def test_low_stock_lines_lowest_level_first():
    inventory = Inventory()
    inventory.add(Item("B", "Bravo", 10, reorder_point=10), quantity=4)
    inventory.add(Item("A", "Alpha", 10, reorder_point=10), quantity=7)
    inventory.add(Item("C", "Charlie", 10, reorder_point=10), quantity=1)
    assert low_stock_lines(inventory) == ["C  Charlie  1/10", "B  Bravo  4/10", "A  Alpha  7/10"]
