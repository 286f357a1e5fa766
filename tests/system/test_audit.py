"""Audit lines and log targets (issue 14; docs/operations.md "Logs").

Every accepted write logs one line at info with who, from where, what and
the result: the API (token id, client, zone, operation, record ids, new
version) and UPDATE (key, client, zone, added/deleted, serial); every
refusal too (TSIG failure, address lists, key policy, quarantine, bad
token, transfers, a secondary refusing our NOTIFY), at most 50 a second
with the rest counted. The same lines go as JSON objects (log-format json),
to syslog (RFC 3164 datagrams) and to the journal (native protocol, fields
ZONECAST_*), read here from real sockets the test binds.
"""

import json
import re
import socket
import subprocess
import time

import dns.name
import dns.query
import dns.rcode
import dns.tsig
import dns.update
import pytest

import servers
from conftest import UPDATE_SOURCE

WAIT = 10.0 * servers.TIMEOUT_SCALE


def wait_for(cond, what, timeout=WAIT):
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            pytest.fail("timed out after %.1fs waiting for %s" % (timeout, what))
        time.sleep(0.05)


def audit_lines(text, what, outcome):
    return [l for l in text.splitlines() if "audit: %s %s" % (what, outcome) in l]


def fields(line):
    """key=value pairs of a text audit line (values may be quoted)."""
    out = {}
    for m in re.finditer(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)', line):
        v = m.group(2)
        if v.startswith('"'):
            v = re.sub(r'\\(.)', r'\1', v[1:-1])
        out[m.group(1)] = v
    return out


def update(srv, zone, name, key=None, source="127.0.0.1", tcp=True):
    """One UPDATE adding name A (signed with key); the response's rcode
    (read from the header: a refused TSIG answer is not dnspython's to
    verify)."""
    u = dns.update.UpdateMessage(zone)
    u.add(name, 300, "A", "192.0.2.33")
    if key is not None:
        u.use_tsig(key.key)
    resp = servers.exchange_from("127.0.0.1", srv.port, u.to_wire(), tcp=tcp,
                                 source=source)
    assert resp is not None, "no answer"
    return resp[3] & 0x0f


@pytest.fixture(scope="module")
def srv(zonecast_dyn):
    return zonecast_dyn


def test_update_accepted_and_refused(srv):
    key = srv.tsig_create("audit.key.", "example.net.")
    assert update(srv, "example.net.", "signed.example.net.", key=key) == dns.rcode.NOERROR
    line = wait_for(lambda: audit_lines(srv.log(), "update", "accepted"), "the line")[-1]
    f = fields(line)
    assert f["zone"] == "example.net." and f["key"] == "audit.key."
    assert f["client"].startswith("127.0.0.1#") and f["transport"] == "tcp"
    assert f["added"] == "1" and f["deleted"] == "0" and f["changed"] == "yes"
    assert int(f["serial"]) > 0
    assert " info: " in line

    # unsigned from an address not in allow-update
    assert update(srv, "example.net.", "x.example.net.") == dns.rcode.REFUSED
    # a wrong secret (BADSIG), a key of no one (BADKEY)
    wrong = key.with_secret("c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0", workdir=srv.workdir)
    assert update(srv, "example.net.", "y.example.net.", key=wrong) == dns.rcode.NOTAUTH
    unknown = servers.TsigKey("nobody.key.", key.algorithm, key.secret)
    assert update(srv, "example.net.", "z.example.net.", key=unknown) == dns.rcode.NOTAUTH
    # a key of another zone
    assert update(srv, "example.com.", "k.example.com.", key=key) == dns.rcode.REFUSED
    lines = audit_lines(srv.log(), "update", "refused")
    reasons = [fields(l)["reason"] for l in lines]
    assert "unsigned, and the client is not in allow-update" in reasons
    assert any(r.startswith("BADSIG: the MAC does not verify") for r in reasons), reasons
    assert "BADKEY: no key of that name" in reasons
    assert "the key belongs to another zone" in reasons
    bad_key = [fields(l) for l in lines if "BADKEY" in l][-1]
    assert bad_key["key"] == "nobody.key." and bad_key["rcode"] == "NOTAUTH"
    assert bad_key["tsig_error"] == "BADKEY"
    assert bad_key["client"].startswith("127.0.0.1#")


