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
