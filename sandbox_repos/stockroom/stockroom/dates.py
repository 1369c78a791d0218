"""Calendar helpers: parsing dates and counting business days (Monday to Friday)."""

import re
from datetime import date, timedelta

ONE_DAY = timedelta(days=1)
_ISO_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_DAY_FIRST_RE = re.compile(r"^(\d{1,2})/(\d{1,2})/(\d{4})$")


def parse_date(text):
    """A :class:`date` from ``"2024-03-01"`` or the day-first ``"01/03/2024"`` (1 March)."""
    text = text.strip()
    match = _ISO_RE.match(text)
    if match:
        year, month, day = match.groups()
        return date(int(year), int(month), int(day))
    match = _DAY_FIRST_RE.match(text)
    if match:
        day, month, year = match.groups()
        return date(int(year), int(month), int(day))
    raise ValueError(f"not a date: {text!r} (expected YYYY-MM-DD or DD/MM/YYYY)")


def is_business_day(day, holidays=()):
    """Monday to Friday, and not one of ``holidays``."""
    return day.weekday() < 5 and day not in holidays


def add_business_days(start, days, holidays=()):
    """The date ``days`` business days after ``start`` (``start`` itself never counts)."""
    if days < 0:
        raise ValueError(f"days must not be negative, got {days!r}")
    current = start
    added = 0
    while added < days:
        current += ONE_DAY
        if is_business_day(current, holidays):
            added += 1
    return current


def business_days_between(start, end, holidays=()):
    """How many business days lie after ``start`` up to and including ``end``.

    Friday to the following Monday is one business day; ``start == end`` is zero.
    """
    if end < start:
        raise ValueError("end must not be before start")
    count = 0
    day = start
    while day < end:
        day += ONE_DAY
        if is_business_day(day, holidays):
            count += 1
    return count
