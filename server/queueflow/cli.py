"""The `queueflow` command."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="queueflow", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("demo", help="walk a few jobs through the engine on the in-memory store")
    migrate = commands.add_parser("migrate", help="upgrade the PostgreSQL schema to the latest version")
    migrate.add_argument(
        "--database-url",
        default=os.environ.get("QUEUEFLOW_DATABASE_URL"),
        help="postgresql://user:password@host:port/database (default: $QUEUEFLOW_DATABASE_URL)",
    )
    args = parser.parse_args(argv)

    if args.command == "demo":
        from queueflow.demo import run_demo

        asyncio.run(run_demo())
    elif args.command == "migrate":
        return _migrate(parser, args.database_url)
    return 0


def _migrate(parser: argparse.ArgumentParser, database_url: str | None) -> int:
    from queueflow.stores import pgschema

    if not database_url:
        parser.error("migrate needs --database-url or QUEUEFLOW_DATABASE_URL")
    try:
        pgschema.upgrade(database_url)
    except Exception as exc:  # a CLI answers with one line, not a traceback
        print(f"queueflow migrate: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print("queueflow migrate: the schema is at head")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
