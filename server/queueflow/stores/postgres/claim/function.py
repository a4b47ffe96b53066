"""The one-statement claim: CLAIM wrapped in a function of the database, called as a statement of its own
(CLAIM_CALL: one round trip, where the claim's transaction takes three: BEGIN_CLAIM, CLAIM, COMMIT).

One statement is atomic without a transaction block; the function carries the claim's settings: plan_cache_mode,
enable_seqscan and jit as its SET clauses, in force while the claim is planned and run (PL/pgSQL keeps the generic
plan, as BEGIN_CLAIM made PostgreSQL keep CLAIM's, made without sequential scans and run without JIT compilation:
BEGIN_CLAIM's comment says why), and synchronous_commit set for the rest of the transaction
(set_config's is_local), so that the statement's own commit is asynchronous. #variable_conflict keeps the names of
the result columns (the function's OUT parameters) from shadowing the tables' columns inside CLAIM.

The function is made by a migration, under a name of its revision's (CLAIM_FUNCTION): the text it holds is
the CLAIM of the code that shipped with that revision, and tests/postgres/test_claim_function.py fails as soon as
the code's CLAIM (or the job columns it returns) differs from it. A change to CLAIM therefore ships with a
revision that makes the function anew under a new name (`claim_<revision>`), beside the old one: during a rolling
deploy the previous release's servers go on calling theirs; the release after drops it (expand, then contract:
docs/compatibility.md). A server on a database without its function (not migrated yet) claims in its
transaction (`claims.PostgresClaims`).

Until revision 0011 each pooled connection made the function as it opened, in pg_temp, from the code's own CLAIM.
That cost every new session a CREATE FUNCTION in its temporary schema (the schema made for the session, a pg_proc
row written and deleted when the session ends; the first also prepared CLAIM to read its columns): a connection
opened in 26.0 ms instead of 9.3 (median of 60 each, paired ratio 0.41, the machine loaded), for each of a pool's
connections and again after every reconnect. And, as a session's own object, it was never there for a role without
TEMPORARY on the database, nor behind a transaction-mode pooler (the next statement may run on another server
session), where every claim took its transaction; made by a migration, the claim is one statement there too.
"""

from __future__ import annotations

from queueflow.stores.postgres.claim.args import ClaimArgs, TurnOf
from queueflow.stores.postgres.claim.unrestricted_sql import CLAIM, PLAN_SETTINGS
from queueflow.stores.postgres.connection import Db
from queueflow.stores.postgres.params import Placeholders, sql_types

CLAIM_FUNCTION = "queueflow.claim_0022"
"""The function of migration 0022 (0011 made the first), made from the CLAIM below."""

_claim = Placeholders(ClaimArgs, TurnOf)
CLAIM_CALL = (
    f"SELECT * FROM {CLAIM_FUNCTION}({', '.join(getattr(_claim, name) for name in ClaimArgs._fields + TurnOf._fields)})"
)


def claim_function_ddl(name: str, columns: list[tuple[str, str]]) -> str:
    """CREATE FUNCTION `name` for CLAIM, returning its result `columns` (name, type: `claim_columns`): the
    definition the migration's function must have."""
    returns = ", ".join(f'"{column}" {sql_type}' for column, sql_type in columns)
    settings = " ".join(f"SET {name} = {value}" for name, value in PLAN_SETTINGS)
    return f"""CREATE FUNCTION {name}({", ".join(sql_types(ClaimArgs, TurnOf))})
RETURNS TABLE ({returns}) LANGUAGE plpgsql {settings} AS $claim$
#variable_conflict use_column
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    RETURN QUERY {CLAIM};
END
$claim$"""


async def claim_columns(db: Db) -> list[tuple[str, str]]:
    """CLAIM's result columns with their types, as the function returns them."""
    attributes = (await db.prepare(CLAIM)).get_attributes()
    types = await db.fetchval(
        "SELECT array_agg(format_type(oid, NULL) ORDER BY n) FROM unnest($1::oid[]) WITH ORDINALITY AS t(oid, n)",
        [attribute.type.oid for attribute in attributes],
    )
    return [(attribute.name, sql_type) for attribute, sql_type in zip(attributes, types, strict=True)]
