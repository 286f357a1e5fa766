#!/usr/bin/python3
"""Report of bench/propagation: reads a results dir, prints the tables.

Usage: report.py RESULTS_DIR

Files read (written by bench/propagation and propagation_client):
  meta                          key=value lines (versions, load/import times)
  SERVER-prop-N.txt             "i total_us api_us polls status" + "# samples ..." line
  SERVER-null.txt               same, for the null (overhead) samples
  zonecast-full-I-MODE.txt      "total_us api_us polls status"
  zonecast-during-I-MODE.txt    propagation samples taken during full build I
  SERVER-batch-N.txt, SERVER-conc-N.txt   "batch|concurrent key=value ..." lines
Percentiles are nearest-rank; a timed-out or failed sample counts as +inf.
"""
import glob
import math
import os
import re
import sys

SERVERS = ("zonecast", "pdns", "bind")
LABEL = {"zonecast": "zonecast", "pdns": "PowerDNS", "bind": "BIND 9"}
HOW = {"zonecast": "PATCH /client/v4/.../dns_records/{id}",
       "pdns": "PATCH /api/v1/.../zones/Z. (rrset REPLACE)",
       "bind": "RFC 2136 UPDATE over UDP"}
PDNS_BACKEND = {"lmdb": "LMDB", "gpgsql": "gpgsql (PostgreSQL)"}
NULL_HOW = {"zonecast": "GET of the record by id + 1 query",
            "pdns": "GET /api/v1/servers/localhost + 1 query",
            "bind": "SOA query + 1 query"}


def pct(vals, p):
    """Nearest-rank percentile of a sorted list (may hold inf)."""
    if not vals:
        return None
    i = max(0, min(len(vals) - 1, math.ceil(p * len(vals)) - 1))
    return vals[i]


def ms(v, width=8):
    if v is None:
        return "-".rjust(width)
    if v == math.inf:
        return "timeout".rjust(width)
    if v >= 1000:
        return ("%.0f" % v).rjust(width)
    if v >= 100:
        return ("%.1f" % v).rjust(width)
    return ("%.2f" % v).rjust(width)


def read_samples(path):
    """-> dict with totals (ms, sorted, inf for failures), api, lag, polls, footer."""
    if not os.path.exists(path):
        return None
    tot, api, lag, polls, foot = [], [], [], [], {}
    ok = to = err = 0
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                p = line[1:].split()
                foot = {p[i]: p[i + 1] for i in range(0, len(p) - 1, 2)}
                continue
            p = line.split()
            if len(p) < 5:
                continue
            t, a, q, st = float(p[1]) / 1e3, float(p[2]) / 1e3, int(p[3]), p[4]
            if st == "ok":
                ok += 1
                tot.append(t)
                api.append(a)
                lag.append(t - a)
                polls.append(q)
            else:
                to += st == "timeout"
                err += st == "error"
                tot.append(math.inf)
    tot.sort()
    api.sort()
    lag.sort()
    return {"tot": tot, "api": api, "lag": lag, "polls": polls, "ok": ok,
            "timeout": to, "error": err, "foot": foot}


def read_kv(path):
    if not os.path.exists(path):
        return None
    with open(path) as f:
        text = f.read().strip()
    if not text:
        return None
    return dict(kv.split("=", 1) for kv in text.split()[1:] if "=" in kv)


