from textkit.normalize import collapse_whitespace, normalize_newlines, strip_accents


def test_strip_accents_removes_combining_marks():
    assert strip_accents("Crème Brûlée") == "Creme Brulee"


def test_strip_accents_keeps_letters_without_base():
    assert strip_accents("Straße Ørsted") == "Straße Ørsted"


def test_collapse_whitespace_spaces():
    assert collapse_whitespace("  a   b  c ") == "a b c"


def test_collapse_whitespace_tabs_and_newlines():
    assert collapse_whitespace("first\tsecond\n\nthird") == "first second third"


def test_normalize_newlines():
    assert normalize_newlines("a\r\nb\rc\n") == "a\nb\nc\n"
