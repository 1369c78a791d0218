"""Price arithmetic: rounding to cents and percentage discounts."""

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def _check_number(name, value):
    # bool is a subclass of int, but True/False are never a price.
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")


def round_money(value):
    """Round ``value`` to whole cents, halves away from zero.

    Goes through ``str`` so that e.g. ``2.675`` rounds to ``2.68`` rather
    than to the ``2.67`` that binary floating point would give.
    """
    _check_number("value", value)
    return float(Decimal(str(value)).quantize(CENT, rounding=ROUND_HALF_UP))


def apply_discount(price, discount):
    """Return ``price`` reduced by ``discount`` percent, rounded to cents.

    ``discount`` is a percentage between 0 and 100 inclusive, so
    ``apply_discount(100, 10)`` is ``90``.
    """
    _check_number("price", price)
    _check_number("discount", discount)
    if price < 0:
        raise ValueError(f"price must not be negative, got {price!r}")
    if not 0 <= discount <= 100:
        raise ValueError(f"discount must be between 0 and 100 percent, got {discount!r}")

    discounted = price * (1 - discount)
    if discounted < 0:
        # Never charge less than nothing: leave the price as it was.
        return price
    return round_money(discounted)
