"""The export schema as the Spark job needs it (``export_format.schema`` is the schema):
each kind's Spark struct, and README.md's field tables, generated
(``python -m spark_jobs.schema [--update-readme]``; a test checks they agree).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from export_format.schema import (
    ALWAYS,
    CAUSES,
    EVENT_DOCS,
    EVENTS,
    FIELDS,
    KINDS,
    OLDEST_VERSION,
    Field,
    FieldType,
    Kind,
)

if TYPE_CHECKING:
    from pyspark.sql.types import StructType


def spark_struct(kind: Kind, corrupt_column: str | None = None) -> StructType:
    """The Spark schema of a line (every field nullable: required-ness is checked apart)."""
    from pyspark.sql import types as t

    spark_types: dict[FieldType, t.DataType] = {
        "int": t.LongType(),
        "float": t.DoubleType(),
        "str": t.StringType(),
        "bool": t.BooleanType(),
        "pairs": t.ArrayType(t.ArrayType(t.StringType())),
    }
    struct = t.StructType([t.StructField(f.name, spark_types[f.type], True) for f in FIELDS[kind]])
    if corrupt_column is not None:
        struct = struct.add(corrupt_column, t.StringType(), True)
    return struct


def markdown_tables() -> str:
    """The field tables of README.md, generated (a test checks README.md holds this text)."""
    out: list[str] = []
    for kind in KINDS:
        out += [
            f"#### `{kind}` fields",
            "",
            "| field | type | required on | meaning and checks |",
            "|---|---|---|---|",
        ]
        for f in FIELDS[kind]:
            out.append(f"| `{f.name}` | {f.type} | {_required_text(f)} | {f.doc}{_checks_text(f)} |")
        out.append("")
    out += ["#### Events", "", "| event | meaning |", "|---|---|"]
    out += [f"| `{name}` | {EVENT_DOCS[name]} |" for name in EVENTS]
    out += ["", "#### Known causes", "", "| event | `cause` values written by stompd |", "|---|---|"]
    out += [f"| `{event}` | {', '.join(f'`{c}`' for c in causes)} |" for event, causes in CAUSES.items()]
    return "\n".join(out) + "\n"


def _required_text(f: Field) -> str:
    if f.required == ALWAYS:
        return "every line"
    if not f.required:
        return "optional"
    return ", ".join(f.required)


def _checks_text(f: Field) -> str:
    checks: list[str] = []
    if f.allowed is not None:
        checks.append("one of " + ", ".join(f"`{a}`" for a in f.allowed))
    if f.minimum is not None and f.minimum == f.maximum:
        checks.append(f"exactly {f.minimum}")
    elif f.minimum is not None and f.maximum is not None:
        checks.append(f"{f.minimum} to {f.maximum}")
    elif f.minimum is not None:
        checks.append(f">= {f.minimum}")
    if f.pattern is not None:
        checks.append(f"matches `^{f.pattern}$`")
    if f.prefix is not None:
        checks.append(f"starts with `{f.prefix}`, then at least one character")
    if f.type == "pairs":
        checks.append("an array of `[string, string]`, none of the strings empty")
    if f.nonempty:
        checks.append("not empty")
    if f.only_on is not None:
        checks.append("only on " + ", ".join(f"`{what}`" for what in f.only_on) + " lines")
    if f.since > OLDEST_VERSION:
        checks.append(f"only on version {f.since} lines and later")
    if f.needs is not None:
        checks.append(f"only with `{f.needs}`")
    return " Valid: " + "; ".join(checks) + "." if checks else ""


README_BEGIN: Final = "<!-- schema:begin -->\n"
README_END: Final = "<!-- schema:end -->\n"


def readme_with_tables(readme: str) -> str:
    """README.md's text with the generated tables between its markers brought up to date."""
    head, _, rest = readme.partition(README_BEGIN)
    _, _, tail = rest.partition(README_END)
    return head + README_BEGIN + markdown_tables() + README_END + tail


if __name__ == "__main__":
    import sys
    from pathlib import Path

    if sys.argv[1:] == ["--update-readme"]:
        path = Path(__file__).with_name("README.md")
        path.write_text(readme_with_tables(path.read_text()))
    else:
        print(markdown_tables(), end="")
