"""The claim's parameters, one NamedTuple per group (`params`): what every claim statement takes first
(`ClaimArgs`), whose turn it is (`Turn`, `TurnOf`), and a tenant-scoped worker key's tenant (`TenantScope`)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated, NamedTuple


class ClaimArgs(NamedTuple):
    """What every claim statement takes first: up to `max_jobs` jobs of `queues` (of `task_names` only, if not
    NULL), due at `now`, leased for `lease`."""

    queues: Annotated[list[str], "text[]"]
    max_jobs: Annotated[int, "int"]
    now: Annotated[datetime, "timestamptz"]
    lease: Annotated[timedelta, "interval"]
    task_names: Annotated[list[str] | None, "text[]"]


class Turn(NamedTuple):
    """Whose turn it is (README.md, "Fairness"): tenants are served in code-point order from the first one after
    `after_tenant`, the one the previous claim served last (NULL: from the first). The restricted claim's; CLAIM
    reads the turn itself (`TurnOf`)."""

    after_tenant: Annotated[str | None, "text"]


class TurnOf(NamedTuple):
    """The set of queues whose turn a claim takes and moves: the lease's queues, sorted (`turn_of`), the key of
    their row in queueflow.claim_turns."""

    turn_of: Annotated[list[str], "text[]"]


class TenantScope(NamedTuple):
    """A tenant-scoped worker key's claim: `tenant`'s jobs only."""

    tenant: Annotated[str, "text"]


def fewer(args: ClaimArgs, claimed: int) -> ClaimArgs:
    """`args` for the rest of a claim that has taken `claimed` jobs."""
    return args._replace(max_jobs=args.max_jobs - claimed)
