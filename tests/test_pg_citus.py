"""Sharding by tenant (issue 29, "Past one machine"): the PostgreSQL schema and SQL are ready for Citus.

Two rules make a schema distributable by tenant with Citus
(``create_distributed_table(table, 'tenant')``, docs/postgres.md):

1. every primary key and unique constraint (or unique index) of a tenant table
   leads with ``tenant``, and every foreign key between tenant tables carries it;
2. no statement joins rows of one tenant table with another's without equating
   their tenants (a join, or a subquery correlated with an outer table).

The first is read from the catalog of a migrated store; the second from every
statement the store sends during a representative workload (the statement log
of :class:`funes.store.pg_connection.StatementCounter`), parsed with sqlglot.
Citus itself cannot run here (it is not in pgserver's build), so the steps in
docs/postgres.md are untested against a real Citus.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
import sqlglot
from citus_workload import workload
from sqlglot import exp

import funes
from funes.providers.embed import HashEmbedder
from funes.store.tenancy import acting_for

pytestmark = pytest.mark.postgres

#: Tables without a tenant column, each a Citus reference table (copied to every node) or distributed by its own key.
GLOBAL = {
    "migrations": "the schema's version: one row per migration, read at open; a reference table",
    "meta": "the embedder identity (model, dimensions) of the whole store; a reference table",
    "api_keys": "how a request's tenant is found (by key hash), before any tenant is known; a reference table",
    "embedding_cache": "vectors by (model, text hash), shared by every tenant; distributed by text_hash on its own",
}

_KEYS = """
SELECT c.relname, i.relname, ix.indisprimary,
       (SELECT array_agg(coalesce(a.attname, '(expression)') ORDER BY k.n)
          FROM unnest(ix.indkey) WITH ORDINALITY k(attnum, n)
          LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum)
  FROM pg_index ix JOIN pg_class c ON c.oid = ix.indrelid JOIN pg_class i ON i.oid = ix.indexrelid
  JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = current_schema() AND (ix.indisunique OR ix.indisprimary)
"""
_TABLES = """
SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity,
       EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'tenant' AND NOT a.attisdropped)
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = current_schema() AND c.relkind = 'r'
"""
_FOREIGN = """
SELECT conrelid::regclass::text, conname,
       (SELECT array_agg(a.attname ORDER BY k.n) FROM unnest(conkey) WITH ORDINALITY k(attnum, n)
          JOIN pg_attribute a ON a.attrelid = conrelid AND a.attnum = k.attnum),
       (SELECT array_agg(a.attname ORDER BY k.n) FROM unnest(confkey) WITH ORDINALITY k(attnum, n)
          JOIN pg_attribute a ON a.attrelid = confrelid AND a.attnum = k.attnum)
  FROM pg_constraint WHERE contype = 'f' AND connamespace = current_schema()::regnamespace
