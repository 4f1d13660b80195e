"""Every result classified (pass / unsupported / fail / crash), grouped by operator, as
Markdown: the full report (one line per case) and the summary (counts per operator)."""

import fnmatch
import os
import re
import tomllib
from collections import Counter, defaultdict

KNOWN_DEFECTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "known_defects.toml")

#: message pattern -> why onnxcc does not support the case (first match wins)
UNSUPPORTED = [
    (r"is not a plain tensor", "sequence, map or optional values"),
    (r"of domain '", "op of another domain"),
    (r"element type \S+( of '[^']*')? is not supported", "element type"),
    (r"is not static|depends on the value", "output shape depends on input values"),
    (r"which onnxcc does not support", "op"),
    (r"is not supported|is not a constant", "attribute or input"),
]
#: ops deliberately out of scope (the report names them as such)
OUT_OF_SCOPE = {
    "training": {"Adagrad", "Adam", "Momentum", "Gradient"},
    "sequence": {"SequenceAt", "SequenceConstruct", "SequenceEmpty", "SequenceErase",
                 "SequenceInsert", "SequenceLength", "SequenceMap", "SplitToSequence",
                 "ConcatFromSequence"},
    "optional": {"Optional", "OptionalGetElement", "OptionalHasElement"},
    "string": {"StringNormalizer", "StringConcat", "StringSplit", "RegexFullMatch",
               "TfIdfVectorizer", "LabelEncoder"},
    "random": {"Bernoulli", "RandomNormal", "RandomNormalLike", "RandomUniform",
               "RandomUniformLike", "Multinomial"},
}


#: what the summary says before its tables
INTRO = [
    "- **pass**: the case compiled through the SCons pipeline (import, optimize, plan, "
    "generate, compile) without a C warning, ran, and matched the test's expected outputs "
    "(`verify testdata=`).",
    "- **unsupported**: onnxcc refused the case with one clear message (the reason is in "
    "`report.md`); out of scope: float16, bfloat16, float8, int4/int2 and string tensors, "
    "sequences and optionals, control flow (If, Loop, Scan), training ops, random-number "
    "ops, ops of other domains (ai.onnx.ml, ai.onnx.preview).",
    "- **fail**: a named defect listed in `conformance/known_defects.toml`.",
    "- **crash**: an internal error of onnxcc.",
    "",
    "Committed summaries: `docs/conformance.md` (x86_64) and `docs/conformance-armv7.md` "
    "(Cortex-M4F, in qemu); `report.md` beside `results.json` lists every case.",
    "",
    "Node tests pass an operator's parameters (Slice's starts, Reshape's shape, a "
    "reduction's axes, ...) as graph inputs; exporters write them as constants and onnxcc "
    "specializes its kernels on them, so the runner makes those inputs initializers holding "
    "the test's values (counted below). An op ONNX defines as a function of other ops is "
    "compiled as that function's body, so such a case and its `_expanded` twin test the "
    "same code.",
    "",
    "The onnx wheel ships the node tests as generators (`onnx.backend.test.case.node`, "
    "written out by the runner), `pytorch-converted`, `pytorch-operator` and `simple` as "
    "data, and `real` / `light`: nine full-size networks (AlexNet, ResNet-50, VGG-19, ...) "
    "with placeholder weights and no input data, which the runner does not run.",
]


def load_known_defects(path=KNOWN_DEFECTS):
    with open(path, "rb") as f:
        return tomllib.load(f).get("defect", [])


def tracked_defect(key, defects):
    return next((d for d in defects if any(fnmatch.fnmatchcase(key, p) for p in d["cases"])), None)


def scope_of(op):
    return next((scope for scope, ops in OUT_OF_SCOPE.items() if op in ops), None)


def _short(message):
    """The message without folders and without the list of supported ops."""
    message = re.sub(r" \(supported ops: [^)]*\)", "", message)
    return re.sub(r"(/[^\s/:\[\]]+)+/([^\s/:\[\]]+)", r"\2", message)  # paths: their last part


def classify(key, op, result, defects):
    """(status, reason): status is pass, unsupported, fail or crash."""
    if result["status"] == "pass":
        return "pass", ""
    message = _short(result["message"])
    if "internal error in onnxcc" in message:
        return "crash", message
    for pattern, kind in UNSUPPORTED:
        if re.search(pattern, message):
            scope = scope_of(op)
            prefix = f"out of scope ({scope})" if scope else f"unsupported {kind}"
            return "unsupported", f"{prefix}: {message}"
    defect = tracked_defect(key, defects)
    if defect:
        return "fail", f"known defect '{defect['name']}': {message}"
    return "fail", f"UNTRACKED: {message}"


STATUSES = ("pass", "unsupported", "fail", "crash")


def tally(cases, results, defects):
    """{op: Counter(status)}, [(op, key, status, reason, bound)] for the cases with results."""
    per_op, rows = defaultdict(Counter), []
    for case in cases:
        if case.key not in results:
            continue
        status, reason = classify(case.key, case.op, results[case.key], defects)
        per_op[case.op][status] += 1
        rows.append((case.op, case.key, status, reason, case.bound))
    return per_op, rows


def _count_table(per_op):
    lines = ["| op | pass | unsupported | fail | crash | cases |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
    total = Counter()
    for op in sorted(per_op, key=str.lower):
        c = per_op[op]
        total.update(c)
        lines.append(f"| {op} | " + " | ".join(str(c[s]) for s in STATUSES) + f" | {sum(c.values())} |")
    lines.append("| **total** | " + " | ".join(f"**{total[s]}**" for s in STATUSES)
                 + f" | **{sum(total.values())}** |")
    return lines, total


def summary_markdown(title, suites, per_op_by_suite, rows, intro):
    lines = [f"# {title}", "", *intro, ""]
    grand = Counter()
    for suite in suites:
        per_op = per_op_by_suite.get(suite)
        if not per_op:
            continue
        table, total = _count_table(per_op)
        grand.update(total)
        lines += [f"## Suite `{suite}`: {total['pass']} of {sum(total.values())} pass", "", *table, ""]
    reasons = Counter()
    for _, _, status, reason, _ in rows:
        if status != "pass":
            element_type = re.search(r"element type (\S+)", reason)
            kind = reason.split(":")[0]
            if element_type and "element type" in kind:
                kind = f"{kind}: {element_type[1]}"
            reasons[f"{status}: {kind}"] += 1
    lines += ["## Why cases do not pass", "", "| reason | cases |", "| --- | ---: |"]
    lines += [f"| {r} | {n} |" for r, n in sorted(reasons.items(), key=lambda x: (-x[1], x[0]))]
    bound = sum(1 for *_, status, _, b in rows if status == "pass" and b)
    lines += ["", f"Total: **{grand['pass']} pass**, {grand['unsupported']} unsupported, "
              f"{grand['fail']} fail, {grand['crash']} crash, of {sum(grand.values())} cases; "
              f"{bound} of the passing cases had parameter inputs bound to constants."]
    return "\n".join(lines) + "\n"


def full_markdown(title, rows):
    lines = [f"# {title}", ""]
    by_op = defaultdict(list)
    for op, key, status, reason, bound in rows:
        by_op[op].append((key, status, reason, bound))
    for op in sorted(by_op, key=str.lower):
        lines += [f"## {op}", ""]
        for key, status, reason, bound in sorted(by_op[op]):
            note = f" (bound: {', '.join(bound)})" if bound else ""
            lines.append(f"- `{key}` **{status}**{note}" + (f": {reason}" if reason else ""))
        lines.append("")
    return "\n".join(lines)
