"""A FAKE MongoDB, for the store and platform tests where no MongoDB server can run.

`FakeAsyncMongoClient` stands in for PyMongo's `AsyncMongoClient` with mongomock (an
in-memory MongoDB written in Python) behind the async methods `MongoStore` calls. It is
named a fake everywhere it is used: it is not MongoDB, and a test that passes on it shows
the store's logic, not a server's behaviour. Where the two are known to differ, it does
what a standalone MongoDB server does:

- every document written is encoded to BSON first, so a value BSON cannot hold (an
  integer beyond 64 bits) fails as the driver fails, and one over 16 MiB is refused;
- an update whose resulting document would pass 16 MiB is refused (code 17419), the
  document left as it was, as the server refuses it;
- a duplicate key names its index and key pattern, as the server's error does;
- a `$regex` holding a NUL is refused (BadValue), as the server refuses it;
- `watch` fails as on a standalone server (change streams need a replica set).

With `TRELLIS_TEST_MONGODB_URL` set, the tests use that server instead (`mongo_for_tests`).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import bson
import mongomock
from mongomock.store import ServerStore
from pymongo.errors import DocumentTooLarge, DuplicateKeyError, OperationFailure, WriteError

Doc = dict[str, Any]
MAX_BSON_BYTES = 16 * 1024 * 1024
# Every client of one URL sees the same data, as clients of one server do.
_SERVERS: dict[str, ServerStore] = {}


def mongo_for_tests() -> tuple[str, dict[str, Any]]:
    """A MongoDB URL and `MongoStore` options for a test: the server TRELLIS_TEST_MONGODB_URL
    names, or else a fresh FAKE one (`forget` its URL afterwards)."""
    url = os.environ.get("TRELLIS_TEST_MONGODB_URL")
    if url:
        return url, {}
    return f"mongodb://fake-mongodb-{uuid.uuid4().hex[:8]}/", {"client_class": FakeAsyncMongoClient}


def is_fake(url: str) -> bool:
    return url.startswith("mongodb://fake-mongodb-")


def forget(url: str) -> None:
    """Drop everything every client of `url` stored (a test's teardown)."""
    _SERVERS.pop(url, None)


class FakeAsyncMongoClient:
    """`AsyncMongoClient(url, **options)` for the calls `MongoStore` makes (a fake)."""

    def __init__(self, url: str, **options: Any) -> None:
        self._sync = mongomock.MongoClient(_store=_SERVERS.setdefault(url, ServerStore()))

    def __getitem__(self, name: str) -> FakeDatabase:
        return FakeDatabase(self._sync[name])

    async def drop_database(self, name: str) -> None:
        self._sync.drop_database(name)

    async def close(self) -> None:
        self._sync.close()


class FakeDatabase:
    def __init__(self, sync: Any) -> None:
        self._sync = sync

    def __getitem__(self, name: str) -> FakeCollection:
        return FakeCollection(self._sync[name])

    def __getattr__(self, name: str) -> FakeCollection:
        if name.startswith("_"):
            raise AttributeError(name)
        return self[name]

    async def command(self, name: str) -> Doc:
        return dict(self._sync.command(name))


class FakeCursor:
    """A find's or aggregate's cursor: chained options, then `await to_list()` or
    `async for`."""

    def __init__(self, sync: Any) -> None:
        self._sync = sync

    def sort(self, *args: Any) -> FakeCursor:
        self._sync = self._sync.sort(*args)
        return self

    def skip(self, count: int) -> FakeCursor:
        self._sync = self._sync.skip(count)
        return self

    def limit(self, count: int) -> FakeCursor:
        self._sync = self._sync.limit(count)
        return self

    async def to_list(self, length: int | None = None) -> list[Doc]:
        docs = list(self._sync)
        return docs if length is None else docs[:length]

    async def close(self) -> None:
        self._sync = iter(())

    def __aiter__(self) -> AsyncIterator[Doc]:
        return self._each()

    async def _each(self) -> AsyncIterator[Doc]:
        for doc in self._sync:
            yield doc


class FakeCollection:
    def __init__(self, sync: Any) -> None:
        self._sync = sync

    async def create_index(self, keys: Any, **options: Any) -> str:
        return str(self._sync.create_index(keys, **options))

    async def insert_one(self, doc: Doc) -> Any:
        with self._duplicates(lambda: doc):
            return self._sync.insert_one(_as_bson(doc))

    async def replace_one(self, filter_: Doc, replacement: Doc, upsert: bool = False) -> Any:
        _refuse_nul_regex(filter_)
        with self._duplicates(lambda: replacement):
            return self._sync.replace_one(filter_, _as_bson(replacement), upsert=upsert)

    async def find_one_and_replace(
        self, filter_: Doc, replacement: Doc, **options: Any
    ) -> Doc | None:
        with self._duplicates(lambda: replacement):
            found: Doc | None = self._sync.find_one_and_replace(
                filter_, _as_bson(replacement), **options
            )
        return found

    async def update_one(self, filter_: Doc, update: Doc, upsert: bool = False) -> Any:
        _refuse_nul_regex(filter_)
        _as_bson(update)

        def updated() -> Doc:  # as the update would leave it (read only if a key collides)
            return {**(self._sync.find_one(filter_) or {}), **update.get("$set", {})}

        before = self._sync.find_one(filter_)
        with self._duplicates(updated, in_place=True):
            result = self._sync.update_one(filter_, update, upsert=upsert)
        after = before["_id"] if before else result.upserted_id
        self._refuse_too_large({after: before}, WriteError)
        return result

    async def update_many(self, filter_: Doc, update: Doc) -> Any:
        _refuse_nul_regex(filter_)
        _as_bson(update)
        before = {doc["_id"]: doc for doc in self._sync.find(filter_)}
        result = self._sync.update_many(filter_, update)
        self._refuse_too_large(before, WriteError)
        return result

    async def find_one_and_update(self, filter_: Doc, update: Doc, **options: Any) -> Doc | None:
        _refuse_nul_regex(filter_)
        _as_bson(update)
        before = self._sync.find_one(filter_, sort=options.get("sort"))
        found: Doc | None = self._sync.find_one_and_update(filter_, update, **options)
        if before is not None:
            self._refuse_too_large({before["_id"]: before}, OperationFailure)
        elif options.get("upsert"):  # made: found by its `_id` (every upsert here names it)
            made = self._sync.find_one(filter_ if "_id" not in filter_ else {"_id": filter_["_id"]})
            if made is not None:
                self._refuse_too_large({made["_id"]: None}, OperationFailure)
        return found

    async def find_one(self, filter_: Doc, projection: Any = None) -> Doc | None:
        _refuse_nul_regex(filter_)
        found: Doc | None = self._sync.find_one(filter_, projection)
        return found

    def find(self, filter_: Doc, projection: Any = None) -> FakeCursor:
        _refuse_nul_regex(filter_)
        return FakeCursor(self._sync.find(filter_, projection))

    async def aggregate(self, pipeline: list[Doc]) -> FakeCursor:
        _refuse_nul_regex(pipeline)
        return FakeCursor(iter(list(self._sync.aggregate(pipeline))))

    async def count_documents(self, filter_: Doc) -> int:
        _refuse_nul_regex(filter_)
        return int(self._sync.count_documents(filter_))

    async def distinct(self, key: str, filter_: Doc | None = None) -> list[Any]:
        _refuse_nul_regex(filter_)
        return list(self._sync.distinct(key, filter_))

    async def delete_one(self, filter_: Doc) -> Any:
        _refuse_nul_regex(filter_)
        return self._sync.delete_one(filter_)

    async def delete_many(self, filter_: Doc) -> Any:
        _refuse_nul_regex(filter_)
        return self._sync.delete_many(filter_)

    async def watch(self, pipeline: list[Doc] | None = None) -> Any:
        # What a standalone server answers (code 40573).
        raise OperationFailure(
            "The $changeStream stage is only supported on replica sets", code=40573
        )

    def _refuse_too_large(
        self, before: dict[Any, Doc | None], error: type[OperationFailure]
    ) -> None:
        """An update that left a document past 16 MiB: every document it changed put back
        as it was (`before`; None: made by the upsert), and refused as the server refuses
        it (WriteError from update_one/many, OperationFailure from find_one_and_update)."""
        sizes = {key: _size(self._sync.find_one({"_id": key})) for key in before}
        too_large = [size for size in sizes.values() if size > MAX_BSON_BYTES]
        if not too_large:
            return
        for key, doc in before.items():
            if doc is None:
                self._sync.delete_one({"_id": key})
            else:
                self._sync.replace_one({"_id": key}, doc)
        message = f"Resulting document after update is larger than {MAX_BSON_BYTES}"
        raise error(message, 17419, {"code": 17419, "errmsg": message})

    @contextmanager
    def _duplicates(self, written: Callable[[], Doc], in_place: bool = False) -> Iterator[None]:
        """mongomock's duplicate-key error names no index; the server's names it.
        `written`: the document written; `in_place`: it updates the one with its `_id`."""
        try:
            yield
        except DuplicateKeyError:
            raise self._duplicate_of(written(), in_place) from None

    def _duplicate_of(self, doc: Doc, in_place: bool) -> DuplicateKeyError:
        for name, index in self._sync.index_information().items():
            if name == "_id_":
                if in_place:
                    continue
            elif not index.get("unique"):
                continue
            pattern = dict(index["key"])
            value = {field: doc.get(field) for field in pattern}
            # Another document holding the same key (for `_id`, any other document).
            other = value if name == "_id_" else {**value, "_id": {"$ne": doc.get("_id")}}
            if self._sync.find_one(other) is not None:
                message = (
                    f"E11000 duplicate key error collection: {self._sync.full_name} "
                    f"index: {name} dup key: {value}"
                )
                return DuplicateKeyError(message, 11000, {"keyPattern": pattern, "keyValue": value})
        return DuplicateKeyError("E11000 duplicate key error", 11000)


def _size(doc: Doc | None) -> int:
    return 0 if doc is None else len(bson.encode(doc))


def _as_bson(doc: Doc) -> Doc:
    """The document as the server would store it (what BSON cannot hold fails here)."""
    encoded = bson.encode(doc)
    if len(encoded) > MAX_BSON_BYTES:
        raise DocumentTooLarge(f"BSON document too large ({len(encoded)} bytes)")
    decoded: Doc = bson.decode(encoded)
    return decoded


def _refuse_nul_regex(query: Any) -> None:
    """A `$regex` holding a NUL fails as on the server (mongomock's Python `re` takes it)."""
    if isinstance(query, dict):
        pattern = query.get("$regex")
        if isinstance(pattern, str) and "\x00" in pattern:
            message = "Regular expression cannot contain an embedded null byte"
            raise OperationFailure(
                message, 2, {"ok": 0, "errmsg": message, "code": 2, "codeName": "BadValue"}
            )
        for value in query.values():
            _refuse_nul_regex(value)
    elif isinstance(query, list):
        for value in query:
            _refuse_nul_regex(value)
