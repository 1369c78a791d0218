"""stockroom: inventory bookkeeping for a small shop.

Import the module you need (``from stockroom.inventory import Inventory``); the package
root imports nothing.
"""

__version__ = "0.9.2"
