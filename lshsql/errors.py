"""Errors that reach the user as one line: `lshsql: error: <message>` and a non-zero exit code."""


def one_line(error: BaseException | str, limit: int | None = None) -> str:
    """The text of an error on one line (each run of whitespace one space), cut to `limit` characters."""
    text = " ".join(str(error).split())
    return text if limit is None else text[:limit]


class LshsqlError(Exception):
    """Base of every error the CLI reports as one line; carries the process exit code."""

    exit_code = 1


class InputError(LshsqlError):
    """A crawl, file or table given by the user is missing, empty or not what it claims to be."""

    exit_code = 2


class ParamError(LshsqlError):
    """A parameter is out of range or inconsistent with others."""

    exit_code = 2


class StageError(LshsqlError):
    """A pipeline stage failed (DuckDB error, schema mismatch, missing upstream output)."""

    exit_code = 3
