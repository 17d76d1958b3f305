"""Print the results tables of docs/study.md ("Results") from the committed study reports.

    python docs/study_tables.py            # ring, grid, the digits studies, budget16k, soc's scale

Ring and grid: the *At PacGAN4's means* tables of ``studies/tuned/tune.md`` (tuned rows, their EMA
and the shared config), with the rows of ``studies/tuned-sn-maxmin/tune.md`` and, on the grid,
``studies/tuned-sn-grid-full/tune.md`` appended: copied lines, so the docs say exactly what the
reports say. Digits: computed from the cells in ``studies/digits/study.json`` (its run dirs are not
committed) and the other digits studies' ``study.json``, mean and 95 % percentile-bootstrap
interval over seeds (``lipgan.study.intervals``). The 16,000-iteration table: computed from the
cells' curves under ``studies/budget16k/<data set>`` (``lipgan.study.first_at_means``).
Run from the repository root after rebuilding the reports (each study's command with
``--report-only``).
"""

from __future__ import annotations

import json
from pathlib import Path

from lipgan.study.intervals import bootstrap_interval, fmt_interval, mean_of
from lipgan.study.pacgan4 import MEANS

STUDIES = Path("studies")


def pacgan4_table(path: Path, dataset: str) -> list[str]:
    """The header and rows of the *At PacGAN4's means* table of ``dataset`` in a tune.md."""
    section = path.read_text().split(f"\n## {dataset}\n", 1)[1].split("\n## ", 1)[0]
    lines = section.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| row | modes: mean"))
    table = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        table.append(line)
    return table


def toy_table(dataset: str) -> str:
    rows = pacgan4_table(STUDIES / "tuned" / "tune.md", dataset)
    rows += pacgan4_table(STUDIES / "tuned-sn-maxmin" / "tune.md", dataset)[2:]
    if dataset == "grid":
        for line in pacgan4_table(STUDIES / "tuned-sn-grid-full" / "tune.md", dataset)[2:]:
            rows.append(line.replace("| spectral_norm", "| spectral_norm, full-budget search", 1))
    m = MEANS[dataset]
    rows.append(
        f"| *PacGAN4 (Lin et al. 2018, Table 1, published means)* | {m['modes_covered']} | "
        f"{m['high_quality_fraction'] * 100:.1f} | {m['reverse_kl']} | – | – |"
    )
    return "\n".join(rows)


#: Digits columns: (metric key, title, scale, digits).
DIGITS = [
    ("digits_fd", "FD", 1.0, 2),
    ("digits_kid", "KID", 1.0, 1),
    ("classes_covered", "classes covered", 1.0, 1),
    ("class_reverse_kl", "class reverse KL", 1.0, 3),
]


def _rows(study: str, dataset: str | None = None) -> dict[str, list[dict]]:
    """``studies/<study>/study.json``'s finished cells (of ``dataset``, when given) by constraint."""
    by_row: dict[str, list[dict]] = {}
    for cell in json.loads((STUDIES / study / "study.json").read_text())["cells"]:
        if cell["status"] == "ok" and dataset in (None, cell["cell"]["dataset"]):
            by_row.setdefault(cell["cell"]["constraint"], []).append(cell)
    return by_row


def _interval_columns(results: list[dict], columns) -> list[str]:
    """``mean [95 % interval]`` over ``results`` of each (metric key, title, scale, digits)."""
    cols = []
    for key, _, scale, digits in columns:
        values = [r["metrics"][key] for r in results]
        interval = fmt_interval(bootstrap_interval(values), scale, digits)
        cols.append(f"{mean_of(values) * scale:.{digits}f} {interval}")
    return cols


