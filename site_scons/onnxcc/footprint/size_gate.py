"""The CI size gate: a baseline file (``size-baseline``) and the comparison with it
(``size-check``).

A category fails only when it grows by more than ``tolerance`` percent of its baseline
*and* by more than ``floor`` bytes (so 36 bytes more in a 184-byte category is noise);
the flash and RAM totals fail on the percentage alone.
"""

import json
import os
import tempfile
from dataclasses import dataclass, field
from fractions import Fraction

from onnxcc.core.errors import OnnxccError

from .elf_sizes import FLASH_KEYS, RAM_KEYS

#: bytes a category may always grow by (``size_floor=``)
DEFAULT_FLOOR = 256


@dataclass
class GateRow:
    label: str       # "flash.kernels"
    baseline: int
    now: int
    limit: int       # the most ``now`` may be
    failed: bool

    @property
    def delta(self):
        return self.now - self.baseline


@dataclass
class GateResult:
    model: str
    baseline_model: str
    tolerance: float
    floor: int
    rows: list = field(default_factory=list)

    @property
    def failed(self):
        return [row.label for row in self.rows if row.failed]

    @property
    def ok(self):
        return not self.failed


def _number(value, what, kind):
    try:
        number = kind(str(value))
    except (ValueError, ZeroDivisionError):
        raise OnnxccError(f"{what} {value!r} is not a number") from None
    if number < 0:
        raise OnnxccError(f"{what} {value} is negative")
    return number


def _categories(part):
    """The byte counts of a flash/ram dict, skipping flags like stack_exact."""
    return {k: v for k, v in part.items() if isinstance(v, int) and not isinstance(v, bool)}


def compare(baseline, current, tolerance_pct, floor_bytes=DEFAULT_FLOOR):
    """Compare ``current`` sizes with ``baseline`` sizes (flash and ram, every category and
    the totals): a :class:`GateResult` whose rows give baseline, now and the limit.

    A category's limit is its baseline plus the larger of ``tolerance_pct`` percent of it
    and ``floor_bytes``; a total's is its baseline plus ``tolerance_pct`` percent. Growing
    exactly to the limit passes; shrinking never fails.
    """
    tolerance = _number(tolerance_pct, "size tolerance", Fraction)
    floor = _number(floor_bytes, "size floor", int)
    for which, sizes in (("baseline", baseline), ("current", current)):
        if not all(isinstance(sizes.get(s), dict) for s in ("flash", "ram")):
            raise OnnxccError(f"{which} sizes have no flash and ram sections")
    result = GateResult(current.get("model", "?"), baseline.get("model"), tolerance_pct, floor)
    for section, order in (("flash", FLASH_KEYS), ("ram", RAM_KEYS)):
        base, cur = _categories(baseline[section]), _categories(current[section])
        keys = [k for k in order if k in base or k in cur]
        keys += sorted((set(base) | set(cur)) - set(keys))
        for key in keys:
            b, c = base.get(key, 0), cur.get(key, 0)
            allowed = b * tolerance / 100
            if key != "total":
                allowed = max(allowed, floor)
            limit = int(b + allowed)       # c is whole: c > b + allowed iff c > its floor
            result.rows.append(GateRow(f"{section}.{key}", b, c, limit, c > limit))
    return result


def _baseline_hint(path):
    return f"run `scons <the same options> baseline={path} size-baseline` first"


def write_baseline(path, sizes, build=None):
    """Write the flash and ram sections and model name of ``sizes`` as readable JSON, with
    ``build`` (what it was built as: target, options, onnxcc's version) when given."""
    data = {"model": sizes["model"], "flash": dict(sizes["flash"]), "ram": dict(sizes["ram"])}
    if build:
        data["build"] = build
    text = json.dumps(data, indent=2, sort_keys=True) + "\n"
    folder = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".baseline-", dir=folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as e:
        raise OnnxccError(f"cannot write size baseline: {e.strerror or e}", where=path) from None


def read_baseline(path):
    """The ``{"model", "flash", "ram"}`` (and ``"build"``) written by :func:`write_baseline`."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise OnnxccError("size baseline not found", where=path,
                          hint=_baseline_hint(path)) from None
    except (OSError, UnicodeDecodeError) as e:
        raise OnnxccError(f"cannot read size baseline: {getattr(e, 'strerror', None) or e}",
                          where=path, hint=_baseline_hint(path)) from None
    try:
        data = json.loads(text)
    except ValueError as e:
        raise OnnxccError(f"malformed size baseline: {e}", where=path,
                          hint=_baseline_hint(path)) from None
    problem = _baseline_problem(data)
    if problem:
        raise OnnxccError(f"malformed size baseline: {problem}", where=path,
                          hint=_baseline_hint(path))
    found = {"model": data.get("model"), "flash": data["flash"], "ram": data["ram"]}
    if "build" in data:
        found["build"] = data["build"]
    return found


def build_mismatch(baseline, build):
    """Why a baseline built as ``baseline["build"]`` says nothing about a build as ``build``
    (another target or other options), or None. A baseline without the record (written
    before it was kept) and another onnxcc version compare: a new compiler's growth is
    what the gate is for."""
    was = baseline.get("build")
    if not was:
        return None
    if was.get("target") != build["target"]:
        return f"it was written for target {was.get('target')}, this build is {build['target']}"
    differ = sorted(k for k in set(was.get("options", {})) | set(build["options"])
                    if was.get("options", {}).get(k) != build["options"].get(k))
    if differ:
        return "it was written with other options: " + ", ".join(
            f"{k}={was.get('options', {}).get(k, '')} (now {build['options'].get(k, '')})" for k in differ)
    return None


def _baseline_problem(data):
    if not isinstance(data, dict):
        return "not a JSON object"
    if "model" in data and not isinstance(data["model"], str):
        return "model is not a string"
    for section in ("flash", "ram"):
        part = data.get(section)
        if not isinstance(part, dict):
            return f"no {section} section"
        for key, value in part.items():
            if key == "stack_exact":
                if not isinstance(value, bool):
                    return "ram.stack_exact is not true/false"
            elif isinstance(value, bool) or not isinstance(value, int) or value < 0:
                return f"{section}.{key} is not a byte count"
        if "total" not in part:
            return f"no {section}.total"
    build = data.get("build")
    if build is not None and not (isinstance(build, dict) and isinstance(build.get("target"), str)
                                  and isinstance(build.get("options", {}), dict)):
        return "build is not a record of target and options"
    return None
