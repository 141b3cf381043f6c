"""The run manifest, `DIR/manifest.json`: per stage its parameters, inputs, versions, counts and timing."""

from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from lshsql.errors import InputError, one_line

MANIFEST = "manifest.json"


def versions() -> dict[str, str]:
    """Versions that can change outputs; recorded so a result can be traced to its software."""
    return dict(_installed_versions())


@functools.cache
def _installed_versions() -> tuple[tuple[str, str], ...]:
    """Looked up once per process: every stage records the versions, and reading the packages' metadata
    is slow."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for package in ("lshsql", "duckdb", "pyarrow", "lxml", "nltk", "warcio", "w3lib", "tldextract", "xxhash"):
        try:
            out[package] = version(package)
        except PackageNotFoundError:
            out[package] = "not installed"
    return tuple(out.items())


def fingerprint(data: Any) -> str:
    """16 hex digits of the sha256 of `data` as sorted JSON (values JSON lacks as their str): what a
    stage's or an extraction's output depends on, compared with the one recorded to skip work."""
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]


def file_identity(path: str | Path) -> str | None:
    """A digest of a Parquet file's size and footer (its schema, row groups and their statistics): the
    table a stage wrote told apart from one put in its place, without reading the data. None when the file
    is missing or not whole Parquet (truncated, say)."""
    try:
        with open(path, "rb") as file:
            size = file.seek(0, os.SEEK_END)
            if size < 12:
                return None
            file.seek(size - 8)
            tail = file.read(8)
            length = int.from_bytes(tail[:4], "little")
            if tail[4:] != b"PAR1" or length > size - 12:
                return None
            file.seek(size - 8 - length)
            footer = file.read(length)
    except (FileNotFoundError, IsADirectoryError):
        return None
    return hashlib.sha256(size.to_bytes(8, "little") + footer).hexdigest()[:16]


def read(work: str | Path) -> dict[str, Any]:
    """The manifest ({"stages": {}} where there is none); InputError for a damaged one."""
    path = Path(work) / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {"stages": {}}
    except (OSError, ValueError) as e:
        raise InputError(f"{path} is damaged ({_reason(e)}); rerun with --force") from None
    if not isinstance(data, dict) or not isinstance(data.get("stages"), dict):
        raise InputError(f"{path} is damaged (not a manifest); rerun with --force")
    return data


def _reason(error: Exception) -> str:
    if isinstance(error, OSError):
        return error.strerror or str(error)
    return one_line(error)


def set_aside_if_damaged(work: str | Path) -> None:
    """--force on a folder whose manifest is damaged: keep it as manifest.json.damaged and start afresh."""
    path = Path(work) / MANIFEST
    try:
        read(work)
    except InputError:
        os.replace(path, path.with_name(MANIFEST + ".damaged"))


def record_stage(work: str | Path, stage: str, entry: dict[str, Any]) -> None:
    """Store one stage's entry, replacing an older one."""
    data = read(work)
    data["versions"] = versions()
    data["stages"][stage] = entry
    write(work, data)


def write(work: str | Path, data: dict[str, Any]) -> None:
    """Write the whole manifest atomically (a crash never leaves half a file)."""
    path = Path(work) / MANIFEST
    tmp = path.with_name(f"{MANIFEST}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)