def test_update_policy_refusal(srv):
    key = srv.tsig_create("narrow.key.", "example.net.", grants=["name:host.example.net:A"])
    assert update(srv, "example.net.", "other.example.net.", key=key) == dns.rcode.REFUSED
    line = wait_for(lambda: [l for l in audit_lines(srv.log(), "update", "refused")
                             if "narrow.key." in l], "the policy refusal")[-1]
    assert fields(line)["reason"] == "outside the key's grants"


def test_api_writes_and_refusals(srv):
    api = srv.client()
    token_id = None
    zid = api.zone_id("example.net")
    r = api.ok("POST", "/zones/%s/dns_records" % zid,
               json={"name": "api1.example.net", "type": "A", "content": "192.0.2.44"})
    rid = r["result"]["id"]
    line = wait_for(lambda: [l for l in audit_lines(srv.log(), "api", "accepted")
                             if rid in l], "the API line")[-1]
    f = fields(line)
    token_id = int(f["token"])
    assert token_id > 0
    assert f["client"].startswith("127.0.0.1#") and f["zone"] == "example.net."
    assert f["operation"] == "POST /client/v4/zones/%s/dns_records" % zid
    assert f["ids"] == rid and f["status"] == "200" and int(f["version"]) > 0

    batch = api.ok("POST", "/zones/%s/dns_records/batch" % zid, json={
        "posts": [{"name": "b%d.example.net" % i, "type": "A", "content": "192.0.2.%d" % i}
                  for i in range(3)]})
    ids = [p["id"] for p in batch["result"]["posts"]]
    line = wait_for(lambda: [l for l in audit_lines(srv.log(), "api", "accepted")
                             if "/batch" in l], "the batch line")[-1]
    assert fields(line)["ids"] == ",".join(ids) and int(fields(line)["version"]) > 0
    # a delete names the record it deleted
    api.ok("DELETE", "/zones/%s/dns_records/%s" % (zid, rid))
    line = wait_for(lambda: [l for l in audit_lines(srv.log(), "api", "accepted")
                             if l.count(rid) >= 2 and "DELETE" in l], "the delete line")[-1]
    assert fields(line)["ids"] == rid

    # a bad token, a read-only token writing
    bad = servers.ApiClient(srv.api_url, "zc_not_a_token")
    assert bad.call("DELETE", "/zones/%s/dns_records/%s" % (zid, rid)).status_code == 401
    ro = servers.ApiClient(srv.api_url, srv.create_token(read_only=True))
    assert ro.call("POST", "/zones/%s/dns_records" % zid,
                   json={"name": "ro.example.net", "type": "A",
                         "content": "192.0.2.1"}).status_code == 403
    refused = [fields(l) for l in audit_lines(srv.log(), "api", "refused")]
    assert any(f["status"] == "401" and f["token"] == "0" and "invalid token" in f["reason"]
               for f in refused), refused
    assert any(f["status"] == "403" and "read-only" in f["reason"] and f["token"] != "0"
               for f in refused), refused
    # reads are not audited
    api.get("/zones/%s/dns_records" % zid)
    assert not [l for l in srv.log().splitlines() if "audit: api" in l and "GET" in l]


def test_writes_refused_before_their_handler_are_audited(zonecast_api_factory):
    """A write answered with an error is audited as refused, also when it is
    answered before any handler: a Content-Length over api-max-body (413
    before the body), a chunked body over it (413 at its end), ambiguous
    framing (400). They were answered and not audited."""
    from test_api_head import exchange, request
    s = zonecast_api_factory(options=[("api-max-body", "1024")])
    token = s.create_token()
    big = request("POST", "/zones", token=token, body=b" " * 5000)
    chunked = request("POST", "/user/tokens", token=token,
                      headers=["Transfer-Encoding: chunked"]) \
        + b"5dc\r\n" + b" " * 1500 + b"\r\n0\r\n\r\n"
    framing = request("PATCH", "/zones/1", token=token,
                      headers=["Content-Length: 2", "Transfer-Encoding: chunked"]) \
        + b"0\r\n\r\n"
    for raw, status, op in ((big, 413, "POST /client/v4/zones"),
                            (chunked, 413, "POST /client/v4/user/tokens"),
                            (framing, 400, "PATCH /client/v4/zones/1")):
        answer = exchange(s, raw)
        assert answer.startswith(b"HTTP/1.1 %d " % status), answer[:200]
        line = wait_for(lambda: [l for l in audit_lines(s.log(), "api", "refused")
                                 if fields(l).get("operation") == op], op)[-1]
        f = fields(line)
        assert f["status"] == str(status) and f["reason"], f


