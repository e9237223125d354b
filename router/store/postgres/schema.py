"""The shared store's tables, created and migrated in numbered steps.

`mcp_router_meta.schema_version` records the last step applied. Every router applies the
steps it knows and the database lacks, one process at a time (a transaction-scoped advisory
lock), so replicas that start together migrate once; a database migrated by a newer router
than this one is refused rather than misread.

Tables:
- `mcp_router_embeddings`: the shared embedding cache, one vector per (model, fingerprint),
  what `embeddings.sqlite3` is for a single process.
- `mcp_router_indexes`: one row per (namespace, model): the table that holds that catalog's
  vectors, typed `vector(dim)` so pgvector can index it with HNSW.
- one such index table per (namespace, model), made when a router first indexes it, and
  beside it (since version 2) `<table>_seen`: the day a replica last served each tool.
- `mcp_router_nonces` (since version 3): the nonces of sealed states spent by any replica
  (`router.approvals.sealing`), each kept until its state expires, so a state authorizes one thing
  once across the fleet.
- `mcp_router_pins` (since version 4): tool pinning's rows per namespace, one table for
  every replica (`router.store.pins`); each write takes the next `mcp_router_pins_version`,
  whose highest value per namespace the replicas poll to learn of an approval. Since version
  7 a row is keyed by the server's origin too (`router.pinning.origin`): the rows before it
  have origin '' and are adopted by the first entry of that name that reads them.
- `mcp_router_records` (since version 5): small values by (namespace, kind, key) that every
  replica reads alike (`router.store.shared_records`): upstream OAuth credentials (`auth`),
  lazy upstreams' listings (`listings`).
- `mcp_router_usage` (since version 5): usage pairs per (namespace, model, scope, pair), the
  scope a hash of the principal (`router.store.usage`); each write takes the next
  `mcp_router_usage_version`, so a replica reads only what changed since it last looked.
- `mcp_router_quota_buckets` (since version 6): each principal's `calls_per_minute` token
  buckets per (namespace, principal hash, scope), taken by any replica
  (`router.store.quota_buckets`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from psycopg import sql

from router.core.errors import StoreError

if TYPE_CHECKING:
    import psycopg

SCHEMA_VERSION = 7

_MIGRATION_LOCK = 0x6D63_7072_0001  # "mcpr" + 1: one advisory-lock key for schema changes

Step = Callable[["psycopg.Connection[tuple[object, ...]]"], None]


def _index_tables_remember_use(connection: psycopg.Connection[tuple[object, ...]]) -> None:
    """2: beside each index table, the day a replica last served each tool, so rows no
    replica has served for a week can go (they would cost HNSW candidates). A table of its
    own: updating a column of the vector table would re-insert every row into the HNSW
    index each day."""
    for (table,) in connection.execute("SELECT table_name FROM mcp_router_indexes").fetchall():
        connection.execute(seen_table_ddl(str(table)))
        connection.execute(
            sql.SQL(
                "INSERT INTO {} (fingerprint) SELECT fingerprint FROM {} ON CONFLICT DO NOTHING"
            ).format(sql.Identifier(seen_table(str(table))), sql.Identifier(str(table)))
        )


MIGRATIONS: dict[int, tuple[str | Step, ...]] = {
    1: (
        """CREATE TABLE mcp_router_embeddings (
            model_id text NOT NULL,
            fingerprint text NOT NULL,
            embedding vector NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (model_id, fingerprint))""",
        """CREATE TABLE mcp_router_indexes (
            namespace text NOT NULL,
            model_id text NOT NULL,
            dim integer NOT NULL,
            table_name text NOT NULL UNIQUE,
            created_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (namespace, model_id))""",
    ),
    2: (_index_tables_remember_use,),
    3: (
        """CREATE TABLE mcp_router_nonces (
            nonce text PRIMARY KEY,
            expires timestamptz NOT NULL)""",
        "CREATE INDEX mcp_router_nonces_expires ON mcp_router_nonces (expires)",
    ),
    4: (
        "CREATE SEQUENCE mcp_router_pins_version",
        """CREATE TABLE mcp_router_pins (
            namespace text NOT NULL,
            server text NOT NULL,
            tool text NOT NULL,
            approved_fingerprint text,
            approved_definition text,
            pending_fingerprint text,
            pending_definition text,
            first_seen double precision NOT NULL,
            changed_at double precision,
            version bigint NOT NULL DEFAULT nextval('mcp_router_pins_version'),
            PRIMARY KEY (namespace, server, tool))""",
        "CREATE INDEX mcp_router_pins_versions ON mcp_router_pins (namespace, version)",
    ),
    5: (
        """CREATE TABLE mcp_router_records (
            namespace text NOT NULL,
            kind text NOT NULL,
            key text NOT NULL,
            value bytea NOT NULL,
            updated_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (namespace, kind, key))""",
        "CREATE INDEX mcp_router_records_age ON mcp_router_records (namespace, kind, updated_at)",
        "CREATE SEQUENCE mcp_router_usage_version",
        """CREATE TABLE mcp_router_usage (
            namespace text NOT NULL,
            model_id text NOT NULL,
            scope text NOT NULL,
            pair text NOT NULL,
            query text NOT NULL,
            server text NOT NULL,
            tool text NOT NULL,
            vector bytea NOT NULL,
            calls integer NOT NULL,
            last_used double precision NOT NULL,
            version bigint NOT NULL DEFAULT nextval('mcp_router_usage_version'),
            PRIMARY KEY (namespace, model_id, scope, pair))""",
        "CREATE INDEX mcp_router_usage_changes ON mcp_router_usage "
        "(namespace, model_id, scope, version)",
        "CREATE INDEX mcp_router_usage_age ON mcp_router_usage (namespace, last_used)",
    ),
    6: (
        """CREATE TABLE mcp_router_quota_buckets (
            namespace text NOT NULL,
            principal text NOT NULL,
            scope text NOT NULL,
            tokens double precision NOT NULL,
            stamp double precision NOT NULL,
            PRIMARY KEY (namespace, principal, scope))""",
    ),
    7: (
        "ALTER TABLE mcp_router_pins ADD COLUMN origin text NOT NULL DEFAULT ''",
        "ALTER TABLE mcp_router_pins DROP CONSTRAINT mcp_router_pins_pkey",
        "ALTER TABLE mcp_router_pins ADD PRIMARY KEY (namespace, origin, server, tool)",
    ),
}

HNSW_M = 16
HNSW_EF_CONSTRUCTION = 200
"""m is pgvector's default; ef_construction is raised from its 64. On the large catalogs of
`benchmarks.store_scale` (near-duplicate renamed copies, a hard case for the graph), 200 let
the index miss far fewer of the labelled queries' gold tools at every ef_search, for a
longer build, paid once per store; m 32 was no better and slower. The committed run's
figures: benchmarks/results/store_scale.json."""


def migrate(connection: psycopg.Connection[tuple[object, ...]], where: str) -> int:
    """Bring the schema to `SCHEMA_VERSION`; return the version found before."""
    with connection.transaction():
        connection.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        _ensure_pgvector(connection, where)
        connection.execute(
            "CREATE TABLE IF NOT EXISTS mcp_router_meta (key text PRIMARY KEY, value text NOT NULL)"
        )
        row = connection.execute(
            "SELECT value FROM mcp_router_meta WHERE key = 'schema_version'"
        ).fetchone()
        found = int(str(row[0])) if row else 0
        if found > SCHEMA_VERSION:
            raise StoreError(
                f"store {where}: schema version {found} is newer than this mcp-router knows "
                f"({SCHEMA_VERSION}). Fix: upgrade mcp-router to the version the other "
                "replicas run."
            )
        for version in range(found + 1, SCHEMA_VERSION + 1):
            for step in MIGRATIONS[version]:
                if isinstance(step, str):
                    connection.execute(step)
                else:
                    step(connection)
        if found < SCHEMA_VERSION:
            connection.execute(
                "INSERT INTO mcp_router_meta VALUES ('schema_version', %s) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (str(SCHEMA_VERSION),),
            )
    return found


def _ensure_pgvector(connection: psycopg.Connection[tuple[object, ...]], where: str) -> None:
    import psycopg

    present = connection.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone()
    if present:
        return
    try:
        with connection.transaction():
            connection.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.Error as exc:
        raise StoreError(
            f"store {where}: the pgvector extension is not installed and this user cannot "
            f"install it ({exc.diag.message_primary or exc}). Fix: as a superuser, run "
            "CREATE EXTENSION vector; in that database (pgvector 0.8 or newer)."
        ) from exc


def index_table_ddl(table: str, dim: int) -> sql.Composed:
    return sql.SQL(
        "CREATE TABLE IF NOT EXISTS {} ("
        "fingerprint text PRIMARY KEY, embedding vector({}) NOT NULL)"
    ).format(sql.Identifier(table), sql.Literal(dim))


def hnsw_ddl(table: str) -> sql.Composed:
    return sql.SQL(
        "CREATE INDEX IF NOT EXISTS {} ON {} USING hnsw (embedding vector_cosine_ops) "
        "WITH (m = {}, ef_construction = {})"
    ).format(
        sql.Identifier(f"{table}_hnsw"),
        sql.Identifier(table),
        sql.Literal(HNSW_M),
        sql.Literal(HNSW_EF_CONSTRUCTION),
    )


def seen_table(table: str) -> str:
    return f"{table}_seen"


def seen_table_ddl(table: str) -> sql.Composed:
    return sql.SQL(
        "CREATE TABLE IF NOT EXISTS {} ("
        "fingerprint text PRIMARY KEY, last_seen date NOT NULL DEFAULT current_date)"
    ).format(sql.Identifier(seen_table(table)))
