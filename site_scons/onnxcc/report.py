"""Numbers as people read them."""


def kib(n):
    return f"{n / 1024:.1f} KiB" if n >= 1024 else f"{n} B"