def test_transfer_refused(srv):
    with pytest.raises(Exception):
        list(dns.query.xfr("127.0.0.1", "example.com.", port=srv.port, source="127.0.0.1"))
    line = wait_for(lambda: audit_lines(srv.log(), "transfer", "refused"), "the line")[-1]
    f = fields(line)
    assert f["zone"] == "example.com." and f["kind"] == "AXFR"
    assert f["reason"] == "unsigned, not in allow-transfer" and f["client"].startswith("127.0.0.1#")


def test_signed_query_refused(srv):
    """A query signed with a key the server does not know (a secondary's
    SOA check with a stale key): NOTAUTH, and an audit line."""
    key = servers.TsigKey("stale.key", "hmac-sha256", "c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0")
    q = servers.make_query("example.com.", "SOA")
    q.use_tsig(key.key)
    resp = servers.exchange_from("127.0.0.1", srv.port, q.to_wire(), tcp=True)
    assert resp is not None and resp[3] & 0x0f == dns.rcode.NOTAUTH
    line = wait_for(lambda: [l for l in audit_lines(srv.log(), "transfer", "refused")
                             if "kind=query" in l], "the line")[-1]
    f = fields(line)
    assert f["zone"] == "example.com." and f["key"] == "stale.key."
    assert f["tsig_error"] == "BADKEY" and f["reason"] == "BADKEY: no key of that name"


def odd_name(last):
    """A 255-octet name of odd octets: 1000 characters as text (\000...)."""
    lab = b"\x00" * 63
    return dns.name.Name([lab, lab, lab, last * 61, b""])


@pytest.mark.parametrize("signed", [True, False])
def test_long_names_leave_no_field_out(srv, signed):
    """An UPDATE over UDP naming its zone and key with odd octets (each
    name 1000 characters as text): the line has every field, the client's
    address first of all; names that do not fit are shortened, with their
    length. The fields shared 1536 octets: client, rcode, tsig_error and
    reason were left out, the key cut mid-escape (outside tester 19)."""
    u = dns.update.UpdateMessage(odd_name(b"\x00"))
    u.add(odd_name(b"\x00"), 300, "A", "192.0.2.1")
    if signed:
        u.use_tsig(dns.tsig.Key(odd_name(b"\x01"), b"0123456789abcdef" * 2,
                                "hmac-sha256"))
    resp = servers.exchange_from("127.0.0.1", srv.port, u.to_wire(), tcp=False,
                                 source="127.0.0.1")
    assert resp is not None
    line = wait_for(lambda: [l for l in audit_lines(srv.log(), "update", "refused")
                             if "\\000" in l and ("tsig_error=" in l) == signed],
                    "the line")[-1]
    assert "truncated" not in line
    f = fields(line)
    assert f["client"].startswith("127.0.0.1#"), f
    assert f["rcode"] == "NOTAUTH" and f["reason"], f
    if not signed:   # it fits whole
        assert f["key"] == "-" and f["transport"] == "udp", f
        assert f["zone"] == odd_name(b"\x00").to_text(), f
        return
    assert f["tsig_error"] == "BADKEY", f
    for k in ("zone", "key"):
        assert f[k].startswith("\\000") and f[k].endswith("…(1004 octets)"), f
        shown = f[k][:-len("…(1004 octets)")]
        assert len(shown.replace(".", "")) % 4 == 0 and len(shown) >= 64  # whole \DDD


def test_api_long_zone_name_keeps_ids_and_version(srv):
    """An accepted API write to a zone whose name is long as text (escaped
    octets): the line keeps the version and every id whole, with "+N more"
    past 20. The version was left out and ids cut inside an id."""
    api = srv.client()
    lab = "\\032" * 63
    name = ".".join([lab, lab, lab, "\\033" * 40, "test"])
    zid = api.ok("POST", "/zones", json={"name": name})["result"]["id"]
    r = api.ok("POST", "/zones/%s/dns_records/batch" % zid, json={
        "posts": [{"type": "TXT", "name": name, "content": '"v%d"' % i, "ttl": 300}
                  for i in range(25)]})
    ids = [p["id"] for p in r["result"]["posts"]]
    line = wait_for(lambda: [l for l in audit_lines(srv.log(), "api", "accepted")
                             if "/%s/dns_records/batch" % zid in l], "the line")[-1]
    f = fields(line)
    assert int(f["version"]) > 0 and f["status"] == "200", f
    assert f["ids"] == ",".join(ids[:20]) + ",+5 more", f
    assert f["zone"].endswith(" octets)") and f["client"].startswith("127.0.0.1#"), f
    api.ok("DELETE", "/zones/%s" % zid)


