"""Benchmark output: the machine description, a Markdown table and a PNG chart from the records."""

from __future__ import annotations

from pathlib import Path

from lipgan.core.machine import describe


def _fmt(value, digits=2):
    if value is None:
        return "–"
    if isinstance(value, float):
        if abs(value) >= 1e9:
            return f"{value / 1e9:.{digits}f} G"
        if abs(value) >= 1e4:
            return f"{value:,.0f}"
        return f"{value:.{digits}f}"
    return str(value)


def _pct(fraction) -> str:
    return "–" if fraction is None else f"{100 * fraction:.0f} %"


def mode_label(record: dict) -> str:
    """``auto → xla`` where the mode resolved to another (``auto``), else the mode itself."""
    resolved = record.get("resolved_mode")
    return (
        record["mode"] if resolved in (None, record["mode"]) else f"{record['mode']} → {resolved}"
    )


def markdown_table(records: list[dict]) -> str:
    """One row per measurement; ratios are to ``none`` in the same run (see harness.add_ratios)."""
    header = (
        "| strategy | model | batch | mode | constraint | measurement | examples/s (median) | min–max "
        "| ×none time | ×none FLOPs | time/FLOP ratio | vs keras-io | GFLOP/call | GFLOP/s | % probe | % peak | first call s | peak MiB |"
    )
    lines = [header, "|" + "---|" * (header.count("|") - 1)]
    for r in records:
        mem = r["peak_memory_bytes"] / 2**20 if r["peak_memory_bytes"] else None
        gflop = r["flops_per_call"] / 1e9 if r["flops_per_call"] else None
        gflops = r["achieved_flops_per_s"] / 1e9 if r["achieved_flops_per_s"] else None
        lines.append(
            f"| {r['strategy']} | {r['model']} | {r['batch']} | {mode_label(r)} | {r['constraint']} "
            f"| {r['measurement']} | {_fmt(r['examples_per_s'], 0)} "
            f"| {_fmt(r['examples_per_s_min'], 0)}–{_fmt(r['examples_per_s_max'], 0)} "
            f"| {_fmt(r['time_ratio_vs_none'])} | {_fmt(r['flop_ratio_vs_none'])} "
            f"| {_fmt(r['time_ratio_over_flop_ratio'])} | {_fmt(r['speedup_vs_keras_io'])} "
            f"| {_fmt(gflop)} | {_fmt(gflops, 1)} | {_pct(r.get('fraction_of_probe'))} "
            f"| {_pct(r.get('fraction_of_peak'))} | {_fmt(r['first_call_s'], 1)} | {_fmt(mem, 0)} |"
        )
    return "\n".join(lines) + "\n"


def chart(records: list[dict], path: Path) -> None:
    """Bar chart: time relative to ``none`` per constraint, one panel per (model, measurement)."""
    from lipgan.plots import pyplot

    plt = pyplot()

    panels = sorted({(r["model"], r["measurement"]) for r in records if r["time_ratio_vs_none"]})
    if not panels:
        return
    fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 3.6), squeeze=False)
    for ax, (model, measurement) in zip(axes[0], panels):
        rows = [
            r
            for r in records
            if (r["model"], r["measurement"]) == (model, measurement) and r["time_ratio_vs_none"]
        ]
        labels = [f"{r['constraint']}\n{mode_label(r)} b{r['batch']} {r['strategy']}" for r in rows]
        ax.barh(range(len(rows)), [r["time_ratio_vs_none"] for r in rows], color="tab:blue")
        ax.set_yticks(range(len(rows)), labels, fontsize=6)
        ax.axvline(1.0, color="k", lw=0.8)
        ax.set_title(f"{model}: {measurement}", fontsize=9)
        ax.set_xlabel("time × unconstrained (lower is better)", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write(records: list[dict], out: Path, command: str) -> dict:
    """``results.json``, ``results.md`` and ``chart.png`` in ``out``; returns the paths."""
    import json

    out.mkdir(parents=True, exist_ok=True)
    info = describe()
    (out / "results.json").write_text(
        json.dumps({"command": command, "machine": info, "records": records}, indent=1)
    )
    md = [
        "# lipgan bench results\n",
        f"Command: `{command}`\n",
        "Machine: " + ", ".join(f"{k} {v}" for k, v in info.items()) + "\n",
        markdown_table(records),
    ]
    (out / "results.md").write_text("\n".join(md))
    chart(records, out / "chart.png")
    return {
        "json": out / "results.json",
        "markdown": out / "results.md",
        "chart": out / "chart.png",
    }
