"""Assemble benchmarks/RESULTS.md from the run folders written by benchmarks/run.sh.

The hand-written analysis lives in benchmarks/ANALYSIS.md and is appended verbatim; a run folder's
``run.txt``, when present, says when, on what and under which load its run was made, and is printed
under its command.
"""

import json
import subprocess
import sys
from pathlib import Path

root = Path(__file__).parent


def sweep_note(root: Path = root) -> str:
    """What benchmarks/run.sh recorded of its sweep's conditions (``sweep.txt``), so that a later
    run of this script alone, after adding one run folder, keeps the machine line's note."""
    note = root / "sweep.txt"
    return note.read_text().strip() if note.exists() else ""


def render(root: Path = root) -> str:
    """RESULTS.md's text from ``root``'s run folders, ANALYSIS.md and sweep.txt (nothing else: a
    hand edit of RESULTS.md is lost on the next run, and tests/test_bench.py says so)."""
    parts = []
    runs = sorted(p.parent for p in root.glob("*/results.json"))
    if runs:
        machine = json.loads((runs[0] / "results.json").read_text())["machine"]
        parts.append("# Benchmark results\n")
        parts.append(
            "Produced by `sh benchmarks/run.sh` (then `python benchmarks/make_results.py`).\n"
        )
        parts.append(
            "Contents: the throughput targets; how to read the tables; *Findings*, dated entries on what the\n"
            "benchmarks show; *Wall times of user commands* (the test suite, the default `lipgan run`, `lipgan\n"
            "reproduce fig1`, `lipgan study --quick`, the shipped toy configs); *Reference values*; then one\n"
            "section per `lipgan bench` run folder, each with its command and its run's date and machine.\n"
            "The hand-written parts live in `benchmarks/ANALYSIS.md`.\n"
        )
        parts.append(
            "Machine: "
            + ", ".join(f"{k} {v}" for k, v in machine.items())
            + ". "
            + sweep_note(root)
            + " Ratios are measured in the same process with repetitions interleaved across "
            "constraints, median of 5 (min–max given).\n"
        )
        targets = subprocess.run(
            [sys.executable, str(root / "targets.py"), str(root)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        parts.append(
            "## Targets (CPU)\n\nFrom the run folders below (`benchmarks/targets.py`): the full sweep's, "
            "except where a group's *Run* line says otherwise.\n\n" + targets
        )
    analysis = root / "ANALYSIS.md"
    if analysis.exists():
        parts.append(analysis.read_text())
    for run in runs:
        payload = json.loads((run / "results.json").read_text())
        table = (
            (run / "results.md").read_text().split("\n", 6)[-1]
        )  # drop its title/command/machine lines
        note = run / "run.txt"
        note = f"{note.read_text().strip()}\n\n" if note.exists() else ""
        parts.append(
            f"## {run.name}\n\nCommand: `{payload['command']}`\n\n{note}"
            f"![{run.name}]({run.name}/chart.png)\n\n{table}"
        )
    return "\n".join(parts)


if __name__ == "__main__":
    text = render()
    (root / "RESULTS.md").write_text(text)
    print(f"wrote {root / 'RESULTS.md'}")
