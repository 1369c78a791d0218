import pytest

from textkit.csvline import CsvError, join_csv_line, split_csv_line


def test_split_plain_fields():
    assert split_csv_line("a,b,,d") == ["a", "b", "", "d"]


def test_split_quoted_fields_and_doubled_quotes():
    assert split_csv_line('a,"b,c","say ""hi"""') == ["a", "b,c", 'say "hi"']


def test_split_empty_line_has_no_fields():
    assert split_csv_line("") == []


def test_split_other_delimiter():
    assert split_csv_line("x;y;z", delimiter=";") == ["x", "y", "z"]


def test_split_unterminated_quote():
    with pytest.raises(CsvError):
        split_csv_line('a,"b')


def test_join_round_trip():
    fields = ["plain", "with,comma", 'with "quote"', " padded "]
    assert split_csv_line(join_csv_line(fields)) == fields
