from datetime import date

import pytest

from stockroom.dates import add_business_days, business_days_between, is_business_day, parse_date

FRIDAY = date(2024, 3, 1)
SATURDAY = date(2024, 3, 2)
MONDAY = date(2024, 3, 4)


def test_parse_iso_date():
    assert parse_date(" 2024-03-01 ") == FRIDAY


def test_parse_day_first_date():
    assert parse_date("04/03/2024") == MONDAY


def test_parse_date_rejects_other_formats():
    with pytest.raises(ValueError):
        parse_date("March 1st")


def test_is_business_day_weekdays_and_weekend():
    assert is_business_day(FRIDAY)
    assert not is_business_day(SATURDAY)
    assert not is_business_day(date(2024, 3, 3))


def test_is_business_day_holiday():
    assert not is_business_day(MONDAY, holidays={MONDAY})


def test_add_business_days_over_the_weekend():
    assert add_business_days(FRIDAY, 1) == MONDAY
    assert add_business_days(FRIDAY, 5) == date(2024, 3, 8)


def test_add_zero_business_days():
    assert add_business_days(SATURDAY, 0) == SATURDAY


def test_add_business_days_skips_holidays():
    assert add_business_days(FRIDAY, 2, holidays={MONDAY}) == date(2024, 3, 6)


def test_business_days_between_friday_and_monday():
    assert business_days_between(FRIDAY, MONDAY) == 1


def test_business_days_between_from_a_saturday():
    assert business_days_between(SATURDAY, MONDAY) == 1


def test_business_days_between_a_full_week():
    assert business_days_between(MONDAY, date(2024, 3, 11)) == 5


def test_business_days_between_same_day():
    assert business_days_between(FRIDAY, FRIDAY) == 0
