"""`open_store` picks the implementation from the store URL and never connects."""

from __future__ import annotations

from pathlib import Path

import pytest

from activities.store.base import StoreError
from activities.store.factory import open_store
from activities.store.mongo import MongoStore
from activities.store.sqlite import SqliteStore


def test_sqlite_url_opens_the_absolute_path(tmp_path: Path) -> None:
    store = open_store(f"sqlite://{tmp_path}/data/trellis.db")
    assert isinstance(store, SqliteStore)
    assert store.path == tmp_path / "data" / "trellis.db"


def test_sqlite_url_with_four_slashes_is_the_same_absolute_path(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path}/trellis.db")
    assert isinstance(store, SqliteStore)
    assert store.path == tmp_path / "trellis.db"


def test_sqlite_url_creates_the_parent_directory(tmp_path: Path) -> None:
    open_store(f"sqlite://{tmp_path}/a/b/trellis.db")
    assert (tmp_path / "a" / "b").is_dir()


def test_sqlite_url_without_a_file_is_refused() -> None:
    with pytest.raises(ValueError, match="names no file"):
        open_store("sqlite:///")


def test_mongodb_url_names_the_database() -> None:
    store = open_store("mongodb://127.0.0.1:27017/orders?retryWrites=true")
    assert isinstance(store, MongoStore)
    assert store.database_name == "orders"


def test_mongodb_url_without_a_database_uses_trellis() -> None:
    store = open_store("mongodb://user:pw@a:1,b:2/")
    assert isinstance(store, MongoStore)
    assert store.database_name == "trellis"


def test_mongodb_srv_url_is_mongodb() -> None:
    store = open_store("mongodb+srv://cluster.example.com/prod")
    assert isinstance(store, MongoStore)
    assert store.database_name == "prod"


def test_unknown_scheme_is_refused_with_the_supported_ones() -> None:
    with pytest.raises(ValueError, match=r"unsupported store URL 'postgres://x'.*sqlite:///"):
        open_store("postgres://x")


async def test_unreachable_mongodb_is_a_store_error() -> None:
    # Port 9 (discard) on loopback: nothing listens, so server selection times out fast.
    store = MongoStore("mongodb://127.0.0.1:9/", server_selection_timeout_ms=200)
    try:
        with pytest.raises(StoreError):
            await store.connect()
    finally:
        await store.close()


@pytest.mark.parametrize("url", ["sqlite://relative.db", "sqlite://data/trellis.db"])
def test_sqlite_url_without_an_absolute_path_is_refused(url: str) -> None:
    # Every leading slash was stripped and the rest taken from /: /relative.db.
    with pytest.raises(ValueError, match="names no absolute path: use sqlite:///absolute"):
        open_store(url)
