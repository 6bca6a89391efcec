"""Pick the store implementation from a store URL (`TRELLIS_STORE_URL`)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlsplit

from activities.store.base import Store
from activities.store.sqlite import SqliteStore

DEFAULT_MONGO_DATABASE = "trellis"


def open_store(url: str) -> Store:
    """A store for `sqlite:///abs/path.db` or `mongodb://…/db`; not connected yet."""
    if url.startswith("sqlite://"):
        return _sqlite(url)
    if url.startswith(("mongodb://", "mongodb+srv://")):
        # Imported for a MongoDB URL only: PyMongo takes ~0.15 s to import.
        from activities.store.mongo import MongoStore

        return MongoStore(url, database=mongo_database(url))
    raise ValueError(
        f"unsupported store URL {url!r}: use sqlite:///absolute/path.db "
        "or mongodb://host:port/database (mongodb+srv:// also works)"
    )


def _sqlite(url: str) -> Store:
    # Both sqlite:///abs/path.db and sqlite:////abs/path.db name an absolute path; with
    # two slashes the path is relative (or a host), and was taken from / (/relative.db).
    if not url.startswith("sqlite:///"):
        raise ValueError(
            f"store URL {url!r} names no absolute path: use sqlite:///absolute/path.db "
            "(three slashes, then the path from /)"
        )
    raw = unquote(url.removeprefix("sqlite://").split("?", 1)[0]).lstrip("/")
    if not raw:
        raise ValueError(f"store URL {url!r} names no file: use sqlite:///absolute/path.db")
    path = Path("/" + raw)
    path.parent.mkdir(parents=True, exist_ok=True)
    return SqliteStore(path)


def mongo_database(url: str) -> str:
    """The database named in a MongoDB URL's path, `trellis` when none is."""
    name = unquote(urlsplit(url).path.lstrip("/"))
    return name or DEFAULT_MONGO_DATABASE
