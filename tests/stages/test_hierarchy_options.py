"""`lshsql hierarchy` keeps the options of the folder's last tree for those not given again, as `run` does."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from lshsql import manifest
from lshsql.cli import app
from lshsql.errors import ParamError
from lshsql.tools.hierarchy import HierarchyParams, cut, hierarchy_params_for
from tests.stages.test_hierarchy import RESOURCES, _planted_corpus, signatures_of


def test_options_not_given_are_the_last_trees(tmp_path):
    assert hierarchy_params_for(tmp_path) == HierarchyParams()  # a new folder: the defaults
    work = tmp_path / "work"
    work.mkdir()
    manifest.record_stage(work, "hierarchy", {"params": HierarchyParams(threshold=0.2, r_min=4).to_json()})
    assert hierarchy_params_for(work, method="exact") == HierarchyParams(
        threshold=0.2, r_min=4, method="exact"
    )
    assert hierarchy_params_for(work, threshold=0.5).threshold == 0.5
    with pytest.raises(ParamError, match="threshold must be in"):
        hierarchy_params_for(work, threshold=1.5)


def test_a_second_hierarchy_keeps_t_so_a_low_cut_still_works(tmp_path):
    """The bug: `hierarchy --threshold 0.2`, then `hierarchy --r-start 8` rebuilt the tree at the default 0.3,
    and `cut --threshold 0.25` failed with 'tree holds merges >= 0.3'."""
    _planted_corpus(tmp_path / "bags.parquet")
    signatures_of(tmp_path / "work", tmp_path / "bags.parquet")
    work = str(tmp_path / "work")
    runner = CliRunner()
    for args in (["--threshold", "0.2"], ["--r-start", "8"]):
        result = runner.invoke(app, ["hierarchy", "--work", work, "--quiet", "--memory-limit", "1GB", *args])
        assert result.exit_code == 0, result.output
    entry = manifest.read(work)["stages"]["hierarchy"]["params"]
    assert entry["threshold"] == 0.2 and entry["r_start"] == 8
    path, counts = cut(work, 0.25, RESOURCES)
    assert path.exists() and counts["clusters"] >= 1
