"""Errors that reach the user as one line: `lshsql: error: <message>` and a non-zero exit code."""


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