def test_every_update_refusal_is_audited(srv):
    """NOTZONE and the prerequisite failures (RFC 2136 §3.2) are refusals
    too: each has its line with the rcode. They had none (outside tester
    19)."""
    def send(u):
        resp = servers.exchange_from("127.0.0.1", srv.port, u.to_wire(), tcp=True,
                                     source=UPDATE_SOURCE)
        assert resp is not None
        return resp[3] & 0x0f
    cases = []
    u = dns.update.UpdateMessage("example.net.")
    u.add("outside.example.org.", 300, "A", "192.0.2.1")
    cases.append((u, dns.rcode.NOTZONE, "outside"))
    u = dns.update.UpdateMessage("example.net.")
    u.present("nxrrset.example.net.", "A")
    u.add("nxrrset.example.net.", 300, "A", "192.0.2.1")
    cases.append((u, dns.rcode.NXRRSET, "NXRRSET"))
    u = dns.update.UpdateMessage("example.net.")
    u.absent("example.net.")
    u.add("yxdomain.example.net.", 300, "A", "192.0.2.1")
    cases.append((u, dns.rcode.YXDOMAIN, "YXDOMAIN"))
    u = dns.update.UpdateMessage("example.net.")
    u.present("nxdomain.example.net.")
    u.add("nxdomain.example.net.", 300, "A", "192.0.2.1")
    cases.append((u, dns.rcode.NXDOMAIN, "NXDOMAIN"))
    for u, rcode, name in cases:
        before = len(audit_lines(srv.log(), "update", "refused"))
        assert send(u) == rcode, name
        line = wait_for(lambda: audit_lines(srv.log(), "update", "refused")[before:],
                        "the %s line" % name)[-1]
        f = fields(line)
        assert f["rcode"] == dns.rcode.to_text(rcode) and f["zone"] == "example.net.", f
        assert f["client"].startswith(UPDATE_SOURCE + "#") and f["reason"], f


def _refusal_burst(srv, n):
    """n unsigned UPDATEs from outside allow-update, each REFUSED."""
    u = dns.update.UpdateMessage("example.net.")
    u.add("flood.example.net.", 300, "A", "192.0.2.1")
    wire = u.to_wire()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(2)
        for _ in range(n):
            s.sendto(wire, ("127.0.0.1", srv.port))
            s.recv(512)


def test_refusals_limited_and_counted(zonecast_factory, tmp_path):
    """300 refused UPDATEs in a burst at the default audit-refusal-rate
    (50): at most 50 lines a second, and a later line says how many were
    left out. A reload to 0 writes every one."""
    out = subprocess.run([servers.zonecast_bin(), "check-config", "--keys"], check=True,
                         capture_output=True, text=True).stdout
    keys = {r.split()[0]: r.split()[2] for r in out.splitlines()}
    assert keys["audit-refusal-rate"] == "50", keys["audit-refusal-rate"]
    conf = tmp_path / "zonecast.conf"
    conf.write_text("server:\n    log-level: info\n    audit-refusal-rate: 50\n")
    srv = zonecast_factory(config=str(conf))
    before = len(audit_lines(srv.log(), "update", "refused"))
    _refusal_burst(srv, 300)
    burst = len(audit_lines(srv.log(), "update", "refused")) - before
    assert 0 < burst <= 100, burst  # Two seconds' worth at most.

    def accounted():
        lines = audit_lines(srv.log(), "update", "refused")[before:]
        counts = audit_lines(srv.log(), "refusals", "suppressed")
        return len(lines) + sum(int(fields(l).get("suppressed", 0)) for l in lines + counts)
    # Every refusal is a line or counted, with nothing sent after the
    # burst: the count comes in a line of its own once its second is over
    # (it waited for the next refusal, which an attacker need not send:
    # outside tester 29).
    wait_for(lambda: accounted() == 300, "every refusal a line or counted (%d)" % accounted())
    # The count is a line of its own, or rides on the first refusal line
    # of a later second when the burst spans two (ASan on a loaded CI
    # machine: every count came so).
    counted = audit_lines(srv.log(), "refusals", "suppressed") + [
        l for l in audit_lines(srv.log(), "update", "refused")[before:] if "suppressed=" in l]
    assert any(int(fields(l)["suppressed"]) > 0 for l in counted), counted
    # a later refusal is its own line, counting nothing twice
    time.sleep(1.1)
    assert update(srv, "example.net.", "after.example.net.") == dns.rcode.REFUSED
    wait_for(lambda: accounted() == 301, "the later refusal")

    conf.write_text("server:\n    log-level: info\n    audit-refusal-rate: 0\n")
    srv.run_cli("reload", "--data-dir", srv.data_dir)
    time.sleep(1.1)  # past the second whose lines were counted
    before = len(audit_lines(srv.log(), "update", "refused"))
    _refusal_burst(srv, 300)
    lines = wait_for(lambda: (lambda l: l if len(l) >= 300 else None)(
        audit_lines(srv.log(), "update", "refused")[before:]), "300 lines")
    assert len(lines) == 300 and not any("suppressed=" in l for l in lines), len(lines)


