"""The latency histogram: bucket arithmetic, precision, percentiles, merging."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from perf.histogram import BUCKETS, LINEAR_LIMIT, Histogram, bucket_bounds, bucket_index

values = st.integers(min_value=0, max_value=2**63 - 1)


@given(values)
def test_a_value_lies_in_its_bucket_and_the_bucket_is_narrow(value: int) -> None:
    index = bucket_index(value)
    assert 0 <= index < BUCKETS
    low, high = bucket_bounds(index)
    assert low <= value <= high
    assert high - low <= max(0, low // 128)  # never wider than 1/128 of its values (< 1 %)


def test_buckets_are_contiguous() -> None:
    previous_high = -1
    for index in range(bucket_index(2**63 - 1) + 1):
        low, high = bucket_bounds(index)
        assert low == previous_high + 1
        previous_high = high


def test_small_values_are_exact() -> None:
    hist = Histogram()
    for value in range(LINEAR_LIMIT):
        hist.record(value)
    assert hist.percentile(50) == LINEAR_LIMIT // 2 - 1
    assert hist.percentile(100) == hist.max == LINEAR_LIMIT - 1
    assert hist.min == 0


@given(st.lists(st.integers(min_value=0, max_value=10**12), min_size=1, max_size=300))
def test_percentiles_are_within_one_percent_of_the_exact_rank(samples: list[int]) -> None:
    hist = Histogram()
    for value in samples:
        hist.record(value)
    ordered = sorted(samples)
    for pct in (0.0, 50.0, 90.0, 99.0, 99.9, 100.0):
        rank = max(1, -(-len(ordered) * pct // 100))
        exact = ordered[int(rank) - 1]
        got = hist.percentile(pct)
        assert exact <= got <= max(exact + exact // 128, exact)
    assert hist.max == ordered[-1] and hist.min == ordered[0]


def test_merge_equals_recording_everything_in_one() -> None:
    rng = random.Random(4)
    data = [int(rng.expovariate(1 / 1e6)) for _ in range(5000)]
    whole, first, second = Histogram(), Histogram(), Histogram()
    for i, value in enumerate(data):
        whole.record(value)
        (first if i % 3 else second).record(value)
    first.merge(second)
    assert first == whole


def test_sparse_form_round_trips_through_json_keys() -> None:
    import json

    hist = Histogram()
    for value in (5, 1000, 123_456_789):
        hist.record(value)
    again = Histogram.from_sparse(json.loads(json.dumps(hist.to_sparse())))
    assert again == hist
    assert Histogram.from_sparse(Histogram().to_sparse()).total == 0


def test_negative_values_clamp_to_zero() -> None:
    hist = Histogram()
    hist.record(-5)
    assert (hist.min, hist.max, hist.total) == (0, 0, 1)
