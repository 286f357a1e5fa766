"""Differential test: zonecast must answer like knotd, query for query.

Both servers load the same zones (zones/); every query of the seeded corpus
from gen_queries.py (>10,000, UDP and a TCP sample) is sent as identical bytes
to both, and the responses are compared field by field: presence, question
echo, opcode, rcode (incl. extended), header flags, OPT presence/version,
section counts, and answer/authority/additional as multisets of RRs (owner
compared case-insensitively, TTL, class, type, RDATA in canonical form). Each
server must also echo the QNAME's case in answer owners equal to the QNAME.
When both responses are truncated (TC) only flags and rcode are compared.
Differences listed in known_differences.py (each with an RFC reason) are
waived; the rest fail the test with a summary of the first 30.
`test_reference_self_consistency` runs the same machinery knotd-vs-knotd, so
the harness itself is shown to produce no false differences.
"""

import os
import re
import socket
import time
from concurrent.futures import ThreadPoolExecutor

import dns.flags
import dns.message
import dns.name
import dns.opcode
import dns.rcode
import dns.rdatatype
import dns.renderer
import dns.rrset
import pytest

import gen_queries
import known_differences

THREADS = 8
MAX_SHOWN = 30


# ---------------------------------------------------------------- sending

def _udp_exchange(sock, wire, attempts=3, timeout=1.0):
    sock.settimeout(timeout)
    for _ in range(attempts):
        sock.send(wire)
        deadline = time.monotonic() + timeout
        while True:
            try:
                resp = sock.recv(65535)
            except (socket.timeout, ConnectionRefusedError):
                break
            if resp[:2] == wire[:2]:
                return resp
            if time.monotonic() > deadline:
                break
    return None


def send_corpus(server, queries, threads=THREADS, max_failures=(50, 20)):
    """Raw responses (bytes, or None for no answer), indexed like queries.

    After max_failures (UDP, TCP) unanswered queries the remaining ones of
    that transport are not sent (they count as unanswered), so a hung or
    broken server cannot stretch the run to many minutes of timeouts."""
    results = [None] * len(queries)
    failures = {False: 0, True: 0}
    budget = {False: max_failures[0], True: max_failures[1]}

    def worker(part):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.connect((server.host, server.port))
            for i in part:
                q = queries[i]
                if failures[q.tcp] >= budget[q.tcp]:
                    continue
                wire = q.wire()
                try:
                    results[i] = (server.exchange(wire, tcp=True, timeout=2.0) if q.tcp
                                  else _udp_exchange(sock, wire))
                except OSError:
                    results[i] = None
                if results[i] is None:
                    failures[q.tcp] += 1

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(worker, [range(t, len(queries), threads) for t in range(threads)]))
    return results


# ---------------------------------------------------------------- comparing

def _rr_key(rrset, rd):
    return (rrset.name.to_text().lower(), rrset.ttl, rrset.rdclass, rrset.rdtype,
            rd.to_digestable().hex())


def _rr_text(rrset, rd):
    return "%s %d %s %s" % (rrset.name, rrset.ttl, dns.rdatatype.to_text(rrset.rdtype),
                            rd.to_text()[:80])


def _section(rrsets):
    rrs = {}
    for rrset in rrsets:
        for rd in rrset:
            key = _rr_key(rrset, rd)
            rrs.setdefault(key, []).append(_rr_text(rrset, rd))
    return rrs


