"""What a flag's value means: `KEY=VALUE` pairs whose values are JSON when they parse,
and JSON given inline, as `@FILE` or as `-` (stdin). A value the API could not be sent is
a usage error naming its flag (exit 2), before anything is sent."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import click

from app.cli.unique_keys import RepeatedKey, unique_pairs


class _OutOfRange(ValueError):
    """A JSON number too large for a float (`1e999`): no JSON body can carry it."""


def _constant(name: str) -> Any:
    # Python's json reads `NaN`, `Infinity` and `-Infinity`, which JSON has not: it is
    # JSON's parser that decides, so they are not JSON here either.
    raise ValueError(f"{name} is not JSON")


def _number(text: str) -> float:
    number = float(text)
    if math.isinf(number):
        raise _OutOfRange(f"{text[:40]} is out of the range of a JSON number (a double)")
    return number


def _loads(text: str) -> Any:
    """Strict JSON: no NaN or Infinity, no number past a double's range (_OutOfRange), no
    key given twice in one object (RepeatedKey: json would keep the last silently)."""
    return json.loads(
        text, parse_constant=_constant, parse_float=_number, object_pairs_hook=unique_pairs
    )


def loose_value(text: str, option: str) -> Any:
    """A `KEY=VALUE` value: JSON when it parses (numbers, true, lists), else the text
    (`NaN` too, which JSON has not). A number JSON cannot carry is a usage error."""
    try:
        return _loads(text)
    except (_OutOfRange, RepeatedKey) as exc:
        raise click.BadParameter(str(exc), param_hint=option) from None
    except ValueError:
        return text


def json_value(text: str, option: str) -> Any:
    """A value that must be JSON, given inline, as `@FILE` or as `-` (stdin): an input
    larger than a command line may carry (128 KiB an argument on Linux) comes from a file
    or a pipe. JSON never starts with `@`, and `-` alone is not JSON. Anything else, and
    NaN, Infinity or a number past a double's range, is a one-line usage error."""
    if text == "-" or text.startswith("@"):
        text = _read_text(text, option)
    try:
        return _loads(text)
    except (_OutOfRange, RepeatedKey) as exc:
        raise click.BadParameter(str(exc), param_hint=option) from None
    except ValueError as exc:
        raise click.BadParameter(f"not JSON ({exc})", param_hint=option) from None


def _read_text(source: str, option: str) -> str:
    if source == "-":
        try:
            text = sys.stdin.read()
            text.encode("utf-8")  # bytes that are not UTF-8 come as lone surrogates
        except UnicodeError:
            raise click.BadParameter("stdin is not UTF-8 text", param_hint=option) from None
        return text
    try:
        return Path(source[1:]).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else f"not UTF-8 text ({exc.reason})"
        raise click.BadParameter(f"cannot read {source[1:]!r}: {why}", param_hint=option) from None


def json_object(text: str, option: str) -> dict[str, Any]:
    value = json_value(text, option)
    if not isinstance(value, dict):
        raise click.BadParameter("a JSON object ({...}) is needed", param_hint=option)
    return value


def pairs(
    items: tuple[str, ...], option: str, text_keys: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """KEY=VALUE pairs; the values of `text_keys` stay text even when they parse as JSON."""
    split = [item.partition("=") for item in items]
    if any(not sep or not key for key, sep, _ in split):
        raise click.BadParameter("use KEY=VALUE", param_hint=option)
    keys = [key for key, _, _ in split]
    repeated = [key for key in dict.fromkeys(keys) if keys.count(key) > 1]
    if repeated:
        # Two values for one key contradict each other: the last one silently won.
        named = ", ".join(repr(key[:80]) for key in repeated)
        raise click.BadParameter(f"{named} given twice: give each key once", param_hint=option)
    return {
        key: value if key in text_keys else loose_value(value, option) for key, _, value in split
    }


def key_option(func: Any) -> Any:
    """`--idempotency-key KEY`, sent as the request's `Idempotency-Key`: the command sent
    again with the same key after its answer was lost is answered as the first was, and
    applied once (docs/api.md, "Idempotency")."""
    return click.option(
        "--idempotency-key",
        "key",
        default=None,
        metavar="KEY",
        callback=_header_value,
        help="sent as Idempotency-Key: repeat the command with the same key when its answer "
        "was lost, and it is applied once",
    )(func)


def _header_value(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A key the API takes: 1 to 200 printable ASCII characters (a header carries no other;
    `clé-1` was a traceback)."""
    if value is not None and not (
        0 < len(value) <= 200 and value.isascii() and value.isprintable()
    ):
        raise click.BadParameter("an Idempotency-Key is 1 to 200 printable ASCII characters")
    return value


def input_options(func: Any) -> Any:
    """`--input KEY=VALUE …` and `--input-json JSON|@FILE|-`: a run's initial input."""
    func = click.option(
        "--input-json",
        default=None,
        metavar="JSON|@FILE|-",
        help="the whole initial input: JSON, @FILE to read it from a file, - from stdin",
    )(func)
    return click.option(
        "--input",
        "inputs",
        multiple=True,
        metavar="KEY=VALUE",
        help="the run's initial input (repeatable; JSON values allowed)",
    )(func)


def initial_input(inputs: tuple[str, ...], input_json: str | None) -> dict[str, Any]:
    """The initial input of `input_options`: `--input-json`'s object, `--input` pairs added
    (a key it has already is a usage error)."""
    initial = json_object(input_json, "--input-json") if input_json else {}
    added = pairs(inputs, "--input")
    both = [key for key in added if key in initial]
    if both:
        # Two values for one key contradict each other, as two --inputs do: one silently won.
        named = ", ".join(repr(key[:80]) for key in both)
        raise click.BadParameter(
            f"{named} given by --input-json too: give each key once", param_hint="--input"
        )
    return {**initial, **added}
