"""Named statements that run alike on the writer and on readers, with rows by column name.

A :class:`Query` is a SQLAlchemy Core statement with bind parameters (``:ledger_id`` and its
own), built on first use. The writer and the readers compile it once per dialect into driver SQL
(:class:`Statements`) and run that on their raw cursors, since the hot path should cost what the
driver costs (a Core ``execute`` costs about thirty times what SQLite does for a primary-key
lookup). So a lookup both paths need (a resource's head row, a checkpoint, a pending seed) is
written once, as a function of :class:`Rows`, and each row comes back as a mapping by column
name, not a tuple by position, with the driver's values (no type processing) on both paths (a
reader of a thousand rows may take tuples: :meth:`ReadRows.tuples`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import BindParameter, bindparam
from sqlalchemy.engine.interfaces import Dialect as SqlDialect

LEDGER: BindParameter[str] = bindparam("ledger_id")
"""Every query filters on its ledger: both paths bind this one from the ledger they serve."""

Row = Mapping[Any, Any]
"""A row by column name (a reader's ``RowMapping``, the writer's ``dict``)."""


class Query:
    """A named Core statement, built on first use (the name keys the writer's compiled SQL)."""

    __slots__ = ("_build", "_statement", "columns", "name")

    def __init__(self, name: str, build: Callable[[], Any], columns: list[str] | None = None) -> None:
        self.name = name
        self.columns = columns
        """The columns an INSERT compiles for (all of the table's)."""
        self._build = build
        self._statement: Any = None

    @property
    def statement(self) -> Any:
        if self._statement is None:
            self._statement = self._build()
        return self._statement


class Rows(Protocol):
    """Where a lookup runs: the writer's unit of work (``WriteTx``) or a reader (:class:`ReadRows`)."""

    def one(self, query: Query, **params: Any) -> Row | None: ...


@dataclass(frozen=True, slots=True)
class Sql:
    """Driver SQL compiled from a Core statement, with the values of its literal binds."""

    text: str
    defaults: Mapping[str, Any]

    def params(self, values: Mapping[str, Any]) -> Mapping[str, Any]:
        if not self.defaults:
            return values
        return {**self.defaults, **values}


class Statements:
    """Queries compiled once for a dialect, executed with named parameters.

    A query's binds are fixed when it is compiled: an ``expanding`` bind (``IN`` a list given at
    execution) would need compiling per call, so it is refused; a query that takes a list builds
    one bind per element instead (see ``resources._blobs_query``).
    """

    def __init__(self, dialect: SqlDialect) -> None:
        self._dialect = dialect
        self._cache: dict[str, Sql] = {}

    def sql(self, query: Query) -> Sql:
        compiled_sql = self._cache.get(query.name)
        if compiled_sql is None:
            compiled = query.statement.compile(dialect=self._dialect, column_keys=query.columns)
            if any(bind.expanding for bind in compiled.binds.values()):
                raise ValueError(f"query {query.name!r} has an expanding bind: driver SQL binds each value")
            # Literal values in the statement (``max(x) + 1``) compile to binds with a value;
            # ours are named bindparams without one and come from the caller.
            defaults = {key: value for key, value in compiled.params.items() if value is not None}
            compiled_sql = Sql(str(compiled), defaults)
            self._cache[query.name] = compiled_sql
        return compiled_sql


class ReadRows:
    """:class:`Rows` on a reader's raw cursor (committed data only)."""

    __slots__ = ("_cursor", "_ledger_id", "_statements")

    def __init__(self, cursor: Any, statements: Statements, ledger_id: str) -> None:
        self._cursor = cursor
        self._statements = statements
        self._ledger_id = ledger_id

    def _execute(self, query: Query, params: Mapping[str, Any]) -> Any:
        sql = self._statements.sql(query)
        self._cursor.execute(sql.text, sql.params({"ledger_id": self._ledger_id, **params}))
        return self._cursor

    def one(self, query: Query, **params: Any) -> Row | None:
        cursor = self._execute(query, params)
        row = cursor.fetchone()
        if row is None:
            return None
        return {column[0]: value for column, value in zip(cursor.description, row, strict=True)}

    def all(self, query: Query, **params: Any) -> list[Row]:
        cursor = self._execute(query, params)
        rows = cursor.fetchall()
        names = [column[0] for column in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in rows]

    def tuples(self, query: Query, **params: Any) -> list[tuple[Any, ...]]:
        """The rows as the driver gives them, by position in the query's column order: only for a
        read that builds a record per row of many (a page of a thousand changes), where a mapping
        per row costs as much as the driver's row itself. Its reader names the columns once,
        beside the query (``change_log._COLUMNS``)."""
        return list(self._execute(query, params).fetchall())
