"""term_counts on hand-made fragments: URLs as written, alias URLs mapped to their targets, hosts and
registered domains as units (--unit)."""

from __future__ import annotations

import pytest

from lshsql.errors import ParamError
from lshsql.params import Params
from tests.conftest import run_stage


def fragment(url: str, *terms: str) -> dict:
    return {
        "url": url,
        "kind": "anchor",
        "source_url": "https://src.example/",
        "position": 0,
        "terms": list(terms),
    }


FRAGMENTS = [
    fragment("https://a.example.com/x", "apt", "apt"),
    fragment("https://a.example.com/old", "apt", "debian"),  # an alias of /x
    fragment("http://b.example.com:8080/y", "apt"),
    fragment("https://example.co.uk/z", "tea"),
    fragment("https://shop.example.co.uk/", "tea", "cake"),
]
ALIASES = [{"alias_url": "https://a.example.com/old", "target_url": "https://a.example.com/x"}]


def counts(rows: list[dict]) -> dict[tuple[str, str], float]:
    return {(r["url"], r["term"]): r["tf"] for r in rows}


def test_urls_as_written_without_aliases(tmp_path):
    rows = run_stage(
        tmp_path, "term_counts", Params(aliases=False), {"fragments": FRAGMENTS, "url_aliases": ALIASES}
    )
    assert counts(rows)[("https://a.example.com/x", "apt")] == 2.0
    assert counts(rows)[("https://a.example.com/old", "debian")] == 1.0
    assert len(rows) == 7


def test_alias_fragments_describe_their_target(tmp_path):
    rows = run_stage(tmp_path, "term_counts", Params(), {"fragments": FRAGMENTS, "url_aliases": ALIASES})
    got = counts(rows)
    assert (
        got[("https://a.example.com/x", "apt")] == 3.0 and got[("https://a.example.com/x", "debian")] == 1.0
    )
    assert not any(url == "https://a.example.com/old" for url, _ in got)
    assert len(rows) == 6


def test_a_work_folder_without_url_aliases_still_runs(tmp_path):
    rows = run_stage(tmp_path, "term_counts", Params(), {"fragments": FRAGMENTS})
    assert len(rows) == 7


@pytest.mark.parametrize(
    ("unit", "expected"),
    [
        (
            "host",
            {
                ("a.example.com", "apt"): 3.0,
                ("a.example.com", "debian"): 1.0,
                ("b.example.com", "apt"): 1.0,  # no port, no scheme
                ("example.co.uk", "tea"): 1.0,
                ("shop.example.co.uk", "tea"): 1.0,
                ("shop.example.co.uk", "cake"): 1.0,
            },
        ),
        (
            "domain",  # the public suffix co.uk keeps example.co.uk whole; a and b share example.com
            {
                ("example.com", "apt"): 4.0,
                ("example.com", "debian"): 1.0,
                ("example.co.uk", "tea"): 2.0,
                ("example.co.uk", "cake"): 1.0,
            },
        ),
    ],
)
def test_units_group_the_fragments_of_a_host_or_registered_domain(tmp_path, unit, expected):
    rows = run_stage(
        tmp_path, "term_counts", Params(unit=unit), {"fragments": FRAGMENTS, "url_aliases": ALIASES}
    )
    assert counts(rows) == expected


def test_unit_is_checked_and_refused_for_a_bags_table(tmp_path):
    from lshsql import pipeline
    from tests.conftest import write_table

    with pytest.raises(ParamError, match="unit must be one of url, host, domain"):
        Params(unit="site")
    bags = write_table(tmp_path / "bags.parquet", [{"url": "https://a.example/", "term": "apt"}])
    with pytest.raises(ParamError, match="a bags table is used as given"):
        pipeline.run(tmp_path / "w", Params(unit="host"), bags=bags)
