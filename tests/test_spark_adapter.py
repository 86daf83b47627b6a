"""Spark session defaults that do not need a JVM."""

from __future__ import annotations

import os

import pytest

from statectl.adapters.spark import default_shuffle_partitions


@pytest.mark.parametrize(
    "master, expected",
    [("local", 2), ("local[1]", 2), ("local[3]", 3), ("local[8,2]", 8), ("local[6, 1]", 6),
     ("spark://host:7077", 4), ("yarn", 4), ("local[x]", 4)],
)
def test_shuffle_partitions_follow_the_local_cores(master, expected):
    assert default_shuffle_partitions(master) == expected


def test_local_star_uses_the_cores_this_process_may_run_on():
    cores = len(os.sched_getaffinity(0))
    assert default_shuffle_partitions("local[*]") == max(2, cores)
