"""The worker pool's garbage-collector setting: raised while pages are parsed, put back afterwards."""

from __future__ import annotations

import gc

import pytest

from lshsql.sources.workers import GC_YOUNG_THRESHOLD, fewer_collections


def test_fewer_collections_raises_the_young_threshold_and_puts_it_back():
    before = gc.get_threshold()
    with fewer_collections():
        assert gc.get_threshold() == (GC_YOUNG_THRESHOLD, *before[1:])
    assert gc.get_threshold() == before


def test_fewer_collections_puts_the_threshold_back_after_an_error():
    before = gc.get_threshold()
    with pytest.raises(KeyError), fewer_collections():
        raise KeyError("page")
    assert gc.get_threshold() == before
