"""The options of the last run in a work folder, kept for the options not given again.

`lshsql run` and `lshsql stage` (and a notebook that wants the same behaviour) ask only for what changes:
params_for and extract_params_for fill in the rest from the work folder's manifest, as the last run was
asked for it, and fall back to the defaults of Params and ExtractParams in a new folder.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lshsql import manifest
from lshsql.errors import ParamError
from lshsql.params import Params

if TYPE_CHECKING:
    from lshsql.sources.extract import ExtractParams

# what the planner chooses from; a new value lets it choose k and l again
PLANNER_INPUTS = ("threshold", "recall")


def params_for(work: str | Path, **given: Any) -> Params:
    """Stage parameters: the ones given (a value of None counts as not given), else the ones the last run in
    `work` was asked for, else Params' defaults. A new threshold or recall drops the k and l the planner
    chose for the old one, so that it chooses again; giving recall with both k and l is a ParamError.

    Example: params_for("work", threshold=0.4) -> the last run's parameters with threshold 0.4.
    """
    unknown = set(given) - {f.name for f in fields(Params)}
    if unknown:
        raise TypeError(f"params_for() got unknown parameters: {', '.join(sorted(unknown))}")
    saved = manifest.read(work).get("requested_params", {})
    given = {name: value for name, value in given.items() if value is not None}
    if "recall" in given and "k" in given and "l" in given:
        raise ParamError("--recall is the planner's: give it or both -k and -l, not all three")
    if any(name in given and given[name] != saved.get(name) for name in PLANNER_INPUTS):
        saved = {name: value for name, value in saved.items() if name not in ("k", "l")}
    return Params(**{**saved, **given})


def extract_params_for(work: str | Path, **given: Any) -> ExtractParams:
    """Extraction options: the ones given (None: not given), else those of the folder's last extraction
    (its stopword words included), else ExtractParams' defaults (window 8, language en, 16 buckets, 32 MB
    pages, 10,000 links a page). A folder made by `ingest` keeps none: its options are not extract's.
    `extra_stopwords` is a collection of words; batch_records is never kept (it does not change the rows).

    Example: extract_params_for("work", window=4) -> the last extraction's options with window 4.
    """
    from lshsql.sources.extract import ExtractParams  # lxml and Arrow: only for a crawl

    names = {f.name for f in fields(ExtractParams)}
    unknown = set(given) - names
    if unknown:
        raise TypeError(f"extract_params_for() got unknown parameters: {', '.join(sorted(unknown))}")
    entry = manifest.read(work)["stages"].get("extract", {})
    if entry.get("kind") == "documents":  # made by ingest, whose options are not extract's
        entry = {}
    kept = names - {"extra_stopwords", "batch_records"}
    options = {name: value for name, value in entry.get("params", {}).items() if name in kept}
    options |= {name: value for name, value in given.items() if value is not None}
    if options.get("extra_stopwords") is None:
        options["extra_stopwords"] = entry.get("extra_stopword_words", ())
    options["extra_stopwords"] = frozenset(options["extra_stopwords"])
    return ExtractParams(**options)