def summarize(query, wire):
    """The comparable facts of one response."""
    if wire is None:
        return {"response": "no response"}
    try:
        m = dns.message.from_wire(wire, one_rr_per_rrset=True)
    except Exception as e:  # noqa: BLE001 -- any parse error is a finding
        return {"response": "unparsable: %s: %s" % (type(e).__name__, e)}
    s = {"response": "ok"}
    q = m.question[0] if len(m.question) == 1 else None
    s["question"] = (None if q is None else
                     (q.name.labels == query.qname.labels and q.rdtype == query.qtype
                      and q.rdclass == query.qclass, q.to_text()))
    s["opcode"] = dns.opcode.to_text(m.opcode())
    s["rcode"] = dns.rcode.to_text(m.rcode())
    s["flags"] = dns.flags.to_text(m.flags)
    s["edns"] = m.edns
    s["tc"] = bool(m.flags & dns.flags.TC)
    s["counts"] = tuple(int.from_bytes(wire[i:i + 2], "big") for i in (4, 6, 8, 10))
    s["answer"] = _section(m.answer)
    s["authority"] = _section(m.authority)
    s["additional"] = _section(m.additional)
    bad_case = [rrset.name.to_text() for rrset in m.answer
                if rrset.name == query.qname and rrset.name.labels != query.qname.labels]
    s["qname_case"] = "ok" if not bad_case else "owner %s for qname %s" % (
        bad_case[0], query.qname)
    return s


def _fmt_section(keys, rrs):
    return "; ".join(rrs[k][0] + (" (x%d)" % len(rrs[k]) if len(rrs[k]) > 1 else "")
                     for k in sorted(keys)) or "-"


def compare(query, wire_a, wire_b):
    """List of (field, value_a, value_b) where the two responses differ."""
    a, b = summarize(query, wire_a), summarize(query, wire_b)
    if a["response"] != "ok" or b["response"] != "ok":
        return [] if a == b else [("response", a["response"], b["response"])]
    fields = ["question", "opcode", "rcode", "flags", "edns", "qname_case"]
    if a["tc"] and b["tc"]:
        fields = ["opcode", "rcode", "flags"]
    diffs = [(f, a[f], b[f]) for f in fields if a[f] != b[f]]
    if a["tc"] and b["tc"]:
        return diffs
    for sec in ("answer", "authority", "additional"):
        ka, kb = a[sec], b[sec]
        if sorted((k, len(v)) for k, v in ka.items()) != sorted((k, len(v)) for k, v in kb.items()):
            # RRs present on one side only, or present with a different multiplicity
            only_a = {k for k in ka if len(ka[k]) != len(kb.get(k, ()))}
            only_b = {k for k in kb if len(kb[k]) != len(ka.get(k, ()))}
            diffs.append((sec, _fmt_section(only_a, ka), _fmt_section(only_b, kb)))
    if a["counts"] != b["counts"] and not any(d[0] in ("answer", "authority", "additional", "edns")
                                              for d in diffs):
        diffs.append(("counts", a["counts"], b["counts"]))
    return diffs


# ---------------------------------------------------------------- allowlist

def _check_allowlist(entries):
    for e in entries:
        assert re.search(r"RFC ?\d+", e.get("reason", "")), \
            "known difference without an RFC reason: %r" % (e,)
        assert set(e) <= {"qname", "qtype", "field", "transport", "reason"}, e
        re.compile(e.get("qname") or ".*")


def _waived(query, field, entries):
    for e in entries:
        if e.get("qname") and not re.fullmatch(e["qname"], query.qname.to_text().lower()):
            continue
        if e.get("qtype") and dns.rdatatype.from_text(e["qtype"]) != query.qtype:
            continue
        if e.get("field") and e["field"] != field:
            continue
        if e.get("transport") and e["transport"] != ("tcp" if query.tcp else "udp"):
            continue
        return True
    return False


