from textkit.querystring import build_qs, parse_qs, quote, unquote


def test_unquote_plus_and_escapes():
    assert unquote("caf%C3%A9+au+lait") == "café au lait"


def test_unquote_escape_at_the_very_end():
    assert unquote("path%2F") == "path/"


def test_unquote_encoded_plus_stays_plus():
    assert unquote("1%2B1+is+2") == "1+1 is 2"


def test_unquote_leaves_bad_escapes_alone():
    assert unquote("100%+sure") == "100% sure"


def test_quote_round_trip():
    text = "é a/b c&d=x"
    assert unquote(quote(text)) == text


def test_parse_qs_repeated_keys_and_leading_question_mark():
    assert parse_qs("?tag=a&tag=b&page=2") == {"tag": ["a", "b"], "page": ["2"]}


def test_parse_qs_skips_empty_pairs():
    assert parse_qs("a=1&&b=2&") == {"a": ["1"], "b": ["2"]}


def test_parse_qs_drops_blank_values_by_default():
    assert parse_qs("q=&lang=en&debug") == {"lang": ["en"]}


def test_parse_qs_keeps_blank_values_on_request():
    assert parse_qs("q=&lang=en", keep_blank=True) == {"q": [""], "lang": ["en"]}


def test_build_qs_lists_and_quoting():
    assert build_qs({"tag": ["x y", "z"], "n": 3}) == "tag=x+y&tag=z&n=3"
