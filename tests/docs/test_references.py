"""What the docs point at exists: every `queueflow serve` flag is in README.md's flag list, and no file cites a
design document that is not in the repository (the contract is spec/openapi.json; the guide is README.md)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from queueflow.cli import main

ROOT = Path(__file__).resolve().parents[2]
DESIGN_DOCS = ["API" + ".md", "DESIGN" + ".md", "STYLE" + ".md"]  # spelled apart: this file does not cite them


def test_every_serve_flag_is_in_the_readmes_flag_list(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    flags = set(re.findall(r"--[a-z][a-z-]+", capsys.readouterr().out)) - {"--help"}
    assert "--task-concurrency" in flags
    configuration = (ROOT / "README.md").read_text().split("### Configuration", 1)[1].split("\n## ", 1)[0]
    assert sorted(flag for flag in flags if f"`{flag}" not in configuration) == []


def test_no_file_cites_a_document_the_repository_does_not_have() -> None:
    missing = [document for document in DESIGN_DOCS if not (ROOT / document).exists()]
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    citing = []
    for name in tracked:
        path = ROOT / name
        if path.suffix not in (".py", ".ts", ".md", ".html", ".toml") or not path.is_file():
            continue
        text = path.read_text(errors="replace")
        citing += [f"{name}: {document}" for document in missing if document in text]
    assert citing == []
