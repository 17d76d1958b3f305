"""Print the results tables of docs/study.md ("Results") from the committed study reports.

    python docs/study_tables.py            # ring, grid, digits and digits-certified tables

Ring and grid: the *At PacGAN4's means* tables of ``studies/tuned/tune.md`` (tuned rows, their EMA
and the shared config), with the rows of ``studies/tuned-sn-maxmin/tune.md`` and, on the grid,
``studies/tuned-sn-grid-full/tune.md`` appended: copied lines, so the docs say exactly what the
reports say. Digits: computed from the cells in ``studies/digits/study.json`` (its run dirs are not
committed) and ``studies/digits-certified/study.json``, mean and 95 % percentile-bootstrap
interval over seeds (``lipgan.study.intervals``).
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


def digits_table(study: str = "digits") -> str:
    """The digits table of ``studies/<study>/study.json``'s cells (``digits`` or
    ``digits-certified``)."""
    cells = json.loads((STUDIES / study / "study.json").read_text())["cells"]
    by_row: dict[str, list[dict]] = {}
    for cell in cells:
        if cell["status"] == "ok":
            by_row.setdefault(cell["cell"]["constraint"], []).append(cell)
    head = ["constraint", *[f"{t}: mean [95 % interval]" for _, t, *_ in DIGITS]]
    head += ["ms / iteration (mean)", "seeds"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for constraint, results in by_row.items():
        cols = []
        for key, _, scale, digits in DIGITS:
            values = [r["metrics"][key] for r in results]
            interval = fmt_interval(bootstrap_interval(values), scale, digits)
            cols.append(f"{mean_of(values) * scale:.{digits}f} {interval}")
        timed = [r["seconds_per_iteration"] for r in results if r.get("seconds_per_iteration")]
        cols.append(f"{1000 * mean_of(timed):.0f}" if timed else "–")
        cols.append(str(len(results)))
        lines.append(f"| {constraint} | " + " | ".join(cols) + " |")
    return "\n".join(lines)


def main() -> None:
    for dataset in ("ring", "grid"):
        print(f"### {dataset}\n\n{toy_table(dataset)}\n")
    print(f"### digits\n\n{digits_table()}\n")
    print(f"### digits-certified\n\n{digits_table('digits-certified')}")


if __name__ == "__main__":
    main()
