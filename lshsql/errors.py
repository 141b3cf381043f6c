"""Errors that reach the user as one line: `lshsql: error: <message>` and a non-zero exit code."""


def one_line(error: BaseException | str, limit: int | None = None) -> str:
    """The text of an error on one line (each run of whitespace one space), cut to `limit` characters."""
    text = " ".join(str(error).split())
    return text if limit is None else text[:limit]


def duckdb_message(error: BaseException) -> str:
    """DuckDB's error on one line; running out of spill space says which limit and what to change, not
    DuckDB's advice (which names its PRAGMA). Here, not in engines/duckdb.py, because sqlfiles.py, below the
    engines, reports the errors of the statements it runs."""
    message = one_line(error)
    if "max_temp_directory_size" in message:
        return (
            "it needs more spill space than allowed (--max-spill; without it DuckDB's own limit, 90% of the "
            "free disk): raise --max-spill or free disk space, or raise --memory-limit so that it spills less"
        )
    return message


class LshsqlError(Exception):
    """Base of every error the CLI reports as one line; carries the process exit code."""

    exit_code = 1


class InputError(LshsqlError):
    """A crawl, file or table given by the user is missing, empty or not what it claims to be."""

    exit_code = 2


class ParamError(LshsqlError):
    """A parameter is out of range or inconsistent with others."""

    exit_code = 2


class Interrupted(LshsqlError):
    """The user stopped the command (Ctrl-C): exit code 130, as a shell gives a process ended by SIGINT."""

    exit_code = 130


class StageError(LshsqlError):
    """A pipeline stage failed (DuckDB error, schema mismatch, missing upstream output)."""

    exit_code = 3
