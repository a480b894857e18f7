"""The database contract under both stores, on LevelDB and in memory."""

from __future__ import annotations

from store.database import Database, split


def test_apply_writes_a_merged_map_of_puts_and_deletes(database: Database) -> None:
    database.write([(b"a", b"1"), (b"b", b"2")])
    database.apply({b"a": None, b"c": b"3", b"b": b"22", b"never": None})
    assert database.range(b"", b"\xff") == [(b"b", b"22"), (b"c", b"3")]


def test_split_gives_write_the_same_operations() -> None:
    assert split({b"a": None, b"b": b"2"}) == ([(b"b", b"2")], [b"a"])
