"""Text that is not UTF-8: the bytes of an argument or of stdin that no UTF-8 character
has, which Python keeps as lone surrogates (`\\udcff` for the byte 0xff). No request can
carry them: refused as a bad value (exit 2), shown as the bytes typed (`'run-\\xff'`)."""

from __future__ import annotations

from app.cli.output import clean


def not_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def shown_as_typed(text: str) -> str:
    """`text` quoted, its undecodable bytes as `\\xff` and what a terminal acts on escaped."""
    try:
        typed = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate no byte became (`\ud800`, from no shell)
        typed = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return f"'{clean(typed[:200], one_line=True)}'"
