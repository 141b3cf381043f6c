"""mirrors (sql/90_mirrors.sql): page clusters aggregated to pairs of hosts, on hand-made clusters."""

from __future__ import annotations

import pytest

from lshsql import schemas
from lshsql.errors import InputError, ParamError
from lshsql.tools.explore import query
from lshsql.tools.mirrors import likely_mirrors, mirrors
from tests.conftest import write_table

# (url, center_id, size) of hand-made clusters; url_id and center are filled in below.
CLUSTERS = [
    # a and b share clusters 1, 4 and 6; c is in 1 only
    ("http://a.example/1", 1, 3),
    ("http://b.example/1", 1, 3),
    ("http://c.example/x", 1, 3),
    ("http://a.example/2", 4, 2),
    ("https://user:pw@b.example:8443/2", 4, 2),  # userinfo and port are not part of the host
    ("http://a.example/3", 6, 2),
    ("http://B.EXAMPLE/3", 6, 2),  # a URL kept raw (not canonical): the host is lowercased
    ("http://a.example/4", 8, 2),  # a cluster of one host's pages counts in a's set, shared by no one
    ("http://a.example/5", 8, 2),
    ("http://b.example/9", 10, 1),  # singletons say nothing about other hosts: ignored
    ("http://d.example/", 11, 1),  # d: a host in no cluster of size >= 2
    ("http://e.example/1", 12, 2),  # e: a host in a cluster of its own pages only
    ("http://e.example/2", 12, 2),
    ("13", 14, 2),  # document ids from `lshsql ingest` have no host
    ("14", 14, 2),
    ("http://[2001:db8::1]:8080/p", 16, 2),  # an IPv6 host keeps its brackets, loses its port
    ("http://f.example/q", 16, 2),
]

# a: {1, 4, 6, 8}, b: {1, 4, 6}, c: {1}, e: {12}, [2001:db8::1]: {16}, f: {16}
EXPECTED = [
    ("[2001:db8::1]", "f.example", 1, 1, 1, 1.0),
    ("a.example", "b.example", 3, 4, 3, 3 / 4),
    ("b.example", "c.example", 1, 3, 1, 1 / 3),
    ("a.example", "c.example", 1, 4, 1, 1 / 4),
]


def write_clusters(path, rows=CLUSTERS):
    ids = {url: n for n, url in enumerate(sorted(url for url, _, _ in rows), start=1)}
    centers = {}
    for url, center_id, _ in rows:
        centers.setdefault(center_id, url)
    table = [
        {
            "url": url,
            "url_id": ids[url],
            "center": centers[center_id],
            "center_id": center_id,
            "size": size,
            "is_center": url == centers[center_id],
        }
        for url, center_id, size in rows
    ]
    return write_table(path, table, schemas.schema("clusters"))


def rows_of(work, **options):
    path, counts = mirrors(work, **options)
    got = [
        tuple(row.values()) for row in query(work, "select * from mirrors").to_pylist()
    ]  # the catalogue sees the new table
    assert counts["rows"] == len(got)
    return [(*row[:5], pytest.approx(row[5])) for row in got]


def test_pairs_of_hosts_with_the_jaccard_of_their_cluster_sets(tmp_path):
    write_clusters(tmp_path / "clusters.parquet")
    assert rows_of(tmp_path, min_shared=1) == EXPECTED
    schemas.validate(tmp_path / "mirrors.parquet", "mirrors")


def test_min_shared_drops_pairs_sharing_fewer_clusters(tmp_path):
    write_clusters(tmp_path / "clusters.parquet")
    assert rows_of(tmp_path) == EXPECTED[1:2]  # the default: 2
    assert rows_of(tmp_path, min_shared=3) == EXPECTED[1:2]
    assert rows_of(tmp_path, min_shared=4) == []
    with pytest.raises(ParamError):
        mirrors(tmp_path, min_shared=0)


def test_likely_mirrors_are_the_pairs_above_a_jaccard(tmp_path):
    write_clusters(tmp_path / "clusters.parquet")
    mirrors(tmp_path, min_shared=1)
    table = likely_mirrors(tmp_path, min_jaccard=0.3)
    assert table.column_names == [name for name, _, _ in schemas.COLUMNS["mirrors"]]
    hosts = list(zip(table["host_a"].to_pylist(), table["host_b"].to_pylist(), strict=True))
    assert hosts == [r[:2] for r in EXPECTED[:3]]
    assert likely_mirrors(tmp_path, min_jaccard=0.3, limit=1).num_rows == 1
    first = likely_mirrors(tmp_path, min_jaccard=1.0).to_pylist()[0]
    assert (first["host_a"], first["host_b"]) == EXPECTED[0][:2]


def test_from_cut_reads_the_cut(tmp_path):
    write_clusters(tmp_path / "clusters.parquet")
    write_clusters(tmp_path / "cut.parquet", [("http://x.example/", 1, 2), ("http://y.example/", 1, 2)])
    assert rows_of(tmp_path, from_cut=True, min_shared=1) == [("x.example", "y.example", 1, 1, 1, 1.0)]


def test_missing_clusters_are_a_one_line_error(tmp_path):
    with pytest.raises(InputError, match="no clusters.parquet yet"):
        mirrors(tmp_path)
    with pytest.raises(InputError, match="no cut.parquet yet"):
        mirrors(tmp_path, from_cut=True)
    with pytest.raises(InputError, match="no mirrors.parquet yet"):
        likely_mirrors(tmp_path)


def test_mirrors_and_show_refuse_clusters_of_hosts(tmp_path):
    """With --unit host the clusters' members are host names: no URL to find a host or a page by."""
    import json

    from lshsql.errors import InputError
    from lshsql.tools.mirrors import mirrors
    from lshsql.tools.show import cluster_members

    (tmp_path / "clusters.parquet").write_bytes(b"")  # present; the manifest says what it holds
    (tmp_path / "manifest.json").write_text(json.dumps({"stages": {}, "params": {"unit": "host"}}))
    with pytest.raises(InputError, match="--unit host, not of URLs"):
        mirrors(tmp_path)
    with pytest.raises(InputError, match="--unit host, not of URLs"):
        cluster_members(tmp_path, 1)
