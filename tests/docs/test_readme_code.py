"""Every code block of README.md and the two SDK READMEs is either a complete program or marked as a fragment
(`<!-- fragment -->` on the line before it), so docs that cannot run fail CI (issue 17, item 8):

- a Python program compiles as a script (no `await` outside a function) and names nothing it does not define;
  a fragment compiles with top-level `await` allowed;
- README.md's Python programs run, here, as written (they use the engine in-process, or, if they read
  `DATABASE_URL`, a migrated database of the test session's own; the SDK README's programs run against a live
  server in `tests/e2e/test_sdk_readme.py`);
- every TypeScript block type-checks with the SDK's compiler settings (`tsc --noEmit`, strict) against the SDK's
  source, and every JavaScript block parses (`node --check`; the package test runs the quick start, and
  `sdks/typescript/test/readme.test.ts` runs the TypeScript programs against a live server);
- every shell block parses (`bash -n`), and README.md's curl calls run (`test_readme_curl.py`);
- every SQL block is the psql example `tests/postgres/test_readme_sql_enqueue.py` runs on a migrated database;
- every block names its language.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from queueflow.stores.postgres.url import asyncpg_dsn

ROOT = Path(__file__).resolve().parents[2]
SDK = ROOT / "sdks" / "typescript"
READMES = [ROOT / "README.md", ROOT / "sdks" / "python" / "README.md", SDK / "README.md"]
BLOCK = re.compile(r"^(<!-- fragment -->\n)?```(\w*)\n(.*?)^```$", re.DOTALL | re.MULTILINE)
RUFF = Path(sys.executable).parent / "ruff"


@dataclass(frozen=True)
class Block:
    readme: Path
    line: int
    language: str
    code: str
    fragment: bool

    @property
    def name(self) -> str:
        return f"{self.readme.relative_to(ROOT)}:{self.line}"


def every_block(readme: Path) -> list[Block]:
    text = readme.read_text()
    return [
        Block(
            readme, text.count("\n", 0, match.start(2)) + 1, match.group(2), match.group(3), match.group(1) is not None
        )
        for match in BLOCK.finditer(text)
    ]


def blocks(language: str) -> list[Block]:
    found = [block for readme in READMES for block in every_block(readme)]
    assert found, "no code blocks found: has the fence syntax changed?"
    return [block for block in found if block.language == language]


def ids(found: list[Block]) -> list[str]:
    return [block.name for block in found]


PYTHON = blocks("python")


@pytest.mark.parametrize("block", PYTHON, ids=ids(PYTHON))
def test_a_python_block_is_a_program_or_a_marked_fragment(block: Block) -> None:
    if block.fragment:
        compile(block.code, block.name, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        return
    try:
        compile(block.code, block.name, "exec")
    except SyntaxError as exc:
        pytest.fail(f"{block.name} is not a program ({exc.msg}, line {exc.lineno}): fix it or mark it a fragment")
    undefined = subprocess.run(
        [RUFF, "check", "--isolated", "--select", "F821,F822,F823", "--output-format", "concise", "-"],
        input=block.code, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert undefined.returncode == 0, f"{block.name} uses names it never defines:\n{undefined.stdout}"


RUNNABLE = [block for block in PYTHON if block.readme == ROOT / "README.md" and not block.fragment]


@pytest.mark.parametrize("block", RUNNABLE, ids=ids(RUNNABLE))
def test_a_readme_program_runs_as_written(block: Block, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    env = dict(os.environ)
    if "DATABASE_URL" in block.code:  # it says what it needs: a database `queueflow migrate` set up
        env["DATABASE_URL"] = asyncpg_dsn(request.getfixturevalue("postgres_url"))
    done = subprocess.run(
        [sys.executable, "-c", block.code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, f"{block.name}:\n{done.stderr}"
    # A `print(...)  # shown: why` prints what its comment shows.
    for comment in re.findall(r"print\(.*\)  # (.*)", block.code):
        assert comment.split(": ")[0] in done.stdout, (comment, done.stdout)


def test_the_typescript_blocks_type_check_against_the_sdk() -> None:
    typescript = blocks("ts")
    assert typescript
    tsc = SDK / "node_modules" / ".bin" / "tsc"
    assert tsc.exists(), "run `make sdk-typescript` (npm ci in sdks/typescript) first"
    # Inside the SDK's folder, so that its node_modules (openapi-fetch, @types/node) resolve as for its own code.
    with tempfile.TemporaryDirectory(dir=SDK, prefix=".readme-") as scratch:
        folder = Path(scratch)
        for index, block in enumerate(typescript):
            (folder / f"block{index}.mts").write_text(f"// {block.name}\n{block.code}")
        (folder / "tsconfig.json").write_text(
            '{"extends": "../tsconfig.json", "compilerOptions": {"noEmit": true, "sourceMap": false,'
            ' "paths": {"@queueflow/client": ["../src/index.ts"]}}, "include": ["*.mts"]}'
        )
        done = subprocess.run([tsc, "-p", folder], capture_output=True, text=True, timeout=300, check=False)
        mapping = {f"block{index}.mts": block.name for index, block in enumerate(typescript)}
        report = re.sub(r"[\w./-]*(block\d+\.mts)", lambda found: mapping[found.group(1)], done.stdout)
    assert done.returncode == 0, f"a TypeScript block of a README does not compile:\n{report}"


def test_the_javascript_blocks_parse() -> None:
    javascript = blocks("js")
    assert javascript
    node = shutil.which("node")
    assert node, "Node 20+ is needed for the TypeScript SDK"
    with tempfile.TemporaryDirectory() as scratch:
        for index, block in enumerate(javascript):
            path = Path(scratch) / f"block{index}.mjs"
            path.write_text(block.code)
            done = subprocess.run([node, "--check", path], capture_output=True, text=True, check=False)
            assert done.returncode == 0, f"{block.name}:\n{done.stderr}"


def test_the_shell_blocks_parse() -> None:
    shell = blocks("sh") + blocks("bash")
    assert shell
    for block in shell:
        done = subprocess.run(["bash", "-n"], input=block.code, capture_output=True, text=True, check=False)
        assert done.returncode == 0, f"{block.name}:\n{done.stderr}"


def test_every_block_names_its_language() -> None:
    languages = {block.language for readme in READMES for block in every_block(readme)}
    assert languages <= {"python", "ts", "js", "sh", "bash", "sql", "text"}, languages


def test_every_sql_block_is_the_one_the_postgres_tests_run() -> None:
    from tests.postgres.test_readme_sql_enqueue import block as sql_example

    assert [block.code for block in blocks("sql")] == [sql_example("sql")], (
        "tests/postgres/test_readme_sql_enqueue.py runs README.md's one psql example: run a new SQL block there too"
    )