"""


@pytest.fixture
def mem(pg_url: str) -> Iterator[funes.Funes]:
    service = funes.open(pg_url, embedder=HashEmbedder(64), worker="off")
    service.remember("the vector column exists once the embedder is known")
    yield service
    service.close()


def test_every_key_of_a_tenant_table_leads_with_the_tenant(mem: funes.Funes) -> None:
    conn = mem.core.store.db.reader()
    tables = {name: (rls, forced, has_tenant) for name, rls, forced, has_tenant in conn.native(_TABLES).fetchall()}
    assert set(GLOBAL) <= set(tables), set(GLOBAL) - set(tables)
    tenant_tables = {name for name, (_, _, has_tenant) in tables.items() if has_tenant}
    assert tenant_tables | set(GLOBAL) == set(tables), "a table neither keyed by tenant nor listed as global"
    assert not tenant_tables & set(GLOBAL)
    for name in tenant_tables:  # row-level security stays on every tenant table
        assert tables[name][:2] == (True, True), f"{name}: row-level security is not enabled and forced"
    wrong = []
    for table, index, primary, columns in conn.native(_KEYS).fetchall():
        if table in tenant_tables and columns[0] != "tenant":
            wrong.append(f"{table}.{index} ({'primary' if primary else 'unique'} key on {', '.join(columns)})")
    assert wrong == [], "keys that do not lead with the tenant: " + "; ".join(sorted(wrong))
    for table, name, columns, referenced in conn.native(_FOREIGN).fetchall():
        if table in tenant_tables:
            assert columns[0] == "tenant" and referenced[0] == "tenant", f"{table}.{name}: {columns} -> {referenced}"


# -- joins ------------------------------------------------------------------------------------------
def _parse(sql: str) -> object | None:
    """A statement as sqlglot's tree (placeholders as NULL, pgvector's operators as +); None for BEGIN, VACUUM ..."""
    text = re.sub(r"%[sb]", "NULL", sql).replace("%%", "%")
    text = re.sub(r"<=>|<#>|<->", "+", text)
    if not re.match(r"\s*(SELECT|WITH|INSERT|UPDATE|DELETE)\b", text, re.IGNORECASE):
        return None
    return sqlglot.parse_one(text, read="postgres")


def _tenant_pairs(node: object) -> set[frozenset[str]]:
    """The pairs of table aliases whose ``tenant`` columns an equality inside ``node`` equates."""
    pairs = set()
    for eq in node.find_all(exp.EQ):  # type: ignore[attr-defined]
        left, right = eq.left, eq.right
        if isinstance(left, exp.Column) and isinstance(right, exp.Column):
            if left.name == "tenant" and right.name == "tenant" and left.table and right.table:
                pairs.add(frozenset((left.table, right.table)))
    return pairs


def _row_source(node: exp.Expression, tenant_tables: set[str], ctes: dict[str, exp.Expression]) -> str | None:
    """The tenant table whose rows a FROM/JOIN source yields: a table, or a CTE, subquery or LATERAL reading one
    without aggregating (an aggregate over tenants is one row, which Citus plans on its own); else None."""
    if isinstance(node, exp.Table):
        if node.name in tenant_tables:
            return node.name
        body = ctes.get(node.name)
        return _row_source(body, tenant_tables, {}) if body is not None else None
    if isinstance(node, exp.Lateral | exp.Subquery):
        return _row_source(node.this, tenant_tables, ctes)
    if isinstance(node, exp.Select):
        if node.args.get("group") or any(isinstance(e.unalias(), exp.AggFunc) for e in node.expressions):
            return None
        return next(filter(None, (_row_source(s.this, tenant_tables, ctes) for s in _sources(node))), None)
    return None


def _sources(select: exp.Expression) -> list[exp.Expression]:
    """A SELECT's FROM and JOIN items."""
    items = [select.args.get("from_") or select.args.get("from"), *(select.args.get("joins") or [])]
    return [item for item in items if item is not None]


def cross_tenant_joins(sql: str, tenant_tables: set[str]) -> list[str]:
    """What in one statement joins tenant tables without equating their tenants (empty: nothing)."""
    tree = _parse(sql)
    if tree is None:
        return []
    ctes = {cte.alias: cte.this for cte in tree.find_all(exp.CTE)}  # type: ignore[attr-defined]
    problems = []
    for select in tree.find_all(exp.Select):  # type: ignore[attr-defined]
        own = {}
        for source in _sources(select):
            table = _row_source(source.this, tenant_tables, ctes)
            if table is not None:
                own[source.this.alias_or_name] = table
        equated = _tenant_pairs(select)
        names = list(own)
        for i, a in enumerate(names):  # every two tenant row sources of one FROM
            for b in names[i + 1 :]:
                if frozenset((a, b)) not in equated:
                    problems.append(f"{own[a]} {a} joined with {own[b]} {b} without {a}.tenant = {b}.tenant")
        if not own:
            continue
        outer = {}  # tenant tables of the enclosing selects, which a correlated subquery refers to
        parent = select.parent
        while parent is not None:
            if isinstance(parent, exp.Select):
                for source in _sources(parent):
                    table = _row_source(source.this, tenant_tables, ctes)
                    if table is not None:
                        outer.setdefault(source.this.alias_or_name, table)
            parent = parent.parent
        where = select.args.get("where")
        for column in where.find_all(exp.Column) if where is not None else ():
            ref = column.table
            if ref and ref not in own and ref in outer:
                if not any(frozenset((ref, mine)) in equated for mine in own):
                    problems.append(
                        f"a subquery on {', '.join(own.values())} correlated with {outer[ref]} {ref} "
                        f"without equating their tenants"
                    )
                break
    return problems


