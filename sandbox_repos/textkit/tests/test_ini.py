import pytest

from textkit.ini import IniError, get_bool, parse_ini


def test_parse_sections_and_keys():
    text = "[server]\nHost = example.org\nport=8080\n[client]\nretries = 3"
    assert parse_ini(text) == {"server": {"host": "example.org", "port": "8080"},
                               "client": {"retries": "3"}}


def test_keys_before_any_section_go_to_default():
    assert parse_ini("name = demo\n[x]\ny = 1") == {"DEFAULT": {"name": "demo"}, "x": {"y": "1"}}


def test_blank_lines_and_comments_are_ignored():
    text = "# settings\n\n[db]\n; the primary\nhost = db1\n\n"
    assert parse_ini(text) == {"db": {"host": "db1"}}


def test_value_may_contain_colon_and_equals():
    text = "[links]\nhome = https://example.org/?a=1"
    assert parse_ini(text)["links"]["home"] == "https://example.org/?a=1"


def test_colon_separator():
    assert parse_ini("[a]\nkey: value")["a"] == {"key": "value"}


def test_malformed_line_reports_its_number():
    with pytest.raises(IniError) as info:
        parse_ini("[a]\nkey = 1\nnonsense")
    assert info.value.lineno == 3


def test_get_bool_values_and_default():
    sections = parse_ini("[f]\ndebug = Yes\nquiet = off")
    assert get_bool(sections, "f", "debug") is True
    assert get_bool(sections, "f", "quiet") is False
    assert get_bool(sections, "f", "missing", default=True) is True
