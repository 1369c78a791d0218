import pytest

from textkit.slug import slugify, unique_slug


def test_slugify_lowercases_and_joins_words():
    assert slugify("Hello, World!") == "hello-world"


def test_slugify_strips_accents_and_spells_symbols():
    assert slugify("Crème Brûlée & Co") == "creme-brulee-and-co"


def test_slugify_custom_separator():
    assert slugify("Mail me @ home", separator="_") == "mail_me_at_home"


def test_slugify_max_length_never_ends_with_separator():
    assert slugify("the quick brown fox", max_length=10) == "the-quick"


def test_slugify_rejects_non_positive_max_length():
    with pytest.raises(ValueError):
        slugify("anything", max_length=0)


def test_unique_slug_free_name_is_kept():
    assert unique_slug("Annual Report", taken={"budget"}) == "annual-report"


def test_unique_slug_adds_first_free_counter():
    taken = {"annual-report", "annual-report-2"}
    assert unique_slug("Annual Report", taken) == "annual-report-3"
