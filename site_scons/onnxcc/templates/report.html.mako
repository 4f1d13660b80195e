<%doc>
  report.html: a build of one model on one target, self-contained (inline SVG and CSS, no
  script, nothing fetched). Every ${...} is HTML-escaped (verbs/html_report.py's default filter).
</%doc>\
<%
    flash = sizes["flash"]
    ram = sizes["ram"]
    def kb(n):
        return human_bytes(n)
    def cost(value, unit):
        if unit == "ns":
            return f"{value / 1000:.1f} us" if value >= 1000 else f"{value:.0f} ns"
        return f"{value:,.0f}"
    def f1(x):
        return "%.1f" % x
    def f2(x):
        return "%.2f" % x
    def f3(x):
        return "%.3f" % x
    bar_total = max([n["kernel_bytes"] / max(1, n["shared"]) + n["weights_bytes"] for n in nodes] + [1])
%>\
<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>onnxcc report: ${name} on ${target}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em auto; max-width: 64em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { padding: 2px 8px; border-bottom: 1px solid #eee; text-align: left; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
code { font-size: 0.9em; }
svg { display: block; margin: 0.5em 0; }
svg text { font: 11px system-ui, sans-serif; }
rect.buffer { stroke: #333; stroke-width: 0.5; fill-opacity: 0.75; }
rect.scratch { fill-opacity: 0.35; stroke-dasharray: 2 2; }
.peak { stroke: #c00; stroke-width: 1.5; }
.bound { stroke: #06c; stroke-width: 1.5; stroke-dasharray: 6 3; }
.live { fill: none; stroke: #080; stroke-width: 1.2; }
.note { color: #666; }
.bar { fill: #4a7bd0; } .bar2 { fill: #e0a030; }
</style>
</head>
<body>
<h1>${name} on ${target}</h1>
<p>From <code>${source}</code> (graph <code>${graph_name}</code>): ${steps} steps,
flash ${kb(flash["total"])}, RAM ${kb(ram["total"])}, arena ${kb(plan["arena_bytes"])}
(lower bound ${kb(plan["lower_bound_bytes"])}; every tensor in memory of its own, in the
graph's order: ${kb(plan["graph_lower_bound_bytes"])}).</p>
% if plan.get("patches"):
<% p = plan["patches"] %>\
<p>Patch-based execution: the first ${p["layers"]} nodes run as ${p["grid"][0]} x ${p["grid"][1]}
patches of <code>${p["join"]}</code> (the steps named <code>...__p<i>k</i></code>, each
patch's piece copied into place by a PatchJoin step): arena ${kb(plan["arena_bytes"])} instead of
${kb(p["arena_bytes_without"])}, for ${"{:,}".format(p["extra_macs"])} more multiply-accumulates
(${"{:.1f}".format(100.0 * p["extra_macs"] / max(1, p["macs"] - p["extra_macs"]))}%) and
${p["kernels"]} patch kernels.</p>
% endif

<section id="memory">
<h2>Memory plan</h2>
<p class="note">Each rectangle is a buffer: across the steps it is live, up from its offset
by its size (dashed: a kernel's scratch). Red: the pool's peak; blue dashes: the liveness
lower bound (the most bytes live at one step, which no placement can beat); green: the bytes
live at each step.</p>
% for t in timelines:
<h3>Pool ${t["pool"]}: ${kb(t["bytes"])} (lower bound ${kb(t["lower_bound"])}, ${t["algorithm"]})</h3>
<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="${WIDTH + 90}" height="${HEIGHT + 40}" viewBox="-80 -10 ${WIDTH + 90} ${HEIGHT + 40}" role="img">
<title>memory timeline of pool ${t["pool"]}</title>
% for r in t["rects"]:
<rect class="buffer${' scratch' if r['scratch'] else ''}" x="${r['x']}" y="${r['y']}" width="${r['w']}" height="${r['h']}" fill="hsl(${r['hue']},60%,60%)"><title>${r["name"]}: ${r["bytes"]} bytes at offset ${r["offset"]}, steps ${r["first"]}..${r["last"]}</title></rect>
% endfor
<polyline class="live" points="${t['live']}"><title>bytes live at each step</title></polyline>
<line class="peak" x1="0" x2="${WIDTH}" y1="${t['peak_y']}" y2="${t['peak_y']}"><title>peak: ${t["bytes"]} bytes</title></line>
<line class="bound" x1="0" x2="${WIDTH}" y1="${t['bound_y']}" y2="${t['bound_y']}"><title>lower bound: ${t["lower_bound"]} bytes</title></line>
<text x="-4" y="${t['peak_y'] + 4}" text-anchor="end">peak ${kb(t["bytes"])}</text>
<text x="-4" y="${HEIGHT}" text-anchor="end">0</text>
<line x1="0" x2="${WIDTH}" y1="${HEIGHT}" y2="${HEIGHT}" stroke="#999"/>
% for tick in t["ticks"]:
<text x="${tick['x']}" y="${HEIGHT + 14}" text-anchor="middle">${tick["step"]}</text>
% endfor
<text x="${WIDTH / 2}" y="${HEIGHT + 28}" text-anchor="middle">step</text>
</svg>
% endfor
</section>

<section id="footprint">
<h2>Flash and RAM</h2>
<table>
<tr><th>category</th><th class="n">bytes</th><th class="n">%</th></tr>
% for c in categories:
<tr><td>${c["section"]} ${c["key"]}</td><td class="n">${c["bytes"]}</td><td class="n">${f1(c["pct"])}</td></tr>
% endfor
<tr><th>flash total</th><th class="n">${flash["total"]}</th><th></th></tr>
<tr><th>RAM total</th><th class="n">${ram["total"]}</th><th></th></tr>
</table>
<h3>By node</h3>
<p class="note">Kernel code and weights (flash) of each step, from the footprint program's
symbols; a kernel several nodes share is drawn split evenly among them. RAM: the arena bytes
live at the step (scratch included).</p>
<svg class="by-node" xmlns="http://www.w3.org/2000/svg" width="${WIDTH + 90}" height="${18 * len(nodes) + 10}" role="img">
<title>flash per node</title>
% for k, n in enumerate(nodes):
<%
    share = n["kernel_bytes"] / max(1, n["shared"])
    w1 = 560 * share / bar_total
    w2 = 560 * n["weights_bytes"] / bar_total
    a, b, c = f2(190), f2(190 + w1), f2(190 + w1 + w2)
    top, bottom = 18 * k + 3, 18 * k + 15
%>\
<text x="0" y="${18 * k + 13}">${n["node"][:28]}</text>
<g><title>${n["node"]}: kernel ${int(share)} bytes, weights ${n["weights_bytes"]} bytes</title>
<polygon class="bar" points="${a},${top} ${b},${top} ${b},${bottom} ${a},${bottom}"/>
<polygon class="bar2" points="${b},${top} ${c},${top} ${c},${bottom} ${b},${bottom}"/>
</g>
% endfor
</svg>
<table>
<tr><th class="n">step</th><th>node</th><th>op</th><th>kernel</th><th class="n">kernel bytes</th><th class="n">weights bytes</th><th class="n">arena live</th><th class="n">scratch</th></tr>
% for n in nodes:
<tr><td class="n">${n["step"]}</td><td>${n["node"]}</td><td>${n["op"]}</td><td><code>${n["kernel"]}</code>${" (shared by %d)" % n["shared"] if n["shared"] > 1 else ""}</td><td class="n">${n["kernel_bytes"]}</td><td class="n">${n["weights_bytes"]}</td><td class="n">${n["live_bytes"]}</td><td class="n">${n["scratch_bytes"]}</td></tr>
% endfor
</table>
</section>

<section id="tactics">
<h2>Tactics</h2>
<p class="note">opt=${tactics.get("opt", "")}; estimated cycles of every candidate (the chosen one in bold).</p>
<table>
<tr><th>node</th><th>op</th><th>tactic</th><th>by</th>
% for c in candidates:
<th class="n">${c}</th>
% endfor
</tr>
% for t in tactics["nodes"]:
<tr><td>${t["node"]}</td><td>${t["op"]}</td><td>${t["tactic"]}</td><td>${t.get("by", "")}</td>
% for c in candidates:
<% est = t.get("estimated_cycles", {}).get(c) %>\
% if est is None:
<td></td>
% elif c == t["tactic"]:
<td class="n"><b>${est}</b></td>
% else:
<td class="n">${est}</td>
% endif
% endfor
</tr>
% endfor
</table>
</section>

<section id="profile">
<h2>Profile</h2>
% if profile:
<%
    unit = profile["unit"]
%>\
<p>Median of ${profile["runs"]} runs on ${profile["target"]} (${unit}${', under qemu -icount' if unit != 'ns' else ''}):
steps sum ${cost(profile["steps_sum"], unit)}, whole inference (uninstrumented)
${cost(profile["total"], unit)}, ratio ${f3(profile["ratio"])}.</p>
<table>
<tr><th class="n">step</th><th>node</th><th>op</th><th>tactic</th><th class="n">MACs</th><th class="n">${'time' if unit == 'ns' else 'instructions'}</th><th class="n">%</th><th></th><th class="n">arena live</th></tr>
% for n in profile["nodes"]:
<tr><td class="n">${n["step"]}</td><td>${n["node"]}</td><td>${n["op"]}</td><td>${n["tactic"]}</td><td class="n">${"{:,}".format(n["macs"])}</td><td class="n">${cost(n["cost"], unit)}</td><td class="n">${f1(100 * n["share"])}</td><td><svg width="120" height="10"><polygon class="bar" points="0,0 ${f2(120 * n["share"])},0 ${f2(120 * n["share"])},10 0,10"/></svg></td><td class="n">${n["live_bytes"]}</td></tr>
% endfor
</table>
% else:
<p class="note">${profile_note or "No profile yet: `scons target=... model=... profile` measures every step on the target and adds it here."}</p>
% endif
</section>

<section id="validate">
<h2>Validation</h2>
% if validation:
<p>${validation["samples"]} samples on ${validation["target"]}: the C model against the models under onnxruntime.</p>
% for out in validation["outputs"]:
<h3>Output ${out["index"]} ${out["name"]} ${out["shape"]}</h3>
% if "accuracy" in out:
<p>Accuracy on the labels: C ${f1(100 * out["accuracy"]["c"])}%, float ${f1(100 * out["accuracy"]["float"])}%${(", int8 " + f1(100 * out["accuracy"]["int8"]) + "%") if "int8" in out["accuracy"] else ""}.</p>
% endif
<table>
<tr><th>against</th><th class="n">top-1 agreement</th><th class="n">rmse</th><th class="n">mae</th><th class="n">l2r</th><th class="n">cosine</th></tr>
% for ref, m in out["against"].items():
<tr><td>${ref}</td><td class="n">${(f1(100 * m["top1_agreement"]) + "%") if "top1_agreement" in m else ""}</td><td class="n">${"%.4g" % m["rmse"]}</td><td class="n">${"%.4g" % m["mae"]}</td><td class="n">${"%.4g" % m["l2r"]}</td><td class="n">${"%.6f" % m["cosine"]}</td></tr>
% endfor
</table>
% endfor
% if validation["layers"]:
<h3>Per layer: int8 against float under onnxruntime, worst first</h3>
<table>
<tr><th>tensor</th><th class="n">l2r</th><th class="n">sqnr dB</th></tr>
% for row in validation["layers"]:
<tr><td>${row["tensor"]}</td><td class="n">${"%.4g" % row["l2r"]}</td><td class="n">${"" if row["sqnr_db"] is None else f1(row["sqnr_db"])}</td></tr>
% endfor
</table>
% endif
% else:
<p class="note">Not validated in this build: `scons target=... model=... data=FOLDER validate` runs a data set on the target and adds its accuracy here.</p>
% endif
</section>
</body>
</html>
