"""Regenerate the generated pages of docs/: `python docs/generate.py` (or `make docs`).

- docs/cli.md: the `--help` of lshsql and of every command, rendered by click at a fixed width.
- docs/outputs.md: the schema tables between `<!-- schema: TABLE -->` and `<!-- /schema -->` markers,
  from lshsql/schemas.py; the prose around them is written by hand and kept as it is.

tests/test_docs.py renders both in memory and fails when a committed page differs.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
WIDTH = 100  # columns of the rendered help, whatever the terminal
SCHEMA_BLOCK = re.compile(r"(<!-- schema: (\w+) -->\n).*?(<!-- /schema -->)", re.S)


def command_help(name: str | None = None) -> str:
    """The help of `lshsql` (name None) or of `lshsql NAME`, as the terminal shows it at WIDTH columns."""
    import click
    import typer

    from lshsql.cli import app

    group = typer.main.get_command(app)
    root = click.Context(group, info_name="lshsql", terminal_width=WIDTH, max_content_width=WIDTH)
    if name is None:
        return group.get_help(root)
    command = group.get_command(root, name)
    ctx = click.Context(command, info_name=name, parent=root, terminal_width=WIDTH, max_content_width=WIDTH)
    return command.get_help(ctx)


def command_names() -> list[str]:
    """Every command in the order `lshsql --help` lists them."""
    import typer

    from lshsql.cli import app

    return list(typer.main.get_command(app).commands)


def cli_markdown() -> str:
    """docs/cli.md: one section per command with its help text."""
    parts = [
        "# Command-line reference",
        "",
        "<!-- Generated from the commands' --help by `python docs/generate.py` (make docs): do not edit. -->",
        "",
        "Every command's `--help`, as printed at 100 columns. What the options do in more depth:",
        "[commands.md](commands.md); the tables they write: [outputs.md](outputs.md).",
        "",
        "```text",
        command_help().rstrip(),
        "```",
    ]
    for name in command_names():
        parts += ["", f"## lshsql {name}", "", "```text", command_help(name).rstrip(), "```"]
    return "\n".join(parts) + "\n"


def outputs_markdown(text: str) -> str:
    """text (docs/outputs.md) with every schema block rendered again from lshsql/schemas.py."""
    from lshsql import schemas

    def render(match: re.Match) -> str:
        table = match.group(2)
        if table not in schemas.COLUMNS:
            raise SystemExit(f"docs/outputs.md: no table {table!r} in lshsql/schemas.py")
        return f"{match.group(1)}{schemas.markdown(table)}\n{match.group(3)}"

    return SCHEMA_BLOCK.sub(render, text)


def pages() -> dict[Path, str]:
    """Each generated page's path and its contents as the code says it should be."""
    outputs = DOCS / "outputs.md"
    return {
        DOCS / "cli.md": cli_markdown(),
        outputs: outputs_markdown(outputs.read_text(encoding="utf-8")),
    }


def main() -> None:
    for path, text in pages().items():
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))  # document this checkout, not an installed copy
    main()
