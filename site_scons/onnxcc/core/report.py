"""Numbers as people read them."""


def human_bytes(n):
    """``n`` bytes with a binary unit, one decimal: ``512 B``, ``5.0 KiB``, ``4.3 MiB``."""
    n = int(n)
    if abs(n) < 1024:
        return f"{n} B"
    for unit in ("KiB", "MiB", "GiB"):
        n /= 1024
        if abs(round(n, 1)) < 1024 or unit == "GiB":
            return f"{n:.1f} {unit}"


def pct(part, whole):
    """``part`` as a percentage of ``whole`` (0.0 when ``whole`` is 0)."""
    return 100.0 * part / whole if whole else 0.0


def _byte_counts(part):
    """The (key, bytes) of a size.json section in its order, without flags (stack_exact)."""
    return [(k, v) for k, v in part.items() if isinstance(v, int) and not isinstance(v, bool)]


def format_table(sizes):
    """size.json's flash and RAM as a compact table: bytes, KiB, and % of each category
    in its total."""
    lines = []
    for section in ("flash", "ram"):
        part = sizes[section]
        total = part["total"]
        lines.append(f"{section:<12}{'bytes':>10}{'KiB':>10}{'%':>7}")
        for key, value in _byte_counts(part):
            share = "" if key == "total" else f"{pct(value, total):7.1f}"
            label = key
            if key == "stack" and not part.get("stack_exact", True):
                label = "stack >="
            lines.append(f"  {label:<10}{value:>10}{value / 1024:>10.1f}{share}")
    if not sizes["ram"].get("stack_exact", True):
        lines.append("  (stack >=: a frame is dynamic, alloca/VLA size not included)")
    return "\n".join(lines)


def format_gate(result):
    """The lines of a size gate's result (footprint.size_gate.GateResult): per category
    baseline, now, the change and the limit, and the verdict."""
    lines = [f"size gate: model {result.model}, tolerance {result.tolerance:g}%, "
             f"floor {result.floor} B per category"]
    if result.baseline_model not in (None, result.model):
        lines.append(f"note: the baseline is of model {result.baseline_model}")
    lines.append(f"{'category':<16}{'baseline':>10}{'now':>10}{'delta':>10}{'%':>9}{'limit':>10}")
    for row in result.rows:
        if row.baseline:
            change = f"{100 * row.delta / row.baseline:+8.1f}%"
        else:
            change = "     new" if row.now else "       -"
        line = (f"{row.label:<16}{row.baseline:>10}{row.now:>10}{row.delta:>+10}{change:>9}"
                f"{row.limit:>10}")
        lines.append(line + ("  OVER" if row.failed else ""))
    if result.failed:
        lines.append(f"size gate FAILED: {', '.join(result.failed)} over the limit "
                     f"(baseline + the larger of {result.tolerance:g}% and {result.floor} B; "
                     f"totals: + {result.tolerance:g}%)")
    else:
        lines.append("size gate passed")
    return lines
