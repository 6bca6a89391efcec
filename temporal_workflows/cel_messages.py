"""cel-python's evaluation errors in CEL's words: its operators and types by their CEL names.

It says "found no matching overload for Token('RULE', 'relation_ne') applied to
'(<class 'celpy.celtypes.IntType'>, <class 'NoneType'>)'"; a node's error now reads "found
no matching overload for '!=' applied to (int, null_type)", as the messages naming a
value's type do (docs/semantics.md).

The operator is the rule of CEL's grammar that parsed it, which cel-python writes with
repr(): Token('RULE', 'relation_ne') from a parser built in this process, 'relation_ne'
from one loaded back (app/cel_parser.py; `trellis api` and `trellis worker` do that). Both
are put in CEL's words.
"""

from __future__ import annotations

import re

from celpy import celtypes

_OPERATORS = {
    "relation_eq": "==",
    "relation_ne": "!=",
    "relation_lt": "<",
    "relation_le": "<=",
    "relation_gt": ">",
    "relation_ge": ">=",
    "relation_in": "in",
    "addition_add": "+",
    "addition_sub": "-",
    "multiplication_mul": "*",
    "multiplication_div": "/",
    "multiplication_mod": "%",
    "unary_neg": "-",
    "unary_not": "!",
}
# Each CEL value's type by its CEL name: messages naming a value's type say these, and
# cel-python's own errors, naming Python classes, are put in these words.
CEL_TYPE_NAMES: dict[type, str] = {
    type(None): "null_type",
    celtypes.NullType: "null_type",
    celtypes.BoolType: "bool",
    celtypes.IntType: "int",
    celtypes.UintType: "uint",
    celtypes.DoubleType: "double",
    celtypes.StringType: "string",
    celtypes.BytesType: "bytes",
    celtypes.ListType: "list",
    celtypes.MapType: "map",
    celtypes.TimestampType: "google.protobuf.Timestamp",
    celtypes.DurationType: "google.protobuf.Duration",
    celtypes.TypeType: "type",
}
_TYPES = {kind.__name__: name for kind, name in CEL_TYPE_NAMES.items()}
_OPERATOR = re.compile(r"(no matching overload for )(?:Token\('RULE', '(\w+)'\)|'(\w+)')")
_CLASS = re.compile(r"<class '(?:[\w.]+\.)?(\w+)'>")
_APPLIED = re.compile(r"applied to '\(([^)]*?),?\)'")


def in_cel_words(detail: str) -> str:
    """`detail` with cel-python's operator tokens and Python classes named as CEL names them."""
    detail = _OPERATOR.sub(_operator, detail)
    detail = _CLASS.sub(lambda m: _TYPES.get(m[1], m[1]), detail)
    return _APPLIED.sub(lambda m: f"applied to ({m[1]})", detail)


def _operator(match: re.Match[str]) -> str:
    rule = match[2] or match[3]
    return match[1] + repr(_OPERATORS.get(rule, rule))