def test_the_check_finds_a_join_across_tenants() -> None:
    tables = {"memories", "memory_vectors"}
    assert cross_tenant_joins("SELECT m.id FROM memory_vectors v JOIN memories m ON m.rowid = v.memory_rowid", tables)
    assert cross_tenant_joins("SELECT m.id FROM memories m, memory_vectors v WHERE m.rowid = v.memory_rowid", tables)
    assert cross_tenant_joins(
        "SELECT id FROM memories m WHERE NOT EXISTS (SELECT 1 FROM memory_vectors v WHERE v.memory_rowid = m.rowid)",
        tables,
    )
    assert cross_tenant_joins(  # a CTE's rows are its table's rows
        "WITH c AS (SELECT v.memory_rowid FROM memory_vectors v) SELECT m.id FROM c JOIN memories m "
        "ON m.rowid = c.memory_rowid",
        tables,
    )
    assert cross_tenant_joins(
        "SELECT m.id FROM memories m JOIN (SELECT memory_rowid FROM memory_vectors) x ON x.memory_rowid = m.rowid",
        tables,
    )
    fine = (
        "WITH c AS (SELECT v.tenant, v.memory_rowid FROM memory_vectors v) SELECT m.id FROM c JOIN memories m "
        "ON m.tenant = c.tenant AND m.rowid = c.memory_rowid",
        "WITH st AS (SELECT count(*) AS n FROM memories) SELECT m.id, st.n FROM st, memories m",  # one row
        "SELECT m.id FROM memory_vectors v JOIN memories m ON m.tenant = v.tenant AND m.rowid = v.memory_rowid",
        "SELECT id FROM memories m WHERE NOT EXISTS "
        "(SELECT 1 FROM memory_vectors v WHERE v.tenant = m.tenant AND v.memory_rowid = m.rowid)",
        "SELECT id FROM memories WHERE rowid IN (SELECT memory_rowid FROM memory_vectors WHERE part = %s)",
        "SELECT m.id FROM unnest(%s::text[]) AS k(key) JOIN memories m ON m.id = k.key",
    )
    for sql in fine:
        assert cross_tenant_joins(sql, tables) == [], sql


def test_no_statement_of_a_workload_joins_across_tenants(mem: funes.Funes, tmp_path) -> None:  # type: ignore[no-untyped-def]
    conn = mem.core.store.db.reader()
    tenant_tables = {name for name, _, _, has_tenant in conn.native(_TABLES).fetchall() if has_tenant}
    counter = mem.core.store.db.counter
    counter.log = []
    try:
        workload(mem, str(tmp_path))
        statements = sorted({sql for _, sql in counter.log})
    finally:
        counter.log = None
    joined = [s for s in statements if re.search(r"\bJOIN\b|EXISTS\s*\(", s, re.IGNORECASE)]
    assert len(statements) > 60 and len(joined) >= 3  # the workload reached the store's joins
    problems = {sql[:160]: found for sql in statements if (found := cross_tenant_joins(sql, tenant_tables))}
    assert problems == {}, "\n".join(f"{sql}\n    {found}" for sql, found in problems.items())


def test_migration_014_keeps_a_store_written_before_it(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib import resources

    import funes.store.postgres as pg_store

    class Before014:  # the package's migrations as they were before 014
        @staticmethod
        def files(package: str):  # type: ignore[no-untyped-def]
            class Folder:
                def __init__(self, root):  # type: ignore[no-untyped-def]
                    self.root = root

                def joinpath(self, name: str):  # type: ignore[no-untyped-def]
                    return Folder(self.root.joinpath(name))

                def iterdir(self):  # type: ignore[no-untyped-def]
                    return [p for p in self.root.iterdir() if not p.name[:3].isdigit() or int(p.name[:3]) < 14]

            return Folder(resources.files(package))

    monkeypatch.setattr(pg_store, "resources", Before014)
    old = funes.open(pg_url, embedder=HashEmbedder(64), worker="off")
    with acting_for("acme"):
        kept = old.remember("the invoices are in the blue folder", tenant="acme")
        old.remember_many([f"acme note {n} about budgets" for n in range(5)], tenant="acme")
        session = old.session("acme-chat", tenant="acme")
        old.add_messages(session, [{"role": "user", "content": "hello"}])
    assert max(v for v, _ in old.core.store.migrations()) < 14
    old.close()
    monkeypatch.undo()

    new = funes.open(pg_url, embedder=HashEmbedder(64), worker="off")
    try:
        assert 14 in {v for v, _ in new.core.store.migrations()}
        with acting_for("acme"):
            assert new.get(kept.id, tenant="acme").content == kept.content
            assert [h.memory.id for h in new.search("invoices blue folder", tenant="acme")][:1] == [kept.id]
            assert [m.content for m in new.history("acme-chat", tenant="acme")] == ["hello"]
            new.add_messages("acme-chat", [{"role": "user", "content": "again"}], tenant="acme")
            new.forget(kept.id, tenant="acme")  # its vectors go with it (the new foreign key cascades)
        conn = new.core.store.db.reader()
        assert (
            conn.native(
                "SELECT count(*) FROM memory_vectors v WHERE NOT EXISTS "
                "(SELECT 1 FROM memories m WHERE m.tenant = v.tenant AND m.rowid = v.memory_rowid)"
            ).fetchone()[0]
            == 0
        )
    finally:
        new.close()