def differential(server_a, server_b, queries, entries=()):
    """Run queries against both, return (report lines, number of differing queries)."""
    t0 = time.monotonic()
    ra = send_corpus(server_a, queries)
    rb = send_corpus(server_b, queries)
    elapsed = time.monotonic() - t0
    lines, bad, by_field, by_cat = [], 0, {}, {}
    for q, wa, wb in zip(queries, ra, rb):
        diffs = [d for d in compare(q, wa, wb) if not _waived(q, d[0], entries)]
        if not diffs:
            continue
        bad += 1
        by_cat[q.category] = by_cat.get(q.category, 0) + 1
        for d in diffs:
            by_field[d[0]] = by_field.get(d[0], 0) + 1
        if bad <= MAX_SHOWN:
            lines.append(q.describe())
            for field, va, vb in diffs:
                lines.append("    %-10s %s: %s\n    %-10s %s: %s"
                             % (field, server_a.kind, va, "", server_b.kind, vb))
    header = ["%d of %d queries differ (%.1fs to send both runs)" % (bad, len(queries), elapsed),
              "by field: " + ", ".join("%s %d" % kv for kv in sorted(by_field.items())),
              "by category: " + ", ".join("%s %d" % kv for kv in sorted(by_cat.items())),
              "first %d:" % min(bad, MAX_SHOWN)]
    return header + lines, bad


@pytest.fixture(scope="module")
def corpus():
    return gen_queries.generate()


# ---------------------------------------------------------------- tests

def test_corpus_is_large_and_deterministic(corpus):
    assert len(corpus) >= 10000
    again = gen_queries.generate()
    assert [q.wire() for q in corpus[:500]] == [q.wire() for q in again[:500]]
    cats = {q.category for q in corpus}
    assert {"existing", "ent", "nxdomain", "wildcard", "below-cut", "at-cut", "dname",
            "out-of-zone", "ds"} <= cats
    assert any(q.tcp for q in corpus) and any(q.edns is None for q in corpus)
    assert any(q.qname.labels != q.qname.canonicalize().labels for q in corpus)


def test_known_differences_are_justified():
    _check_allowlist(known_differences.KNOWN_DIFFERENCES)


def test_comparator_catches_ttl_rdata_case_and_flag_changes():
    q = gen_queries.Query(1, dns.name.from_text("WwW.example.com."), dns.rdatatype.A, 1,
                          0, 1232, False, False, False, "unit")

    def resp(ttl=300, addr="192.0.2.80", owner="WwW.example.com.", aa=True, tc=False):
        flags = dns.flags.QR | (dns.flags.AA if aa else 0) | (dns.flags.TC if tc else 0)
        r = dns.renderer.Renderer(id=1, flags=flags)
        r.add_question(q.qname, q.qtype)
        r.compress.clear()  # keep the owner's own case instead of a pointer to the qname
        if not tc:
            r.add_rrset(dns.renderer.ANSWER, dns.rrset.from_text(owner, ttl, "IN", "A", addr))
        r.write_header()
        return r.get_wire()

    base = resp()
    assert compare(q, base, resp()) == []
    assert [d[0] for d in compare(q, base, resp(ttl=299))] == ["answer"]
    assert [d[0] for d in compare(q, base, resp(addr="192.0.2.81"))] == ["answer"]
    assert [d[0] for d in compare(q, base, resp(owner="www.example.com."))] == ["qname_case"]
    assert [d[0] for d in compare(q, base, resp(aa=False))] == ["flags"]
    assert [d[0] for d in compare(q, base, None)] == ["response"]
    assert compare(q, resp(tc=True), resp(tc=True)) == []


def test_reference_self_consistency(knotd, knotd_factory, corpus):
    """knotd vs a second knotd: the harness must report nothing.

    Uses every 4th query unless ZONECAST_DIFF_FULL_SELFTEST=1."""
    other = knotd_factory()
    step = 1 if os.environ.get("ZONECAST_DIFF_FULL_SELFTEST") == "1" else 4
    lines, bad = differential(knotd, other, corpus[::step])
    assert bad == 0, "\n".join(lines)


def test_zonecast_matches_knotd(zonecast, knotd, corpus):
    entries = known_differences.KNOWN_DIFFERENCES
    _check_allowlist(entries)
    lines, bad = differential(zonecast, knotd, corpus, entries)
    assert bad == 0, "\n".join(lines)
