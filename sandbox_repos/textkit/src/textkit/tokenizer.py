"""Tokens of arithmetic expressions such as ``rate * (price + 2.5)``."""

from dataclasses import dataclass

OPERATORS = ("**", "//", "<=", ">=", "==", "!=", "+", "-", "*", "/", "%", "<", ">", "(", ")", ",")


@dataclass(frozen=True)
class Token:
    kind: str    # "number", "name" or "op"
    text: str
    pos: int     # index of the token's first character in the source


class TokenizeError(ValueError):
    def __init__(self, source, pos):
        super().__init__(f"unexpected character {source[pos]!r} at position {pos}")
        self.pos = pos


def tokenize(source):
    """The tokens of ``source``, skipping whitespace; two-character operators win over one."""
    tokens = []
    i = 0
    while i < len(source):
        ch = source[i]
        if ch.isspace():
            i += 1
        elif ch.isdigit() or (ch == "." and i + 1 < len(source) and source[i + 1].isdigit()):
            end = _scan_number(source, i)
            tokens.append(Token("number", source[i:end], i))
            i = end
        elif ch.isalpha() or ch == "_":
            end = i + 1
            while end < len(source) and (source[end].isalnum() or source[end] == "_"):
                end += 1
            tokens.append(Token("name", source[i:end], i))
            i = end
        else:
            op = next((op for op in OPERATORS if source.startswith(op, i)), None)
            if op is None:
                raise TokenizeError(source, i)
            tokens.append(Token("op", op, i))
            i += len(op)
    return tokens


def _scan_number(source, start):
    """End index of the number starting at ``start``: digits with at most one decimal point."""
    end = start
    seen_dot = False
    while end < len(source):
        ch = source[end]
        if ch == "." and not seen_dot:
            seen_dot = True
        elif not ch.isdigit():
            break
        end += 1
    return end


def names(source):
    """The distinct variable names used in ``source``, in order of first use."""
    seen = []
    for token in tokenize(source):
        if token.kind == "name" and token.text not in seen:
            seen.append(token.text)
    return seen
