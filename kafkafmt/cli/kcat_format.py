"""kcat's print format (``kcat -f``), as ``kafkafmt dump --format`` / ``-f`` takes it: one line per record
made of text and kcat's tokens.

The tokens are kcat's (its ``Format string tokens``): ``%t`` topic, ``%p`` partition, ``%o`` offset, ``%k``
key, ``%s`` value (kcat's payload), ``%T`` timestamp (milliseconds since the epoch), ``%h`` headers
(``name=value`` pairs, comma-separated), ``%K`` / ``%S`` key / value length in bytes (-1 for null), ``%%`` a
percent sign; in the text, ``\\n`` ``\\r`` ``\\t``, ``\\xHH`` (a character by its hex code) and ``\\NNN`` (by
its decimal code, octal with a leading 0), as kcat reads them. As with kcat, nothing ends a line but the
format's own ``\\n``; a null key or value prints nothing. Unlike kcat, keys, values and header values are
printed as ``dump --print-data`` prints them (UTF-8, invalid bytes and control characters escaped), so that
a record cannot break its line; ``%R`` (a binary length) is not taken.
"""
from __future__ import annotations

import re

from kafkafmt.cli.usage import UsageError

__all__ = ["TOKENS", "TOKENS_HELP", "KcatFormat", "parse"]

#: kcat's tokens: letter -> what it prints
TOKENS = {"t": "topic", "p": "partition", "o": "offset", "k": "key", "s": "value", "T": "timestamp (ms)",
          "h": "headers (name=value,...)", "K": "key length (-1: null)", "S": "value length (-1: null)"}
#: the tokens as --help lists them
TOKENS_HELP = ", ".join(f"%{t} {what}" for t, what in TOKENS.items()) + r"; \n \r \t \xHH in the text"

_ESCAPE = re.compile(r"\\(x[0-9A-Fa-f]{1,2}|0[0-7]{0,3}|[1-9][0-9]{0,2}|.)", re.S)
_CONTROL = {"n": "\n", "r": "\r", "t": "\t"}


def _unescape(text):
    def one(m):
        e = m.group(1)
        if e in _CONTROL:
            return _CONTROL[e]
        if e[0] == "x":
            return chr(int(e[1:], 16))
        if e[0].isdigit():
            return chr(int(e, 8) if e[0] == "0" else min(int(e), 255))
        return e

    return _ESCAPE.sub(one, text)


class KcatFormat:
    """A parsed print format: ``parts`` (literal text, or a token letter of `TOKENS`), ``used`` (the tokens
    it holds) and ``render(values)``, the line of one record from ``{token letter: text}``.

    Examples
    --------
    >>> f = parse(r"%t [%p] at offset %o: key %k: %s\\n")
    >>> sorted(f.used)
    ['k', 'o', 'p', 's', 't']
    >>> f.render({"t": "orders", "p": 0, "o": 42, "k": "k1", "s": "v"})
    'orders [0] at offset 42: key k1: v\\n'
    """

    def __init__(self, text, parts):
        self.text = text
        self.parts = parts
        self.used = frozenset(tok for lit, tok in parts if tok is not None)
        self._template = "".join(lit.replace("{", "{{").replace("}", "}}") + ("" if tok is None else "{" + tok + "}")
                                 for lit, tok in parts)

    def __repr__(self):
        return f"KcatFormat({self.text!r})"

    def render(self, values):
        return self._template.format_map(values)


def parse(text):
    """A `KcatFormat` from kcat's ``-f`` text; an unknown token (or a ``%`` ending the text) is a
    `UsageError` naming it.

    Examples
    --------
    >>> parse("%o %Q")
    Traceback (most recent call last):
    ...
    kafkafmt.cli.usage.UsageError: unknown token %Q in the format '%o %Q' (kcat's tokens: %t %p %o %k %s %T %h %K %S, %%)
    """
    parts, literal, i = [], "", 0
    while i < len(text):
        c = text[i]
        if c != "%":
            literal += c
            i += 1
            continue
        tok = text[i + 1:i + 2]
        if tok == "%":
            literal += "%"
        elif tok in TOKENS:
            parts.append((_unescape(literal), tok))
            literal = ""
        else:
            known = " ".join("%" + t for t in TOKENS)
            what = f"token %{tok}" if tok else "% at the end"
            raise UsageError(f"unknown {what} in the format {text!r} (kcat's tokens: {known}, %%)")
        i += 2
    parts.append((_unescape(literal), None))
    return KcatFormat(text, parts)
