"""The claim function the server calls (`claim.function.CLAIM_FUNCTION`, made by a migration) is the code's CLAIM.

The migration holds the text of CLAIM as it shipped; the code's CLAIM may change after it (its SQL, or the job
columns it returns). Then this test fails: the change ships with a new revision that makes the function anew
under a name of its own (`claim_<revision>`), beside the old one that the previous release's servers still call,
and CLAIM_FUNCTION names the new one (docs/compatibility.md: expand, then contract)."""

from __future__ import annotations

from queueflow.stores.postgres.claim.function import CLAIM_FUNCTION, claim_columns, claim_function_ddl

from tests import pg

AS_CODED = "pg_temp.claim_as_coded"

DEFINITION = """
SELECT p.prosrc, pg_get_function_arguments(p.oid) AS arguments, pg_get_function_result(p.oid) AS result,
       p.proconfig, p.provolatile, p.prosecdef, l.lanname
  FROM pg_proc AS p JOIN pg_language AS l ON l.oid = p.prolang
 WHERE p.oid = to_regproc($1)
"""


async def test_the_migrated_claim_function_is_the_code_s_claim(postgres_url: str) -> None:
    async with pg.connect(postgres_url) as connection:
        await connection.execute(claim_function_ddl(AS_CODED, await claim_columns(connection)))
        coded = await connection.fetchrow(DEFINITION, AS_CODED)
        migrated = await connection.fetchrow(DEFINITION, CLAIM_FUNCTION)
    assert migrated is not None, f"no {CLAIM_FUNCTION}: its migration is missing"
    assert coded is not None
    # The migration's text is wrapped to fit its file: whitespace is all that may differ.
    assert {**dict(migrated), "prosrc": migrated["prosrc"].split()} == {
        **dict(coded),
        "prosrc": coded["prosrc"].split(),
    }, f"CLAIM no longer matches {CLAIM_FUNCTION}: make it anew in a new revision, under a new name"
