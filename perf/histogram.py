"""A log-linear latency histogram in the spirit of HdrHistogram.

Values are non-negative integers (the tool records nanoseconds).  Below 256 every value
has its own bucket; above, each power of two is split into 128 equal buckets, so a
bucket is never wider than 1/128 (0.8 %) of the values it holds.  That covers the whole
int64 range in 64 * 128 buckets: memory is fixed whatever the run length, and two
histograms merge by adding their counts, which is how worker processes report to the
parent.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SUB_BITS = 7
SUB_COUNT = 1 << SUB_BITS  # buckets per power of two above the linear range
LINEAR_LIMIT = SUB_COUNT << 1  # values below this are counted exactly
BUCKETS = 64 * SUB_COUNT


def bucket_index(value: int) -> int:
    """Bucket of `value`: its top 8 significant bits, plus how far they were shifted."""
    shift = value.bit_length() - (SUB_BITS + 1)
    if shift <= 0:
        return value
    return (shift << SUB_BITS) + (value >> shift)


def bucket_bounds(index: int) -> tuple[int, int]:
    """Lowest and highest value that land in bucket `index` (inverse of bucket_index)."""
    if index < LINEAR_LIMIT:
        return index, index
    shift = (index >> SUB_BITS) - 1
    low = ((index & (SUB_COUNT - 1)) + SUB_COUNT) << shift
    return low, low + (1 << shift) - 1


@dataclass(slots=True)
class Histogram:
    counts: list[int] = field(default_factory=lambda: [0] * BUCKETS)
    total: int = 0
    min: int = 0
    max: int = 0

    def record(self, value: int) -> None:
        if value < 0:
            # A negative latency can only come from clock skew between hosts; the tool's
            # producers and consumers share CLOCK_MONOTONIC, so clamp rather than fail.
            value = 0
        shift = value.bit_length() - (SUB_BITS + 1)
        self.counts[value if shift <= 0 else (shift << SUB_BITS) + (value >> shift)] += 1
        if self.total == 0 or value < self.min:
            self.min = value
        if value > self.max:
            self.max = value
        self.total += 1

    def merge(self, other: Histogram) -> None:
        if other.total == 0:
            return
        self.counts = [a + b for a, b in zip(self.counts, other.counts, strict=True)]
        self.min = other.min if self.total == 0 else min(self.min, other.min)
        self.max = max(self.max, other.max)
        self.total += other.total

    def percentile(self, pct: float) -> int:
        """Highest value equivalent to the `pct`-th percentile (HdrHistogram's convention).

        The result is the top of the bucket holding that rank, capped by the exact
        maximum, so it never understates a latency by more than one bucket width.
        """
        if self.total == 0:
            return 0
        # Rank of the value, 1-based: at least one sample, even for pct = 0.
        rank = max(1, min(self.total, -(-self.total * pct // 100)))
        seen = 0
        for index, count in enumerate(self.counts):
            seen += count
            if seen >= rank:
                return min(bucket_bounds(index)[1], self.max)
        return self.max  # unreachable when counts and total agree

    def mean(self) -> float:
        if self.total == 0:
            return 0.0
        acc = 0
        for index, count in enumerate(self.counts):
            if count:
                low, high = bucket_bounds(index)
                acc += count * (low + high) // 2
        return acc / self.total

    # Sparse form for pickling between processes and for JSON: most buckets are empty.
    def to_sparse(self) -> dict[str, object]:
        return {
            "total": self.total,
            "min": self.min,
            "max": self.max,
            "buckets": {i: c for i, c in enumerate(self.counts) if c},
        }

    @classmethod
    def from_sparse(cls, data: dict[str, object]) -> Histogram:
        hist = cls()
        buckets = data["buckets"]
        assert isinstance(buckets, dict)
        for index, count in buckets.items():
            hist.counts[int(index)] = int(count)
        total, low, high = data["total"], data["min"], data["max"]
        assert isinstance(total, int) and isinstance(low, int) and isinstance(high, int)
        hist.total, hist.min, hist.max = total, low, high
        return hist
