"""Each island's MAP-Elites archive as a grid, from the newest snapshot of an islands run.

The grid has one axis per configured feature (:mod:`search.database.features`): the first
feature runs down the rows and the others, joined, along the columns, keeping only the values
some island occupies, so every island is drawn on the same axes. A cell's colour is its elite's
fitness; the hover names the elite and its score.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

import plotly.graph_objects as go

from search.database import ProgramDatabase, named_score


@dataclass(frozen=True)
class Cell:
    island: int
    row: str                # value of the first feature
    column: str             # values of the other features, joined
    elite: str
    fitness: float
    text: str               # the elite's named score


def archive_cells(strategy_state: dict | None) -> tuple[list[str], list[Cell], int]:
    """(feature names, occupied cells, number of islands) from an islands strategy's snapshot
    state (``{"db": ..., "programs": ...}``); no cells when the state is not an islands one."""
    if not strategy_state or "db" not in strategy_state:
        return [], [], 0
    db = ProgramDatabase.from_state_dict(strategy_state["db"])
    names = list(db.space.names)
    cells = []
    for i, island in enumerate(db.islands):
        for elite_id in island.archive.cells.values():
            p = island.archive.members[elite_id]
            values = [db.space.value(name, p.descriptors) for name in names] or ["all"]
            named = named_score(p.score)
            cells.append(Cell(i, f"{names[0]}={values[0]}" if names else "all",
                              " | ".join(f"{n}={v}" for n, v in zip(names[1:], values[1:])) or "all",
                              p.copy_of or p.id, p.fitness, named.text() if named is not None else "-"))
    return names, cells, len(db.islands)


def archive_figures(strategy_state: dict | None) -> list[tuple[int, go.Figure | None]]:
    """(island, its grid) for every island, None for an empty island; [] without a snapshot."""
    names, cells, islands = archive_cells(strategy_state)
    if not cells:
        return [(i, None) for i in range(islands)]
    rows = sorted({c.row for c in cells})
    cols = sorted({c.column for c in cells})
    labels = [c.replace(" | ", "<br>") for c in cols]
    out = []
    for i in range(islands):
        mine = [c for c in cells if c.island == i]
        if not mine:
            out.append((i, None))
            continue
        z = [[None] * len(cols) for _ in rows]
        text = [[""] * len(cols) for _ in rows]
        hover = [["empty cell"] * len(cols) for _ in rows]
        for c in mine:
            r, k = rows.index(c.row), cols.index(c.column)
            z[r][k], text[r][k] = c.fitness, escape(c.elite)
            hover[r][k] = f"{escape(c.row)}<br>{escape(c.column)}<br>elite {escape(c.elite)}<br>{escape(c.text)}"
        fig = go.Figure(go.Heatmap(z=z, x=labels, y=rows, text=text, texttemplate="%{text}", customdata=hover,
                                   hovertemplate="%{customdata}<extra></extra>", zmin=0, zmax=1, xgap=3, ygap=3,
                                   colorscale="Viridis", colorbar={"title": "fitness", "len": 1.0}))
        fig.update_xaxes(automargin=True, type="category", side="bottom")
        fig.update_yaxes(automargin=True, type="category")
        fig.update_layout(height=140 + 36 * len(rows) + 16 * max(0, len(names) - 1), margin={"t": 10, "b": 10})
        out.append((i, fig))
    return out