def bind_dgram(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(path)
    s.settimeout(0.2)
    return s


def drain(sock):
    out = []
    try:
        while True:
            out.append(sock.recv(65535).decode(errors="replace"))
    except socket.timeout:
        return out


def test_json_syslog_and_journal_targets(zonecast_api_factory, tmp_path):
    """log-format json to a file; the same server's lines to syslog and the
    journal through their sockets."""
    syslog = bind_dgram(str(tmp_path / "syslog.sock"))
    journal = bind_dgram(str(tmp_path / "journal.sock"))
    logfile = tmp_path / "zonecast.json"
    srv = zonecast_api_factory(
        options=[("log-format", "json"), ("log-target", str(logfile)),
                 ("log-target", "syslog"), ("log-target", "journald"),
                 ("allow-update", UPDATE_SOURCE)],
        env={"ZONECAST_SYSLOG_SOCKET": str(tmp_path / "syslog.sock"),
             "ZONECAST_JOURNAL_SOCKET": str(tmp_path / "journal.sock")})
    try:
        assert update(srv, "example.net.", "j.example.net.", source=UPDATE_SOURCE) == \
            dns.rcode.NOERROR
        lines = wait_for(lambda: [json.loads(l) for l in logfile.read_text().splitlines()
                                  if '"audit":"update"' in l], "the JSON audit line")
        a = lines[-1]
        assert a["level"] == "info" and a["message"] == "audit: update accepted"
        assert a["audit"] == "update" and a["outcome"] == "accepted"
        assert a["zone"] == "example.net." and a["key"] == "-"
        assert a["client"].startswith(UPDATE_SOURCE + "#")
        assert a["added"] == 1 and a["deleted"] == 0 and isinstance(a["serial"], int)
        assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", a["time"])
        # every line of the file is one JSON object
        for l in logfile.read_text().splitlines():
            json.loads(l)
        # the start lists the zones (logged as each zone is first built,
        # which may come after the update's answer under load)
        wait_for(lambda: any(json.loads(l)["message"].startswith(
                     "zone example.com.: serial 2024010101")
                     for l in logfile.read_text().splitlines()),
                 "the zone list at the start")

        got = drain(syslog)
        sys_audit = [m for m in got if '"audit":"update"' in m]
        assert sys_audit, got[:5]
        assert re.match(r"<30>\w{3} [ \d]\d \d\d:\d\d:\d\d zonecast\[%d\]: \{" % srv.proc.pid,
                        sys_audit[-1]), sys_audit[-1]   # daemon.info, then the JSON
        assert any(m.startswith("<28>") or m.startswith("<30>") for m in got)

        entries = [dict(l.split("=", 1) for l in m.splitlines() if "=" in l)
                   for m in drain(journal)]
        audit = [e for e in entries if e.get("ZONECAST_AUDIT") == "update"]
        assert audit, entries[:3]
        e = audit[-1]
        assert e["PRIORITY"] == "6" and e["SYSLOG_IDENTIFIER"] == "zonecast"
        assert e["ZONECAST_OUTCOME"] == "accepted" and e["ZONECAST_ZONE"] == "example.net."
        assert e["MESSAGE"].startswith("audit: update accepted zone=example.net.")
    finally:
        syslog.close()
        journal.close()
