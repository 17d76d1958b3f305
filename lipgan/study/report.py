"""The study's report: ``study.json`` (every cell), ``study.md`` (tables), ``study.png`` (figure),
written together from the finished cells by :func:`write`. The numbers are computed in
:mod:`lipgan.study.summary`, the tables in :mod:`lipgan.study.tables`, the figure in
:mod:`lipgan.study.figure`.
"""

from __future__ import annotations

from pathlib import Path

from lipgan.study.figure import figure
from lipgan.study.pacgan4 import LAST_K, MEANS
from lipgan.study.spec import dumps
from lipgan.study.summary import (
    COLLAPSE_KL,
    THRESHOLDS,
    cell_values,
    extra_columns,
    is_collapsed,
    summarize,
)
from lipgan.study.tables import markdown


def write(
    out: Path, spec: dict, results: list[dict], command: str = "", log=None, total=None
) -> dict[str, Path]:
    """study.json/md/png from ``results``; ``total``: the study's cell count when ``results``
    holds only the finished ones (a report of a study still under way says so)."""
    from lipgan.study import references as refs

    out = Path(out)
    paths = {"json": out / "study.json", "markdown": out / "study.md", "figure": out / "study.png"}
    references = refs.load_or_compute(
        out,
        list(dict.fromkeys(r["cell"]["dataset"] for r in results)),
        spec["eval_samples"],
        spec["seeds"],
        log,
        refs.SMOKE_FLOOR_PAIRS if spec.get("smoke_test") else refs.FLOOR_PAIRS,
        metrics=spec.get("metrics", ()),
        bindings=spec.get("bindings", ()),
    )
    cells = []
    for r in results:
        values = cell_values(r) if r["status"] == "ok" else {}
        # samples_cell is the figure's, not a number; the machine stays in the cell's result.json
        kept = {k: v for k, v in r.items() if k not in ("samples_cell", "machine")}
        cells.append({**kept, "collapsed": is_collapsed(values) if values else None})
    payload = {
        "spec": spec,
        "command": command,
        "collapse_rule": f"modes captured < half, or reverse KL > {COLLAPSE_KL}",
        "thresholds": THRESHOLDS,
        "pacgan4_means": {"means": MEANS, "last_k": LAST_K},
        "summary": summarize(results, extra=extra_columns(references)),
        "references": references,
        "cells": cells,
        "cells_total": total if total is not None else len(results),
    }
    paths["json"].write_text(dumps(payload))
    paths["markdown"].write_text(markdown(spec, results, command, references, total))
    figure(
        paths["figure"],
        out,
        results,
        references,
        smoke_test=bool(spec.get("smoke_test")),
        total=total,
    )
    return paths
