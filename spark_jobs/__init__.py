"""PySpark jobs over stompd's exported metric snapshots and message event logs.

Reads the files through their documented, versioned schema (README.md in this
directory) and imports nothing from the broker.

    schema.py         the schema's Spark structs and README.md's tables (the schema itself,
                      its names and a pure-Python writer and validator: ``export_format``)
    lines.py          listing the files, classifying lines: kept, corrupt, late, duplicate
    tables.py         the report tables as Spark DataFrames
    output.py         writing Parquet, CSV and files through Hadoop's FileSystem
    sections.py       what report.html shows of each table
    charts.py         matplotlib charts as inline SVG
    htmlpage.py       the page itself (HTML, inline CSS)
    report.py         run_report(): the whole job on a given SparkSession
    cli.py            stompd-report: builds the session, prints progress and the summary
"""
