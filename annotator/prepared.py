"""Querysets compiled to SQL once per database connection, then run again with new values; and the hot
writes (`insert`, `update`, `delete`, at the end) sent as statements built once per model and shape.

Building and compiling a queryset costs the ORM 0.4-2.7 ms of CPU, where PostgreSQL answers the same small
statement in 0.1-0.2 ms. The annotators' hot path (token, access, modes, lock, taxonomy check) runs the same
few reads on every request, and their compilation was a quarter of the web process's CPU per claim, draft
and submit (bench/bench_annotators.py, docs/benchmarks.md).

A `PreparedQuery` builds its queryset once per connection with stand-in values, records where those values
landed among the compiled statement's parameters, and from then on runs that statement with the caller's
values, turning rows into objects through the compiler of that first build (select_related, annotations,
field converters and `select_for_update` included), as Django's own ModelIterable and results_iter do.

Only for querysets whose SQL does not depend on the values: equality filters on ints and strings. A `__in`
of a varying list compiles to a varying number of placeholders (prepare one query per length) and None
compiles to IS NULL. A stand-in that does not reach the parameters unchanged is an error at first use,
never a wrong query. Everything else in the queryset is frozen at that first build: it must not read the
clock, settings that tests override, or anything else that changes between calls.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from weakref import WeakKeyDictionary

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import Model, QuerySet
from django.db.models.query import get_related_populators
from django.db.transaction import TransactionManagementError

_serial = itertools.count(1)
# Far above any id a table here reaches, and inside PostgreSQL's bigint.
_INT_STAND_IN = 7_300_000_000_000_000_000


@dataclass(frozen=True)
class _Compiled:
    sql: str
    params: tuple[Any, ...]
    slots: tuple[tuple[int, str], ...]  # (position among params, value's name)
    compiler: Any
    converters: dict[int, Any]
    init_list: tuple[str, ...]
    start: int
    end: int
    populators: tuple[Any, ...]
    annotations: tuple[tuple[str, int], ...]
    for_update: bool


class PreparedQuery:
    """`build(**values)` returns the queryset; `kinds` names each value's type (int or str)."""

    def __init__(self, build: Callable[..., QuerySet], **kinds: type):
        if not kinds or any(kind not in (int, str) for kind in kinds.values()):
            raise TypeError("a PreparedQuery takes int or str values")
        self._build = build
        self._kinds = kinds
        self._compiled: WeakKeyDictionary = WeakKeyDictionary()

    def objects(self, using: str = DEFAULT_DB_ALIAS, **values: Any) -> list[Model]:
        """The queryset's objects for these values (a list, read at once)."""
        if values.keys() != self._kinds.keys():
            raise TypeError(f"expected values for {sorted(self._kinds)}, got {sorted(values)}")
        connection = connections[using]
        compiled = self._compiled.get(connection)
        if compiled is None:
            compiled = self._compiled[connection] = self._compile(using)
        if compiled.for_update and connection.get_autocommit():
            raise TransactionManagementError("select_for_update cannot be used outside of a transaction.")
        params = list(compiled.params)
        for position, name in compiled.slots:
            params[position] = values[name]
        with connection.cursor() as cursor:
            cursor.execute(compiled.sql, params)
            rows = cursor.fetchall()
        return list(self._hydrate(compiled, rows, using))

    def _compile(self, using: str) -> _Compiled:
        stand_ins = {
            name: _INT_STAND_IN + next(_serial) if kind is int else f"\x1fprepared:{name}:{next(_serial)}"
            for name, kind in self._kinds.items()
        }
        queryset = self._build(**stand_ins)
        compiler = queryset.query.get_compiler(using=using)
        sql, params = compiler.as_sql()
        if compiler.has_extra_select:
            raise TypeError("a PreparedQuery cannot hold extra() columns")
        name_of = {(type(value), value): name for name, value in stand_ins.items()}
        slots = tuple(
            (position, name_of[(type(param), param)])
            for position, param in enumerate(params)
            if type(param) in (int, str) and (type(param), param) in name_of
        )
        missing = set(stand_ins) - {name for _, name in slots}
        if missing:
            raise TypeError(f"{sorted(missing)} did not reach the SQL's parameters unchanged")
        columns = [column[0] for column in compiler.select[: compiler.col_count]]
        if compiler.has_composite_fields(columns):
            raise TypeError("a PreparedQuery cannot select composite fields")
        klass_info = compiler.klass_info
        fields = klass_info["select_fields"]
        start, end = fields[0], fields[-1] + 1
        return _Compiled(
            sql=sql,
            params=tuple(params),
            slots=slots,
            compiler=compiler,
            converters=compiler.get_converters(columns),
            init_list=tuple(column[0].target.attname for column in compiler.select[start:end]),
            start=start,
            end=end,
            populators=tuple(get_related_populators(klass_info, compiler.select, using)),
            annotations=tuple(compiler.annotation_col_map.items()),
            for_update=bool(queryset.query.select_for_update),
        )

    @staticmethod
    def _hydrate(compiled: _Compiled, rows: list[tuple], using: str) -> Iterator[Model]:
        model = compiled.compiler.klass_info["model"]
        if compiled.converters:
            rows = compiled.compiler.apply_converters(rows, compiled.converters)
        for row in rows:
            obj = model.from_db(using, compiled.init_list, row[compiled.start : compiled.end])
            for populator in compiled.populators:
                populator.populate(row, obj)
            for name, position in compiled.annotations:
                setattr(obj, name, row[position])
            yield obj


