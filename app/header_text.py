"""A request header's value as its sender wrote it, for quoting back in an error.

Starlette reads header bytes as Latin-1, so UTF-8 text came back garbled: a full-width
digit five (U+FF15) as `Last-Event-ID` was quoted as 'ï¼\x95'. Bytes that are not UTF-8
stay as Latin-1 read them.
"""

from __future__ import annotations


def as_sent(value: str) -> str:
    try:
        return value.encode("latin-1").decode("utf-8")
    except UnicodeError:
        return value
