"""Issue 7's features on the shared handbook fixture (130 pages: 5 pages x 26 languages on one host):
cluster labels in readable words, members shown with titles and stored HTML, no mirror pair on a one-host
crawl, and the pages' cross-site canonical links kept out of url_aliases."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from lshsql import pipeline
from lshsql.engines import duckdb as db
from lshsql.params import Params
from lshsql.sources.extract import ExtractParams, extract
from lshsql.tools.explore import cluster_labels
from lshsql.tools.mirrors import mirrors
from lshsql.tools.show import cluster_members, stored_html
from tests.conftest import shared

RESOURCES = db.Resources(memory_limit="1GB", threads=2)


@pytest.mark.slow
def test_handbook_labels_members_and_aliases(tmp_path):
    crawl = shared("crawls", "fixture-handbook-neardup.warc.gz")
    extract([str(crawl)], tmp_path, ExtractParams(content=True), RESOURCES)
    pages = pq.read_table(tmp_path / "pages.parquet").to_pylist()
    canonical = [p for p in pages if p["canonical_url"]]
    assert canonical and all("debian-handbook.info" in p["canonical_url"] for p in canonical)
    assert pq.read_table(tmp_path / "url_aliases.parquet").num_rows == 0  # another site: a copy, not an alias
    pipeline.run(tmp_path, Params(), resources=RESOURCES)
    used = {p["url"] for p in pages if p["skip_reason"] is None}
    fetched_in: dict[int, int] = {}
    cluster_ids = {}
    for c in pq.read_table(tmp_path / "clusters.parquet").to_pylist():
        fetched_in[c["center_id"]] = fetched_in.get(c["center_id"], 0) + (c["url"] in used)
        cluster_ids[c["center_id"]] = c["cluster_id"]
    center_id = max(fetched_in, key=lambda c: (fetched_in[c], -c))  # the cluster of the most crawled pages
    biggest = {"center_id": center_id}
    assert fetched_in[center_id] >= 10  # translations of one page
    words = cluster_labels(tmp_path, [biggest["center_id"]])[biggest["center_id"]]
    surface = {row["word"] for row in pq.read_table(tmp_path / "surface_forms.parquet").to_pylist()}
    assert words and set(words) <= surface  # words read in the crawl, not stems
    members = cluster_members(tmp_path, cluster_ids[center_id])  # show takes the cluster_id
    fetched = members.to_pylist()
    fetched = [m for m in fetched if m["fetched"]]
    assert len(fetched) >= 10 and all(m["title"] and m["source_offset"] >= 0 for m in fetched)
    html = stored_html(tmp_path, fetched[0]["url"])
    assert fetched[0]["title"].split()[0] in html
    path, _ = mirrors(tmp_path, resources=RESOURCES)  # pairs of hosts sharing >= 2 clusters
    assert pq.read_table(path).num_rows == 0  # one crawled host; its link targets elsewhere share < 2