# Writes. Saving a draft or a submit writes the annotation, its labels, its history and the assignment, and
# the ORM spent 0.26-0.57 ms of CPU building each of those statements against 0.06 ms to send it
# (bench/bench_annotators.py, docs/benchmarks.md). These helpers write what the ORM would (defaults,
# auto_now and auto_now_add, each value converted by its field) with the statement's text built once per
# model and shape. They send no signals, like QuerySet.update() and bulk_create(); `delete` refuses a model
# that other rows point to, whose deletion the ORM's collector would have to follow.

_STATEMENTS: dict[tuple, str] = {}


def insert(objs: list[Model], using: str = DEFAULT_DB_ALIAS) -> None:
    """INSERT new instances of one model, setting their primary keys (from RETURNING) as save() does."""
    if not objs:
        return
    model = type(objs[0])
    connection = connections[using]
    fields = _insert_fields(model)
    key = ("insert", model, len(objs), connection.vendor)
    sql = _STATEMENTS.get(key)
    if sql is None:
        quote = connection.ops.quote_name
        row = f"({', '.join(['%s'] * len(fields))})"
        sql = _STATEMENTS[key] = (
            f"INSERT INTO {quote(model._meta.db_table)} ({', '.join(quote(f.column) for f in fields)}) "
            f"VALUES {', '.join([row] * len(objs))} RETURNING {quote(model._meta.pk.column)}"
        )
    params = []
    for obj in objs:
        if type(obj) is not model or obj.pk is not None:
            raise TypeError("insert takes new instances of one model")
        params += [f.get_db_prep_save(f.pre_save(obj, True), connection) for f in fields]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        ids = [row[0] for row in cursor.fetchall()]
    for obj, pk in zip(objs, ids, strict=True):
        obj.pk = pk
        obj._state.adding = False
        obj._state.db = using


def update(
    model: type[Model],
    pk: int,
    *,
    where: dict[str, Any] | None = None,
    add: dict[str, int] | None = None,
    using: str = DEFAULT_DB_ALIAS,
    **values: Any,
) -> int:
    """UPDATE the row `pk` of `model` (and only if its fields equal `where`): `values` set, `add` added to
    the stored numbers. Returns the number of rows changed (0 or 1), as QuerySet.update() does."""
    where, add = where or {}, add or {}
    if any(value is None for value in where.values()):
        raise TypeError("where compares with =, which never matches NULL")
    connection = connections[using]
    meta = model._meta
    key = ("update", model, tuple(values), tuple(add), tuple(where), connection.vendor)
    sql = _STATEMENTS.get(key)
    if sql is None:
        quote = connection.ops.quote_name
        sets = [f"{quote(meta.get_field(name).column)} = %s" for name in values]
        sets += [f"{quote(c)} = {quote(c)} + %s" for c in (meta.get_field(name).column for name in add)]
        conditions = [f"{quote(meta.pk.column)} = %s"]
        conditions += [f"{quote(meta.get_field(name).column)} = %s" for name in where]
        sql = _STATEMENTS[key] = (
            f"UPDATE {quote(meta.db_table)} SET {', '.join(sets)} WHERE {' AND '.join(conditions)}"
        )
    params = [meta.get_field(name).get_db_prep_save(value, connection) for name, value in values.items()]
    params += list(add.values())
    params += [
        pk,
        *(meta.get_field(name).get_db_prep_save(value, connection) for name, value in where.items()),
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount


def delete(model: type[Model], using: str = DEFAULT_DB_ALIAS, **equal: Any) -> int:
    """DELETE the rows of `model` whose fields equal `equal`; returns how many. Only for a model no other
    row points to (nothing to cascade to or protect)."""
    if not equal or any(value is None for value in equal.values()):
        raise TypeError("delete takes equalities with values")
    connection = connections[using]
    meta = model._meta
    key = ("delete", model, tuple(equal), connection.vendor)
    sql = _STATEMENTS.get(key)
    if sql is None:
        if meta.related_objects:
            raise TypeError(f"rows of other models point to {meta.label}: delete them through the ORM")
        quote = connection.ops.quote_name
        conditions = " AND ".join(f"{quote(meta.get_field(name).column)} = %s" for name in equal)
        sql = _STATEMENTS[key] = f"DELETE FROM {quote(meta.db_table)} WHERE {conditions}"
    params = [meta.get_field(name).get_db_prep_save(value, connection) for name, value in equal.items()]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount


def _insert_fields(model: type[Model]) -> list:
    pk = model._meta.pk
    if not pk.db_returning:
        raise TypeError(f"{model._meta.label}'s primary key is not made by the database")
    return [f for f in model._meta.local_concrete_fields if f is not pk and not f.generated]
