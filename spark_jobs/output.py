"""Where the report goes: Parquet and CSV tables and plain files, through Hadoop's FileSystem.

``OUT`` may be a local path or any Hadoop URI: Spark writes the tables, and the driver
writes ``report.html`` and ``summary.json`` through the same FileSystem API, so a report
on ``hdfs://`` lands next to its tables.

    OUT/report.html            the human report, charts inline (SVG)
    OUT/summary.json           the --json object
    OUT/parquet/NAME/          one Parquet table per report table (Spark's directory layout)
    OUT/csv/NAME.csv           the same table as one CSV file with a header line
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark import StorageLevel
from pyspark.sql import functions as F

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pyspark.sql import DataFrame, SparkSession


class Output:
    def __init__(self, spark: SparkSession, root: str) -> None:
        self.spark = spark
        self.cached: list[DataFrame] = []
        self.root = root.rstrip("/") or "/"
        self._jvm: Any = spark.sparkContext._jvm
        conf = spark.sparkContext._jsc.hadoopConfiguration()
        self._fs: Any = self._path(self.root).getFileSystem(conf)
        # No .crc files next to the report on a local disk: Hadoop's checksums are for its own readers.
        self._fs.setWriteChecksum(False)
        self._fs.mkdirs(self._path(self.root))

    def _path(self, uri: str) -> Any:
        return self._jvm.org.apache.hadoop.fs.Path(uri)

    def uri(self, relative: str) -> str:
        return f"{self.root}/{relative}"

    def table(self, name: str, frame: DataFrame, order: Sequence[str] = ()) -> DataFrame:
        """Write ``frame`` as ``parquet/NAME`` and ``csv/NAME.csv``, sorted by ``order``
        (``-column``: descending); return it, cached, for the report page.

        One file per table: the rows are gathered into one partition and sorted there,
        which costs no range-partitioning pass (tables are aggregates, small next to the
        event log).
        """
        single = frame.coalesce(1)
        if order:
            single = single.sortWithinPartitions(
                *(F.desc(c[1:]) if c.startswith("-") else F.asc(c) for c in order)
            )
        table = single.persist(StorageLevel.MEMORY_AND_DISK_DESER)
        self.cached.append(table)
        table.write.mode("overwrite").parquet(self.uri(f"parquet/{name}"))
        staging = self.uri(f"csv/.{name}.tmp")
        table.write.mode("overwrite").option("header", True).csv(staging)
        parts = [
            s.getPath()
            for s in self._fs.listStatus(self._path(staging))
            if s.getPath().getName().startswith("part-")
        ]
        target = self._path(self.uri(f"csv/{name}.csv"))
        self._fs.delete(target, False)
        if parts:
            self._fs.rename(parts[0], target)
            self._fs.delete(self._path(self.uri(f"csv/.{name}.csv.crc")), False)
        else:  # Spark writes no part file for an empty frame: a header line still tells the columns
            self.text(f"csv/{name}.csv", ",".join(table.columns) + "\n")
        self._fs.delete(self._path(staging), True)
        return table

    def release(self) -> None:
        for table in self.cached:
            table.unpersist()
        self.cached.clear()

    def text(self, relative: str, content: str) -> str:
        uri = self.uri(relative)
        stream = self._fs.create(self._path(uri), True)
        try:
            stream.write(bytearray(content.encode()))
        finally:
            stream.close()
        return uri
