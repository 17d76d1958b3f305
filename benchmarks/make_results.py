"""Assemble benchmarks/RESULTS.md from the run folders written by benchmarks/run.sh.

The hand-written analysis lives in benchmarks/ANALYSIS.md and is appended verbatim.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

root = Path(__file__).parent
parts = []
runs = sorted(p.parent for p in root.glob("*/results.json"))
if runs:
    machine = json.loads((runs[0] / "results.json").read_text())["machine"]
    parts.append("# Benchmark results\n")
    parts.append("Produced by `sh benchmarks/run.sh` (then `python benchmarks/make_results.py`).\n")
    parts.append(
        "Machine: "
        + ", ".join(f"{k} {v}" for k, v in machine.items())
        + ". "
        + os.environ.get("LIPGAN_BENCH_NOTE", "")
        + " Ratios are measured in the same process with repetitions interleaved across "
        "constraints, median of 5 (min–max given).\n"
    )
    targets = subprocess.run(
        [sys.executable, str(root / "targets.py"), str(root)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    parts.append("## Targets (CPU)\n\n" + targets)
analysis = root / "ANALYSIS.md"
if analysis.exists():
    parts.append(analysis.read_text())
for run in runs:
    payload = json.loads((run / "results.json").read_text())
    table = (
        (run / "results.md").read_text().split("\n", 6)[-1]
    )  # drop its title/command/machine lines
    parts.append(
        f"## {run.name}\n\nCommand: `{payload['command']}`\n\n![{run.name}]({run.name}/chart.png)\n\n{table}"
    )
(root / "RESULTS.md").write_text("\n".join(parts))
print(f"wrote {root / 'RESULTS.md'} from {len(runs)} runs")
