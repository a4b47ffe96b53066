"""The browser assets the server serves from its own package, so no page needs a CDN: each copied unchanged from an
npm registry tarball at a pinned version, checked against its SHA-256, and committed (the wheel builds offline).

    python -m tools.vendor            # (`make vendor`) fetch every pinned tarball with `npm pack`, copy, verify

To move a package to another version: change its pin below, run `make vendor`, and put the new hashes it prints
into `ASSETS` (it refuses to leave a file whose hash is not the pinned one). `tests/dashboard/test_vendored.py`
checks the committed copies against `ASSETS`, and `VENDORED.md` beside them against this list.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

STATIC = Path(__file__).resolve().parent.parent / "server" / "queueflow" / "dashboard" / "static"


@dataclass(frozen=True)
class Asset:
    package: str
    """`name@version`, exactly as `npm pack` takes it."""
    source: str
    """The file's path inside the tarball's `package/` folder."""
    name: str
    """Its name under `server/queueflow/dashboard/static/`."""
    sha256: str


ASSETS = [
    Asset("htmx.org@2.0.11", "dist/htmx.min.js", "htmx.min.js",
          "d6fdc75f204e6bdefa99b69bf1e6d4ac69b8a364f77929f45c13476b4000f717"),
    Asset("redoc@2.5.4", "bundles/redoc.standalone.js", "redoc.standalone.js",
          "dcaf76612bc4a3fbcc923a8966dee2f6146a5f32e5ce1b6f02dd60cbbf89500b"),
    Asset("redoc@2.5.4", "bundles/redoc.standalone.js.LICENSE.txt", "redoc.standalone.js.LICENSE.txt",
          "eed602ec32e00b2b9df1984fbcc26a687b1b3193ec01961389c4b8439e6edf73"),
    Asset("swagger-ui-dist@5.35.0", "swagger-ui-bundle.js", "swagger-ui-bundle.js",
          "e6a898692f2d768e807c3ba4626068a69a2c5dd960dd6c76f3e4d3a3de180af2"),
    Asset("swagger-ui-dist@5.35.0", "swagger-ui-bundle.js.LICENSE.txt", "swagger-ui-bundle.js.LICENSE.txt",
          "37eb6e7e59aed57b2c1acf076574b818ea07b74265717e0bd67b59e0baf9abbb"),
    Asset("swagger-ui-dist@5.35.0", "swagger-ui.css", "swagger-ui.css",
          "5ed08757e53da3e026d6cbecc61fe5d43585c9560b302d534ad56692519a273d"),
    Asset("swagger-ui-dist@5.35.0", "LICENSE", "swagger-ui.LICENSE",
          "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"),
    Asset("swagger-ui-dist@5.35.0", "NOTICE", "swagger-ui.NOTICE",
          "0d20d1adef18aee3f40dd258172155521ce702ac445cb5f7b7d60ed32dad2fb2"),
]  # fmt: skip

OWN = ["VENDORED.md", "dashboard.css", "favicon.svg"]
"""QueueFlow's own files in the same folder."""


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fetch(package: str, into: Path) -> Path:
    """`npm pack package` (from the registry npm is configured with), unpacked; its `package/` folder."""
    into.mkdir(parents=True)
    subprocess.run(["npm", "pack", "--silent", package], cwd=into, check=True, capture_output=True)
    (tarball,) = into.glob("*.tgz")
    with tarfile.open(tarball) as archive:
        archive.extractall(into, filter="data")
    return into / "package"


def main() -> int:
    wrong = []
    with tempfile.TemporaryDirectory() as scratch:
        unpacked: dict[str, Path] = {}
        for asset in ASSETS:
            if asset.package not in unpacked:
                unpacked[asset.package] = fetch(asset.package, Path(scratch) / asset.package.replace("/", "_"))
            source = unpacked[asset.package] / asset.source
            if sha256(source) != asset.sha256:
                wrong.append(f"{asset.name}: {asset.package} {asset.source} has sha256 {sha256(source)}")
                continue
            shutil.copyfile(source, STATIC / asset.name)
            print(f"{asset.name} ← {asset.package} {asset.source}")
    if wrong:
        print("not copied, their hashes are not the pinned ones (update ASSETS if the pin moved):", file=sys.stderr)
        print("\n".join(wrong), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
