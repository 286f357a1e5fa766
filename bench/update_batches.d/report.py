#!/usr/bin/python3
"""bench/update_batches.d/report.py RESULTS_DIR -- the update_batches report.

Reads results/meta, t1-SERVER-B-RUN.txt (batches.py lines) and
t2-SERVER-B.txt (update_client lines), all "key=value ..." lines.
"""
import os
import re
import statistics
import sys

res = sys.argv[1]


def kv(path):
    try:
        line = open(path).read().strip().splitlines()[-1]
    except (OSError, IndexError):
        return None
    return dict(f.split("=", 1) for f in line.split() if "=" in f)


meta = {}
for line in open(os.path.join(res, "meta")):
    k, _, v = line.rstrip("\n").partition("=")
    meta[k] = v

servers = meta.get("servers", "zonecast bind knot").split()
sizes = [int(b) for b in meta.get("sizes", "").split()]
runs = int(meta.get("runs", "1"))
records = int(meta.get("records", "0"))


def fnum(x, d=0):
    if x is None:
        return "-"
    return "{:,.{d}f}".format(x, d=d)


def t1_cell(s, b):
    """-> (seconds, serial, updates_per_s, mark, note) from the median run."""
    rows = []
    notes = []
    for r in range(1, runs + 1):
        d = kv(os.path.join(res, "t1-%s-%d-%d.txt" % (s, b, r)))
        if d is None:
            continue
        st = d.get("status", "error")
        if st == "skip":
            return None, None, None, "", "skip"
        if st in ("ok", "incomplete") and float(d.get("updates_per_s", 0)) > 0:
            rows.append(d)
        else:
            notes.append(d.get("error", "") or d.get("rcodes", "") or st)
    if not rows:
        return None, None, None, "", "error " + (notes[0] if notes else "no result")
    rows.sort(key=lambda d: float(d["updates_per_s"]))
    m = rows[(len(rows) - 1) // 2] if len(rows) % 2 == 0 else rows[len(rows) // 2]
    ups = statistics.median(float(d["updates_per_s"]) for d in rows)
    mark = "*" if m.get("status") == "incomplete" else ""
    if m.get("status") == "incomplete":
        notes.append("%s of %s messages in %ss" % (m.get("ok_messages"), m.get("messages"), m.get("seconds")))
    sa, sf, lv = m.get("serial_at_ack"), m.get("serial"), float(m.get("last_visible_ms", "0"))
    if sa != sf or lv > 5 or lv < 0:
        notes.append("serial %s right after the last ack, %s later; last record answered %s" % (
            sa, sf, "%.1f ms after its ack" % lv if lv >= 0 else "NOT within 10 s"))
    if int(m.get("errors", "0")) and m.get("status") != "incomplete":
        notes.append("errors %s (%s)" % (m["errors"], m.get("rcodes")))
    return float(m["seconds"]), m.get("serial"), ups, mark, "; ".join(notes)


out = []
p = out.append
p("zonecast / BIND / Knot: RFC 2136 UPDATE throughput by batch size (bench/update_batches)")
p("started %s, %s cores, load average %s before, %s after, wall %s s, workers %s" % (
    meta.get("started"), meta.get("nproc"), meta.get("load_before"), meta.get("load_after"),
    meta.get("wall_s"), meta.get("workers")))
for s in servers:
    if "version_" + s in meta:
        p("  %-8s %s" % (s, meta["version_" + s]))
    if "skip_" + s in meta:
        p("  %-8s SKIPPED: %s" % (s, meta["skip_" + s]))
p("")

if sizes and any(os.path.exists(os.path.join(res, "t1-%s-%d-1.txt" % (s, sizes[0]))) for s in servers):
    p("Table 1: %s TSIG-signed (hmac-sha256) A-record additions per run, one UPDATE message after the" % fnum(records))
    p("other over ONE TCP connection (dnspython %s, its build+sign time included); a fresh serial-1 zone" % meta.get("dnspython"))
    p("and a freshly started server for every batch size and server; %s run(s), median; budget %s s per run" % (runs, meta.get("budget")))
    p("(* = stopped at the budget: rate of the part done).")
    p("")
    hdr = "%6s %7s" % ("batch", "msgs")
    for s in servers:
        hdr += " | %-28s" % ("%s: s, serial, upd/s" % s)
    ratios = [o for o in ("bind", "knot") if o in servers and "zonecast" in servers]
    for o in ratios:
        hdr += " | zc/%-4s" % o
    p(hdr)
    notes = []
    for b in sizes:
        line = "%6d %7s" % (b, fnum((records + b - 1) // b))
        ups = {}
        for s in servers:
            secs, serial, u, mark, note = t1_cell(s, b)
            ups[s] = u
            if u is None:
                cell = note.split(" ")[0]
                if note.startswith("error"):
                    notes.append("%s B=%d: %s" % (s, b, note))
            else:
                cell = "%8s%1s %8s %9s%1s" % (fnum(secs, 2), mark, serial, fnum(u), mark)
                if note:
                    notes.append("%s B=%d: %s" % (s, b, note))
            line += " | %-28s" % cell
        for o in ratios:
            line += " | %7s" % (("%.2f" % (ups["zonecast"] / ups[o])) if ups.get("zonecast") and ups.get(o) else "-")
        p(line)
    for n in notes:
        p("  note: " + n)
    p("")

c_runs = int(meta.get("c_runs", "1"))


def t2_median(s, b):
    """median run (by updates/s) of table 2, with every run's updates/s"""
    ds = [kv(os.path.join(res, "t2-%s-%d-%d.txt" % (s, b, r))) for r in range(1, c_runs + 1)]
    ds = [d for d in ds if d is not None]
    if not ds:
        return None
    good = [d for d in ds if "updates_per_s" in d]
    if not good:
        return ds[0]
    good.sort(key=lambda d: float(d["updates_per_s"]))
    m = dict(good[(len(good) - 1) // 2])
    m["all_runs"] = "/".join(fnum(float(d["updates_per_s"])) + ("*" if d.get("status") == "incomplete" else "")
                             for d in ds if "updates_per_s" in d)
    if len(good) % 2 == 0:   # even count: mean of the two middle rates
        m["updates_per_s"] = str((float(good[len(good) // 2 - 1]["updates_per_s"]) + float(good[len(good) // 2]["updates_per_s"])) / 2)
    return m


t2 = [(s, b, t2_median(s, b)) for s in servers for b in (1, 500)]
t2 = [x for x in t2 if x[2] is not None]
if t2:
    p("Table 2: bench/update_client (C, epoll, TSIG hmac-sha256 per message, rcode and response MAC checked), fresh")
    p("zone and server per run; %d run(s) round robin, the median run shown (all runs' updates/s last);" % c_runs)
    p("latency = message written -> its response read; serial@end = SOA serial right after the last response,")
    p("serial = after the last record was answered, 'last vis' ms after the end (-1: not within 10 s).")
    p("")
    p("%-9s %5s %11s %8s %8s %10s %9s %8s %8s %7s %10s %7s %8s  %s" % (
        "server", "batch", "conns x dep", "records", "seconds", "updates/s", "msgs/s", "p50 ms", "p99 ms",
        "errors", "serial@end", "serial", "last vis", "rcodes / runs"))
    best = {}
    for s, b, d in t2:
        if d.get("status") in ("skip", "error") and "updates_per_s" not in d:
            p("%-9s %5d  %s" % (s, b, "skipped" if d.get("status") == "skip" else "ERROR " + d.get("error", "")))
            continue
        mark = "*" if d.get("status") == "incomplete" else ""
        best[(s, b)] = float(d["updates_per_s"])
        p("%-9s %5d %11s %8s %8s%1s %9s%1s %9s %8s %8s %7s %10s %7s %8s  %s%s" % (
            s, b, "%s x %s" % (d["conns"], d["depth"]), fnum(int(d["records"])), d["seconds"], mark,
            fnum(float(d["updates_per_s"])), mark, fnum(float(d["msgs_per_s"])), d["p50_ms"], d["p99_ms"],
            d["errors"], d.get("serial_at_end", "-"), d.get("serial", "-"), d.get("last_visible_ms", "-"),
            d.get("rcodes", "") + "  [" + d.get("all_runs", "") + "]", " SERVER DIED" if d.get("server_died") else ""))
    for o in ("bind", "knot"):
        r = []
        for b in (1, 500):
            if best.get(("zonecast", b)) and best.get((o, b)):
                r.append("batch %d %.2f" % (b, best[("zonecast", b)] / best[(o, b)]))
        if r:
            p("ratio zonecast/%s updates/s: %s" % (o, ", ".join(r)))
    for b, target in ((1, 20000), (500, 100000)):
        if ("zonecast", b) in best:
            v = best[("zonecast", b)]
            p("target zonecast batch %d: >= %s updates/s: %s (%s)" % (b, fnum(target), "MET" if v >= target else "not met", fnum(v)))
print("\n".join(out))
