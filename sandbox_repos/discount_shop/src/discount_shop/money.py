"""Parsing and formatting of dollar amounts."""

import re
from decimal import ROUND_HALF_UP, Decimal

from .pricing import CENT, round_money

_MONEY_RE = re.compile(r"^(-)?\$?(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d{1,2}))?$")


def parse_money(text):
    """Parse ``"$1,234.50"``-style text into a float number of dollars."""
    if not isinstance(text, str):
        raise TypeError(f"expected str, got {type(text).__name__}")
    match = _MONEY_RE.match(text.strip())
    if match is None:
        raise ValueError(f"not a money amount: {text!r}")
    sign, whole, cents = match.groups()
    amount = float(whole.replace(",", "") + "." + (cents or "0"))
    return round_money(-amount if sign else amount)


def format_money(value):
    """Format a number of dollars as ``"$1,234.50"`` (``"-$3.46"`` if negative)."""
    amount = Decimal(str(round_money(value))).quantize(CENT, rounding=ROUND_HALF_UP)
    sign = "-" if amount < 0 else ""
    return f"{sign}${abs(amount):,.2f}"
