"""The `queueflow` command."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="queueflow", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("demo", help="walk a few jobs through the engine on the in-memory store")
    args = parser.parse_args(argv)

    if args.command == "demo":
        from queueflow.demo import run_demo

        asyncio.run(run_demo())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