def main():
    res = sys.argv[1]
    meta = {}
    if os.path.exists(os.path.join(res, "meta")):
        for line in open(os.path.join(res, "meta")):
            if "=" in line:
                k, v = line.rstrip("\n").split("=", 1)
                meta[k] = v
    sizes = [int(x) for x in meta.get("sizes", "").split()]
    out = []
    w = out.append

    w("bench/propagation — a record write through the server's interface -> first UDP answer that")
    w("shows it, client time included (raw C client: HTTP/1.1 keep-alive + UDP, tight query loop)")
    vers = ["%s (commit %s, binary sha256 %s)" % (meta.get("zonecast_version", "zonecast ?"),
                                                 meta.get("zonecast_commit", "?"), meta.get("zonecast_sha", "?"))]
    if "pdns_version" in meta:
        vers.append(meta["pdns_version"] + " (%s backend, default caches%s)"
                    % (PDNS_BACKEND.get(meta.get("pdns_backend", "lmdb"), "?"),
                       ", default-api-rectify=no" if meta.get("pdns_api_rectify") == "no" else ""))
    if "bind_version" in meta:
        vers.append(meta["bind_version"].split("(")[0].strip())
    w("; ".join(vers))
    w("machine: %s cores, load average %s before / %s after; run took %s s; started %s"
      % (meta.get("nproc", "?"), meta.get("load_before", "?"), meta.get("load_after", "?"),
         meta.get("wall_s", "?"), meta.get("started", "?")))
    on_pg = [LABEL[s] for s, k in (("zonecast", "zonecast_records"), ("pdns", "pdns_backend"))
             if meta.get(k) in ("postgresql", "gpgsql")]
    if on_pg:
        w("records in PostgreSQL: %s (one dev/pg cluster, a database each, unix socket, fsync on,"
          " synchronous_commit on)" % " and ".join(on_pg))
    if meta.get("zonecast_wait_live") == "1":
        w("zonecast writes with ?wait=live: each response comes once the DNS server serves it")
    for s in SERVERS:
        if s + "_skip" in meta:
            w("NOTE: %s skipped: %s" % (LABEL[s], meta[s + "_skip"]))
    w("")

    # 1. propagation
    w("1. Propagation, ms (nearest-rank; a timed-out sample counts as +inf)")
    w("%-9s %8s %7s %5s %4s %8s %8s %8s %8s | %8s %8s %6s" % (
        "server", "records", "samples", "ok", "t/o", "p50", "p90", "p99", "max",
        "api_p50", "lag_p50", "polls"))
    data = {}
    for s in SERVERS:
        for n in sizes:
            d = read_samples(os.path.join(res, "%s-prop-%d.txt" % (s, n)))
            if d is None:
                continue
            data[(s, n)] = d
            t = d["tot"]
            w("%-9s %8d %7d %5d %4d %s %s %s %s | %s %s %6.1f" % (
                s, n, len(t), d["ok"], d["timeout"] + d["error"], ms(pct(t, .5)), ms(pct(t, .9)),
                ms(pct(t, .99)), ms(t[-1] if t else None), ms(pct(d["api"], .5)),
                ms(pct(d["lag"], .5)), (sum(d["polls"]) / len(d["polls"])) if d["polls"] else 0))
    w("  api = write sent -> its response read; lag = response -> first answer with the new data;")
    w("  polls = queries per sample. Writes: " +
      "; ".join("%s %s" % (LABEL[s], HOW[s]) for s in SERVERS if any(k[0] == s for k in data)))
    for s in ("pdns", "bind"):
        for n in sizes:
            if ("zonecast", n) in data and (s, n) in data:
                z, p = data[("zonecast", n)]["tot"], data[(s, n)]["tot"]
                zp, pp = pct(z, .5), pct(p, .5)
                z9, p9 = pct(z, .99), pct(p, .99)
                if zp and pp and zp != math.inf:
                    w("  %s/zonecast at %d records: p50 %s x, p99 %s" % (
                        LABEL[s], n, "%.2f" % (pp / zp) if pp != math.inf else "inf",
                        ("%.2f x" % (p9 / z9)) if (p9 != math.inf and z9 not in (None, math.inf, 0)) else "-"))
    w("")

    # client overhead
    w("Client overhead (null sample: a read of the same kind as the write, then one query of the")
    w("unchanged record; this is the floor the client and loopback add to every sample), ms")
    w("%-9s %-42s %7s %8s %8s %8s %8s %8s" % ("server", "null sample", "samples", "p50", "p99",
                                            "max", "q_rtt50", "cpu_us"))
    for s in SERVERS:
        d = read_samples(os.path.join(res, "%s-null.txt" % s))
        if d is None:
            continue
        t = d["tot"]
        w("%-9s %-42s %7d %s %s %s %s %8s" % (
            s, NULL_HOW[s], len(t), ms(pct(t, .5)), ms(pct(t, .99)), ms(t[-1] if t else None),
            ms(pct(d["lag"], .5)), d["foot"].get("client_cpu_us_per_sample", "?")))
        if s == "pdns" and d["foot"].get("connects") not in (None, "1"):
            w("  (PowerDNS's webserver closes the connection after each response: %s TCP connects for %d"
              " requests; the handshake is part of its figures)" % (d["foot"]["connects"], len(t)))
    w("  q_rtt50 = one UDP query round trip; cpu_us = client CPU (user+sys) per sample")
    w("")

    # 2. per-record vs full build
    fulls = sorted(glob.glob(os.path.join(res, "zonecast-full-*.txt")))
    if fulls:
        big = sizes[-1] if sizes else 0
        w("2. zonecast per-record vs full build on the %d-record zone" % big)
        d = data.get(("zonecast", big))
        if d:
            w("   per-record change -> visible: p50 %s ms, p99 %s ms (API ack p50 %s ms, ack -> visible p50 %s ms)"
              % (ms(pct(d["tot"], .5), 0), ms(pct(d["tot"], .99), 0), ms(pct(d["api"], .5), 0),
                 ms(pct(d["lag"], .5), 0)))
        for f in fulls:
            m = re.search(r"zonecast-full-(\d+)-(\w+)\.txt", f)
            i, mode = m.group(1), m.group(2)
            line = open(f).read().split()
            if len(line) >= 4:
                w("   full build %s (SOA refresh change -> SOA answer shows it)%s: %s s (API ack %s s, %s)"
                  % (i, {"alone": "", "other": ", per-record writes to the %d-record zone meanwhile" % sizes[0],
                         "same": ", per-record writes to the same zone meanwhile"}[mode],
                     "%.3f" % (float(line[0]) / 1e6), "%.3f" % (float(line[1]) / 1e6), line[3]))
            else:
                w("   full build %s: no result" % i)
            dd = read_samples(os.path.join(res, "zonecast-during-%s-%s.txt" % (i, mode)))
            if dd and dd["tot"]:
                t = dd["tot"]
                w("      per-record samples meanwhile (%s zone): %d, p50 %s, p90 %s, p99 %s, max %s ms; lag p50 %s, max %s ms"
                  % ("other" if mode == "other" else "same", len(t), ms(pct(t, .5), 0), ms(pct(t, .9), 0),
                     ms(pct(t, .99), 0), ms(t[-1], 0), ms(pct(dd["lag"], .5), 0),
                     ms(dd["lag"][-1] if dd["lag"] else None, 0)))
        w("   (peers: no equivalent of a zone-wide rebuild; not measured)")
        w("")

    # 3. throughput
    rows = []
    for s in SERVERS:
        keys = []
        for f in glob.glob(os.path.join(res, "%s-*-*.txt" % s)):
            m = re.match(r"%s-(batch|conc)-([bc]?)(\d+)\.txt$" % s, os.path.basename(f))
            if m:
                plain = m.group(2) == ""
                # run order: fresh small zones batch then concurrent; the large zone
                # concurrent then batch
                keys.append((plain, int(m.group(3)), (m.group(1) == "batch") == plain, m.group(1),
                             m.group(2) + m.group(3)))
        for _, n, _, kind, key in sorted(keys):
            kv = read_kv(os.path.join(res, "%s-%s-%s.txt" % (s, kind, key)))
            if kv:
                rows.append((s, n, kind, kv))
    if rows:
        w("3. Write throughput (record changes per second; acked = until the last response, visible =")
        w("   until the last written record is answered; records = zone size at the start of the test;")
        w("   zb*/zc* are fresh zones for the batch/concurrent tests, the large zone takes both in turn)")
        w("%-9s %-12s %8s %-22s %8s %6s %9s %9s %8s %8s %8s" % (
            "server", "zone", "records", "test", "changes", "errors", "acked/s", "visible/s",
            "req_p50", "req_p99", "req_max"))
        for s, n, kind, kv in rows:
            test = ("batch %sx%s" % (kv.get("batches"), kv.get("size")) if kind == "batch"
                    else "%s threads x 1 record" % kv.get("threads"))
            vis = kv.get("visible_per_s", "?")
            if kv.get("last_visible") != "yes":
                vis = "NOT-SEEN"
            w("%-9s %-12s %8d %-22s %8s %6s %9s %9s %8s %8s %8s" % (
                s, kv.get("zone", "?"), n, test, kv.get("changes"), kv.get("errors"), kv.get("acked_per_s"), vis,
                kv.get("req_p50_ms"), kv.get("req_p99_ms"), kv.get("req_max_ms")))
        w("   batch: zonecast POST .../dns_records/batch {posts}; PowerDNS one PATCH with N rrsets;"
          " BIND one UPDATE over TCP with N adds")
        w("   single: zonecast POST .../dns_records; PowerDNS PATCH of 1 rrset; BIND UPDATE over UDP;"
          " one keep-alive connection per thread (PowerDNS closes it each time)")
        w("")

    # 4. targets
    if any(k[0] == "zonecast" for k in data):
        w("4. Targets of issue 3%s (zonecast, this run)"
          % (" and 17" if meta.get("zonecast_records") == "postgresql" else ""))
        chk = []
        for n in sizes:
            d = data.get(("zonecast", n))
            if d:
                chk.append(("p50 <= 1.5 ms at %d records" % n, pct(d["tot"], .5), 1.5))
                chk.append(("p99 <= 5 ms at %d records" % n, pct(d["tot"], .99), 5.0))
                if meta.get("zonecast_records") == "postgresql" and n >= 1000000:
                    chk.append(("p50 <= 3 ms at %d records on PostgreSQL (issue 17)" % n,
                                pct(d["tot"], .5), 3.0))
        small, large = sizes[0], sizes[-1]
        if large != small and ("zonecast", small) in data and ("zonecast", large) in data:
            a, b = pct(data[("zonecast", small)]["tot"], .5), pct(data[("zonecast", large)]["tot"], .5)
            chk.append(("p50(%d) <= 1.2 x p50(%d)" % (large, small), b / a if a else math.inf, 1.2))
        nd = read_samples(os.path.join(res, "zonecast-null.txt"))
        d = data.get(("zonecast", large))
        if d and nd and nd["lag"]:
            # ack -> visible minus one query round trip: the builder's share, an upper bound
            est = max(0.0, pct(d["lag"], .5) - pct(nd["lag"], .5))
            chk.append(("per-record build <= 0.5 ms (ack->visible p50 - query rtt, %d)" % large, est, 0.5))
        for f in fulls:
            line = open(f).read().split()
            if len(line) >= 4 and f.endswith("-alone.txt"):
                chk.append(("full build <= 5 s (%s)" % os.path.basename(f)[9:-4],
                            float(line[0]) / 1e6 if line[3] == "ok" else math.inf, 5.0))
        for s, n, kind, kv in rows:
            if s == "zonecast" and kind == "batch":
                v = float(kv.get("visible_per_s", 0)) if kv.get("last_visible") == "yes" else 0
                chk.append(("batch >= 100000 changes/s visible (%d records)" % n, v, -100000))
        for name, v, lim in chk:
            ok = (v is not None and v <= lim) if lim >= 0 else (v >= -lim)
            w("   %-62s %12s  %s" % (name, "inf" if v == math.inf else ("%.3f" % v if abs(lim) < 1000 else "%.0f" % v),
                                     "ok" if ok else "MISSED"))
        w("")

    # load times
    w("Load: " + "; ".join(
        "%s %s" % (k.replace("_", " "), v + " s") for k, v in sorted(meta.items())
        if re.match(r"(zonecast_import|zonecast_start|pdns_import|pdns_start|bind_start)", k)))
    rz = [k for k in meta if k.startswith("zonecast_resolve_")]
    if rz:
        w("zonecast record-id lookup of the targets (GET ?name=&type=, or cached id + GET by id): " +
          ", ".join("%s: %s s" % (k.split("_")[-1], meta[k]) for k in sorted(rz, key=lambda k: int(k.split("_")[-1]))))
    lp = os.path.join(res, "zonecast-log-problems.txt")
    if os.path.exists(lp) and os.path.getsize(lp) > 0:
        w("zonecast log warnings/errors (first 20):")
        for line in open(lp):
            w("   " + line.rstrip())
    print("\n".join(out))


if __name__ == "__main__":
    main()
