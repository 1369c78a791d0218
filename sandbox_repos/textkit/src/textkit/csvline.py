"""Splitting a single CSV line (RFC 4180 quoting, without embedded newlines)."""


class CsvError(ValueError):
    """An unterminated quoted field or a quote in the middle of an unquoted field."""


def split_csv_line(line, delimiter=",", quote='"'):
    """The fields of ``line``.

    A field may be wrapped in ``quote``; inside it the delimiter is literal and a doubled
    quote stands for one quote character.  An empty line has no fields at all.

    >>> split_csv_line('a,"b,c",d')
    ['a', 'b,c', 'd']
    """
    if len(delimiter) != 1 or len(quote) != 1:
        raise ValueError("delimiter and quote must be single characters")
    if not line:
        return []
    fields = []
    field = []
    in_quotes = False
    i = 0
    while i < len(line):
        ch = line[i]
        if in_quotes:
            if ch == quote:
                if i + 1 < len(line) and line[i + 1] == quote:
                    field.append(quote)
                    i += 1
                else:
                    in_quotes = False
            else:
                field.append(ch)
        elif ch == delimiter:
            fields.append("".join(field))
            field = []
        elif ch == quote:
            if field:
                raise CsvError(f"quote inside an unquoted field at column {i + 1}")
            in_quotes = True
        else:
            field.append(ch)
        i += 1
    if in_quotes:
        raise CsvError("unterminated quoted field")
    fields.append("".join(field))
    return fields


def join_csv_line(fields, delimiter=",", quote='"'):
    """The inverse of :func:`split_csv_line`: quote fields that need it."""
    out = []
    for field in fields:
        text = str(field)
        if delimiter in text or quote in text or text != text.strip():
            text = quote + text.replace(quote, quote * 2) + quote
        out.append(text)
    return delimiter.join(out)
