"""The notebook of examples/ runs as a reader runs it: every code cell in order, in one namespace, in a
folder holding its data."""

from __future__ import annotations

import json
import shutil

import pyarrow as pa

from tests.conftest import REPO

EXAMPLES = REPO / "examples"


def test_dedup_notebook_runs(tmp_path, monkeypatch, capsys):
    notebook = json.loads((EXAMPLES / "dedup.ipynb").read_text(encoding="utf-8"))
    shutil.copy(EXAMPLES / "reuters-000.jsonl.gz", tmp_path)
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            exec(compile("".join(cell["source"]), "dedup.ipynb", "exec"), namespace)  # noqa: S102
    assert isinstance(namespace["kept"], pa.Table) and namespace["kept"].num_rows == 899
    assert len(namespace["removed"]) == 26 and namespace["removed"]["similarity"].min() >= 0.7
    assert "899 of 925 stories kept" in capsys.readouterr().out
    assert isinstance(namespace["titles"], pa.Table) and namespace["titles"].num_rows == 5
    # the kept stories hold no pair at 0.7, so none at 0.9 either
    assert namespace["strict"].num_rows == namespace["kept"].num_rows