def digits_table(study: str = "digits") -> str:
    """The digits table of ``studies/<study>/study.json``'s cells (``digits``,
    ``digits-certified``, ``digits-soc-order``, ``digits-soc-2400``, ``digits-soc-gram``)."""
    head = ["constraint", *[f"{t}: mean [95 % interval]" for _, t, *_ in DIGITS]]
    head += ["ms / iteration (mean)", "seeds"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for constraint, results in _rows(study).items():
        cols = _interval_columns(results, DIGITS)
        timed = [r["seconds_per_iteration"] for r in results if r.get("seconds_per_iteration")]
        cols.append(f"{1000 * mean_of(timed):.0f}" if timed else "–")
        cols.append(str(len(results)))
        lines.append(f"| {constraint} | " + " | ".join(cols) + " |")
    return "\n".join(lines)


#: Ring/grid columns of a plain study: (metric key, title, scale, digits).
TOY = [
    ("modes_covered", "modes", 1.0, 1),
    ("high_quality_fraction", "high quality %", 100.0, 1),
    ("reverse_kl", "reverse KL", 1.0, 3),
]


def toy_study_table(study: str, dataset: str) -> str:
    """``dataset``'s rows of a plain ``lipgan study`` on ring/grid (``toy-soc-gram``): per
    constraint, each metric's mean [95 % interval] over its finished seeds, with PacGAN4's
    published means beside them."""
    head = ["constraint", *[f"{t}: mean [95 % interval]" for _, t, *_ in TOY], "seeds"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for constraint, results in _rows(study, dataset).items():
        cols = _interval_columns(results, TOY)
        lines.append(f"| {constraint} | " + " | ".join(cols) + f" | {len(results)} |")
    m = MEANS[dataset]
    lines.append(
        f"| *PacGAN4 (Lin et al. 2018, Table 1, published means)* | {m['modes_covered']} | "
        f"{m['high_quality_fraction'] * 100:.1f} | {m['reverse_kl']} | – |"
    )
    return "\n".join(lines)


#: The budget16k table's curve points.
BUDGET_POINTS = (4000, 8000, 12000, 16000)


def budget_table(dataset: str) -> str:
    """Per generator of ``studies/budget16k/<dataset>``'s runs (raw, then each EMA decay): mean
    high quality at :data:`BUDGET_POINTS`, the interval at the last, the first point at PacGAN4's
    means and the point from which every later one is (``lipgan.study.first_at_means``)."""
    from lipgan.study import first_at_means as fam
    from lipgan.study.pacgan4 import check

    results = [
        json.loads(p.read_text())
        for p in sorted(STUDIES.glob(f"budget16k/{dataset}/runs/**/result.json"))
    ]
    head = ["generator", *[f"{s:,}" for s in BUDGET_POINTS], "first point at the means"]
    head += ["there from"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for generator in fam.generators(results)[1:]:  # the default is the first decay's EMA
        curves = [fam.curve_points(r, generator) for r in results]
        cols = []
        for step in BUDGET_POINTS:
            hq = check([c[step] for c in curves], MEANS[dataset])["metrics"][
                "high_quality_fraction"
            ]
            cols.append(f"{hq['mean'] * 100:.1f} %")
        cols[-1] += " " + fmt_interval(hq["interval"], 100, 1)
        found = fam.first_at_means(results, MEANS[dataset], generator)
        cols.append(f"{found['step']:,}" if found["step"] is not None else "never")
        if found["stays_from"] is not None:
            cols.append(
                f"{found['stays_from']:,} ({found['points_at']} of the {found['points_from']} "
                f"points from {found['step']:,})"
            )
        elif found["step"] is not None:
            cols.append(f"never ({found['points_at']} of {found['points_from']})")
        else:
            cols.append("–")
        label = "raw" if generator == fam.RAW else f"EMA {generator}"
        lines.append(f"| {label} | " + " | ".join(cols) + " |")
    return "\n".join(lines)


def main() -> None:
    for dataset in ("ring", "grid"):
        print(f"### {dataset}\n\n{toy_table(dataset)}\n")
    print(f"### digits\n\n{digits_table()}\n")
    for study in ("digits-certified", "digits-soc-order", "digits-soc-2400", "digits-soc-gram"):
        print(f"### {study}\n\n{digits_table(study)}\n")
    for dataset in ("ring", "grid"):
        print(f"### toy-soc-gram {dataset}\n\n{toy_study_table('toy-soc-gram', dataset)}\n")
    for dataset in ("ring", "grid"):
        print(f"### budget16k {dataset}\n\n{budget_table(dataset)}\n")


if __name__ == "__main__":
    main()
