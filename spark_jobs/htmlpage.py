"""report.html: one self-contained page (inline CSS and SVG, no script, no network)."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

CSS: Final = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222;
       padding: 0 1em; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; margin-top: 2em; }
table { border-collapse: collapse; margin: .6em 0 1.2em; font-size: 12.5px; }
th, td { border: 1px solid #ddd; padding: 3px 7px; text-align: right; white-space: nowrap; }
th { background: #f3f3f3; } td.text { text-align: left; }
.note { color: #666; font-size: 12.5px; } .bad { color: #b00; font-weight: bold; }
dl.facts { display: grid; grid-template-columns: max-content auto; gap: 2px 14px; }
dl.facts dt { color: #555; } dl.facts dd { margin: 0; }
figure { margin: 1em 0; } svg { max-width: 100%; height: auto; }
"""
UNITS: Final = ("B", "KiB", "MiB", "GiB", "TiB")
BAD: Final = ' class="bad"'


@dataclass(frozen=True, slots=True)
class Table:
    caption: str
    columns: Sequence[str]
    rows: Sequence[Mapping[str, object]]
    note: str = ""


@dataclass(slots=True)
class Section:
    title: str
    intro: str = ""
    charts: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)


def cell(column: str, value: object) -> str:
    """A table cell: numbers right-aligned and readable, byte counts in binary units."""
    if value is None:
        return "<td>&ndash;</td>"
    if isinstance(value, bool):
        return f"<td>{'yes' if value else 'no'}</td>"
    if isinstance(value, datetime):
        return f"<td>{value:%Y-%m-%d %H:%M:%S}Z</td>"
    if isinstance(value, int):
        if column.endswith("bytes") and abs(value) >= 1024:
            return f'<td title="{value:,} bytes">{human_bytes(value)}</td>'
        return f"<td>{value:,}</td>"
    if isinstance(value, float):
        text = f"{value:.2%}" if column.endswith(("rate", "share")) else f"{value:,.2f}"
        return f"<td>{text}</td>"
    return f'<td class="text">{html.escape(str(value))}</td>'


def human_bytes(value: float) -> str:
    for unit in UNITS:
        if abs(value) < 1024 or unit == UNITS[-1]:
            return f"{value:,.1f} {unit}" if unit != "B" else f"{int(value)} B"
        value /= 1024
    raise AssertionError("unreachable")


def render_table(table: Table) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in table.columns)
    body = "".join(
        "<tr>" + "".join(cell(c, row.get(c)) for c in table.columns) + "</tr>" for row in table.rows
    )
    if not table.rows:
        body = f'<tr><td class="text" colspan="{len(table.columns)}">none</td></tr>'
    note = f'<p class="note">{html.escape(table.note)}</p>' if table.note else ""
    return f"<h3>{html.escape(table.caption)}</h3><table><tr>{head}</tr>{body}</table>{note}"


def page(title: str, facts: Sequence[tuple[str, str, bool]], sections: Sequence[Section]) -> str:
    """The whole document; ``facts`` are (label, value, alarming) pairs shown at the top."""
    items = "".join(
        f"<dt>{html.escape(label)}</dt><dd{BAD if bad else ''}>{html.escape(value)}</dd>"
        for label, value, bad in facts
    )
    toc = "".join(f'<li><a href="#s{i}">{html.escape(s.title)}</a></li>' for i, s in enumerate(sections))
    parts = [
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>',
        f"<style>{CSS}</style></head><body><h1>{html.escape(title)}</h1>",
        f'<dl class="facts">{items}</dl><ul>{toc}</ul>',
    ]
    for i, section in enumerate(sections):
        parts.append(f'<h2 id="s{i}">{html.escape(section.title)}</h2>')
        if section.intro:
            parts.append(f'<p class="note">{html.escape(section.intro)}</p>')
        parts += [f"<figure>{svg}</figure>" for svg in section.charts if svg]
        parts += [render_table(t) for t in section.tables]
    parts.append("</body></html>\n")
    return "".join(parts)
