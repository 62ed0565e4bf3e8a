# The HTML report of a kernel-test run: outcomes per test and device, simulated cycles.
# SPDX-License-Identifier: Apache-2.0
"""One self-contained HTML file (no scripts, no external assets), for CI artifacts."""
import datetime
import html
import pathlib

_STYLE = """body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}
td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}
.passed{color:#060}.failed{color:#b00;font-weight:bold}.skipped{color:#888}
pre{white-space:pre-wrap;margin:0;font-size:.85em}"""


def _row(cells):
    return "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


def write(path, results, records, devices):
    """Writes the report of `results` (plugin.py's per-test dicts) and `records` (expect_cycles')
    to `path`."""
    esc = html.escape
    counts = {k: sum(r["outcome"] == k for r in results) for k in ("passed", "failed", "skipped")}
    out = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>TL kernel tests</title>",
           f"<style>{_STYLE}</style></head><body><h1>TL kernel tests</h1>",
           f"<p>{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}; devices: "
           f"{esc(', '.join(devices))}; {counts['passed']} passed, {counts['failed']} failed, "
           f"{counts['skipped']} skipped</p>"]
    if records:
        out.append("<h2>Simulated cycles</h2><table><tr><th>kernel</th><th>device</th>"
                   "<th>cycles</th><th>baseline</th><th>change</th><th>roofline</th>"
                   "<th>status</th></tr>")
        for r in records:
            base = r["baseline"]
            change = f"{100.0 * (r['cycles'] - base) / base:+.1f}%" if base else "-"
            frac = r.get("roofline_fraction")
            out.append(_row([esc(r["name"]), esc(r["device"]), r["cycles"],
                             "-" if base is None else base, change,
                             "-" if frac is None else f"{frac:.3f}",
                             f"<span class='{r['status']}'>{r['status']}</span>"]))
        out.append("</table>")
    out.append("<h2>Tests</h2><table><tr><th>test</th><th>device</th><th>outcome</th>"
               "<th>seconds</th><th>message</th></tr>")
    for r in results:
        out.append(_row([esc(r["test"]), esc(str(r["device"] or "-")),
                         f"<span class='{r['outcome']}'>{r['outcome']}</span>",
                         f"{r['duration']:.2f}", f"<pre>{esc(r['message'] or '')}</pre>"]))
    out.append("</table></body></html>\n")
    p = pathlib.Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text("\n".join(out))
