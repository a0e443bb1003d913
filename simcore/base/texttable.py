"""Plain-text tables for the terminal: columns as wide as their widest cell."""

from __future__ import annotations

from collections.abc import Sequence


def text_table(header: Sequence[str], rows: Sequence[Sequence[object]],
               indent: str = "") -> list[str]:
    """The lines of a table: every column as wide as its widest cell (the header's
    included), so that no name, however long, shifts the columns after it; the first
    column left-aligned (names), the others right-aligned (numbers), two spaces apart."""
    cells = [[str(cell) for cell in row] for row in (header, *rows)]
    widths = [max(len(row[i]) for row in cells if i < len(row)) for i in range(len(header))]
    return [indent + "  ".join(cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i])
                               for i, cell in enumerate(row)).rstrip()
            for row in cells]


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]],
                   names: int = 1) -> list[str]:
    """The lines of a Markdown table: the first `names` columns left-aligned (names), the
    others right-aligned (numbers)."""
    def line(cells: Sequence[object]) -> str:
        return "| " + " | ".join(str(cell) for cell in cells) + " |"

    rule = ("---",) * names + ("---:",) * (len(header) - names)
    return [line(header), line(rule), *(line(row) for row in rows)]
