"""The text workflow search compares: case, accents and compatibility forms folded away.

`search_fold("İstanbul") == search_fold("istanbul") == "istanbul"`: Python's casefold alone
turns `İ` into `i` plus a combining dot (two code points), so `istanbul` did not match it.
Both stores keep each workflow's name and description folded this way and fold the query
the same way, so a search matches the same workflows on SQLite and MongoDB.
"""

from __future__ import annotations

import unicodedata


def search_fold(text: str) -> str:
    """`text` decomposed (NFKD), case-folded, without combining marks: `Café` → `cafe`."""
    # Decomposed before and after folding: casefold may produce what decomposes further.
    folded = unicodedata.normalize("NFKD", unicodedata.normalize("NFKD", text).casefold())
    return "".join(c for c in folded if not unicodedata.combining(c))
