"""The edge fleet (docs/fleet.md, issue 13) against a real nats-server -js:
a primary (`zonecast serve --nats`) and edges (`zonecast edge`).

Every test ends by comparing each edge's store with the primary's
(`zonecast fleet digest`: same history, same commit, same digest of every
replicated key and value) after the fleet settles, and most also compare
DNS answers name by name."""

import json
import os
import signal
import re
import subprocess
import shutil
import random
import threading
import time

import dns.dnssec
import dns.edns
import dns.name
import dns.message
import dns.query
import dns.rcode
import dns.rdatatype
import dns.update
import pytest

import servers
from fleet import (EdgeServer, NatsServer, digest, hpub, js_api, settle, txt,
                   start_primary)

UPDATE_SOURCE = "127.0.0.2"

pytestmark = pytest.mark.skipif(not os.path.exists("/usr/sbin/nats-server"),
                                reason="nats-server is not installed")


class Fleet:
    def __init__(self, tmp, edges=3, primary_options=(), edge_options=(), nats=None,
                 primary_env=None):
        self.tmp = str(tmp)
        self.nats = nats or [NatsServer(self.tmp).start()]
        self.urls = ",".join(n.url for n in self.nats)
        self.primary = start_primary(self.tmp, self.urls,
                                     options=["allow-update=" + UPDATE_SOURCE,
                                              "fleet-edge-timeout=1500"]
                                     + list(primary_options), env=primary_env)
        self.api = self.primary.client_
        self.edges = [EdgeServer(self.tmp, "edge%d" % i, self.urls, edge_options).start()
                      for i in range(1, edges + 1)]
        self.wait_edges()

    def wait_edges(self, timeout=20):
        """Until every edge has reported to the primary (receipts count it)."""
        deadline = time.monotonic() + timeout
        want = {e.name for e in self.edges}
        while time.monotonic() < deadline:
            up = {e["name"] for e in self.api.get("/fleet")["edges"] if e["up"]}
            if want <= up:
                return
            time.sleep(0.05)
        raise AssertionError("edges %s never reported:\n%s" % (
            want - up, "\n".join(e.log()[-2000:] for e in self.edges)))

    def stop(self):
        problems = []
        for s in self.edges + [self.primary]:
            problems += ["%s: %s" % (s.kind, p) for p in s.stop()]
        for n in self.nats:
            n.stop()
        return problems


@pytest.fixture
def fleet(tmp_path):
    f = Fleet(tmp_path)
    yield f
    problems = f.stop()
    assert not problems, problems


def create_zone(api, name):
    zid = api.ok("POST", "/zones", json={"name": name})["result"]["id"]
    return zid


def post_batch(api, zid, posts=(), deletes=()):
    body = {"posts": list(posts), "deletes": [{"id": d} for d in deletes]}
    return api.ok("POST", "/zones/%s/dns_records/batch" % zid, json=body)


def answers(server, name, rdtype):
    """(rcode, sorted answer texts) of one query, over TCP."""
    q = dns.message.make_query(name, rdtype)
    r = dns.query.tcp(q, "127.0.0.1", port=server.port, timeout=3)
    return r.rcode(), sorted(rr.to_text() for rr in r.answer)


def compare_answers(primary, edges, names):
    for name, rdtype in names:
        want = answers(primary, name, rdtype)
        for e in edges:
            got = answers(e, name, rdtype)
            assert got == want, "%s %s: edge %s %r, primary %r" % (name, rdtype, e.name,
                                                                   got, want)


def send_update(zone, adds=(), deletes=(), port=None):
    u = dns.update.UpdateMessage(zone)
    for name, ttl, rtype, data in adds:
        u.add(name, ttl, rtype, data)
    for name, rtype in deletes:
        u.delete(name, rtype)
    r = dns.query.tcp(u, "127.0.0.1", port=port, source=UPDATE_SOURCE, timeout=5)
    assert r.rcode() == dns.rcode.NOERROR, dns.rcode.to_text(r.rcode())


def test_edges_equal_after_mixed_changes(fleet):
    """Random batches, single writes, UPDATEs, full builds (zone settings,
    DNSSEC), zone creation and deletion: every edge ends equal and answers
    as the primary does; NSID is the edge's name."""
    rnd = random.Random(13)
    api = fleet.api
    zones = {"a.fleet.test": create_zone(api, "a.fleet.test"),
             "b.fleet.test": create_zone(api, "b.fleet.test")}
    live = {z: [] for z in zones}
    names = []
    for step in range(40):
        zone = rnd.choice(sorted(zones))
        zid = zones[zone]
        action = rnd.random()
        if action < 0.5:
            n = rnd.randint(1, 150)
            posts = [{"type": "TXT", "name": "r%d-%d.%s" % (step, i, zone),
                      "content": '"v%d"' % rnd.randint(0, 10 ** 6), "ttl": 300}
                     for i in range(n)]
            post_batch(api, zid, posts)
            names += [(p["name"] + ".", "TXT") for p in posts[:3]]
        elif action < 0.65 and live[zone]:
            victims = rnd.sample(live[zone], min(len(live[zone]), 5))
            post_batch(api, zid, deletes=victims)
            live[zone] = [r for r in live[zone] if r not in victims]
        elif action < 0.8:
            r = api.ok("POST", "/zones/%s/dns_records" % zid,
                       json={"type": "A", "name": "a%d.%s" % (step, zone),
                             "content": "192.0.2.%d" % (step % 250), "ttl": 60})
            live[zone].append(r["result"]["id"])
            names.append(("a%d.%s." % (step, zone), "A"))
        elif action < 0.9:
            send_update(zone + ".", adds=[("u%d" % step, 120, "AAAA", "2001:db8::%x" % step)],
                        port=fleet.primary.port)
            names.append(("u%d.%s." % (step, zone), "AAAA"))
        else:
            api.ok("PATCH", "/zones/%s" % zid, json={"default_ttl": rnd.randint(60, 7200),
                                                       "soa": {"minimum": rnd.randint(60, 900)}})
        if step == 10:
            api.ok("PATCH", "/zones/%s/dnssec" % zones["b.fleet.test"],
                   json={"status": "active"})
        if step == 20:
            tmp = create_zone(api, "gone.fleet.test")
            post_batch(api, tmp, [{"type": "A", "name": "x.gone.fleet.test",
                                   "content": "192.0.2.1"}])
        if step == 30:
            api.ok("DELETE", "/zones/%s" % api.zone_id("gone.fleet.test"))
    settle(fleet.primary, fleet.edges)
    names += [(z + ".", t) for z in zones for t in ("SOA", "NS", "DNSKEY")]
    names += [("x.gone.fleet.test.", "A"), ("nothere.a.fleet.test.", "A"),
              ("www.example.com.", "A")]
    compare_answers(fleet.primary, fleet.edges, names)
    # ZONEVERSION (RFC 9660): each edge names the version it serves, the
    # primary's; DNSSEC: an edge's signed answer validates with the keys
    # the primary publishes (the keys travelled with the zone).
    zv_opt = dns.edns.GenericOption(19, b"")
    serial = fleet.primary.query("a.fleet.test.", "SOA").answer[0][0].serial
    keys = fleet.primary.query("b.fleet.test.", "DNSKEY", do=True)
    dnskey = [rr for rr in keys.answer if rr.rdtype == dns.rdatatype.DNSKEY][0]
    for e in fleet.edges:
        r = e.query("a.fleet.test.", "SOA", options=[zv_opt])
        zv = [o.to_wire() for o in r.options if o.otype == 19]
        assert zv and int.from_bytes(zv[0][2:6], "big") == serial, (e.name, zv, serial)
        r = e.query("b.fleet.test.", "SOA", do=True)
        soa = [rr for rr in r.answer if rr.rdtype == dns.rdatatype.SOA][0]
        sig = [rr for rr in r.answer if rr.rdtype == dns.rdatatype.RRSIG][0]
        dns.dnssec.validate(soa, sig, {dns.name.from_text("b.fleet.test."): dnskey})
        r = e.query("nothere.b.fleet.test.", "A", do=True)
        assert any(rr.rdtype == dns.rdatatype.NSEC for rr in r.authority), r
    nsid_opt = dns.edns.GenericOption(dns.edns.NSID, b"")
    for e in fleet.edges:
        q = servers.make_query("a.fleet.test.", "SOA", options=[nsid_opt])
        r = dns.query.udp(q, "127.0.0.1", port=e.port, timeout=2)
        nsid = [o for o in r.options if o.otype == dns.edns.NSID]
        assert nsid and nsid[0].to_wire() == e.name.encode(), (e.name, r.options)


def test_batches_are_atomic_at_every_edge(fleet):
    """While batches of 1,000 records are posted, readers of every edge
    never see the last record of a batch without its first."""
    api = fleet.api
    zid = create_zone(api, "atomic.fleet.test")
    stop = threading.Event()
    bad, seen = [], [0]
    done_batches = []

    def reader(edge):
        rnd = random.Random(edge.port)
        while not stop.is_set():
            if not done_batches:
                time.sleep(0.001)
                continue
            k = rnd.choice(done_batches + [len(done_batches)])
            last = answers(edge, "b%d-999.atomic.fleet.test." % k, "TXT")
            first = answers(edge, "b%d-0.atomic.fleet.test." % k, "TXT")
            if last[1] and not first[1]:
                bad.append((edge.name, k))
            seen[0] += bool(last[1])

    threads = [threading.Thread(target=reader, args=(e,)) for e in fleet.edges]
    for t in threads:
        t.start()
    try:
        for k in range(8):
            posts = [{"type": "TXT", "name": "b%d-%d.atomic.fleet.test" % (k, i),
                      "content": '"batch %d"' % k} for i in range(1000)]
            post_batch(api, zid, posts)
            done_batches.append(k)
        time.sleep(0.5)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not bad, bad
    assert seen[0] > 0
    settle(fleet.primary, fleet.edges)


def test_receipts_wait_for_every_live_edge(fleet):
    """propagation?wait returns live only when every edge that is up answers
    the version (checked by querying each edge right away); an edge that is
    killed is reported down and stops holding receipts back."""
    api = fleet.api
    zid = create_zone(api, "receipt.fleet.test")
    settle(fleet.primary, fleet.edges)
    for i in range(20):
        r = api.ok("POST", "/zones/%s/dns_records" % zid,
                   json={"type": "A", "name": "r%d.receipt.fleet.test" % i,
                         "content": "192.0.2.%d" % (i + 1)})
        v = r["zone_version"]
        p = api.get("/zones/%s/propagation" % zid, params={"version": v, "wait": 10})
        assert p["live"] and p["edge_count"] == 3 and p["live_edges"] == 3, p
        assert all(e["version"] is not None and e["version"] >= v for e in p["edges"]), p
        for e in fleet.edges:
            rc, ans = answers(e, "r%d.receipt.fleet.test." % i, "A")
            assert ans, "edge %s lacks version %d after a live receipt" % (e.name, v)
    fleet.edges[0].kill9()
    r = api.ok("POST", "/zones/%s/dns_records" % zid,
               json={"type": "A", "name": "after.receipt.fleet.test", "content": "192.0.2.99"})
    v = r["zone_version"]
    p = api.get("/zones/%s/propagation" % zid, params={"version": v, "wait": 0})
    down = [e for e in p["edges"] if e["name"] == "edge1"][0]
    # Until edge1 is known down, the receipt waits for it.
    assert not p["live"] or not down["up"], p
    p = api.get("/zones/%s/propagation" % zid, params={"version": v, "wait": 10})
    down = [e for e in p["edges"] if e["name"] == "edge1"][0]
    assert p["live"] and not down["up"] and p["live_edges"] == 2, p
    status = fleet.primary.run_cli("fleet", "status", "--api",
                                   "127.0.0.1:%d" % fleet.primary.api_port,
                                   "--token", fleet.api.token).stdout
    assert "edge1" in status and "DOWN" in status, status
    fleet.edges[0].start()
    settle(fleet.primary, fleet.edges)


def write_records(api, zid, zone, prefix, count, acked, stop=None):
    """Posts records one by one; records the names acknowledged."""
    for i in range(count):
        if stop is not None and stop.is_set():
            return
        name = "%s%d.%s" % (prefix, i, zone)
        try:
            api.ok("POST", "/zones/%s/dns_records" % zid,
                   json={"type": "A", "name": name, "content": "192.0.2.7"}, timeout=5)
        except Exception:
            continue
        acked.append(name + ".")


def test_edge_killed_mid_stream_catches_up(fleet):
    api = fleet.api
    zid = create_zone(api, "kill.fleet.test")
    acked = []
    t = threading.Thread(target=write_records, args=(api, zid, "kill.fleet.test", "k", 300,
                                                     acked))
    t.start()
    for _ in range(3):
        time.sleep(0.3)
        fleet.edges[1].kill9()
        fleet.edges[1].start()
    t.join()
    settle(fleet.primary, fleet.edges)
    for name in acked[::10]:
        for e in fleet.edges:
            assert answers(e, name, "A")[1], (e.name, name)


def test_nats_down_for_10s_under_writes(fleet):
    """nats-server stops for 10 s while the API takes writes; when it is back
    nothing acknowledged is missing at any edge and all stores are equal."""
    api = fleet.api
    zid = create_zone(api, "down.fleet.test")
    settle(fleet.primary, fleet.edges)
    acked = []
    stop = threading.Event()
    t = threading.Thread(target=write_records, args=(api, zid, "down.fleet.test", "d", 10 ** 6,
                                                     acked, stop))
    t.start()
    time.sleep(0.5)
    fleet.nats[0].stop()
    time.sleep(10)
    before_restart = len(acked)
    fleet.nats[0].start()
    time.sleep(1)
    stop.set()
    t.join()
    assert before_restart > 10, "the primary stopped acknowledging while NATS was down"
    settle(fleet.primary, fleet.edges, timeout=60)
    for name in acked:
        for e in fleet.edges:
            assert answers(e, name, "A")[1], (e.name, name)


def test_new_edge_bootstraps_after_stream_purge(tmp_path):
    """With snapshots every MiB, the txn stream is purged while changes
    accumulate (its size stays bounded); an edge started afterwards loads a
    snapshot instead of the whole history and ends equal."""
    f = Fleet(tmp_path, edges=1, primary_options=["fleet-snapshot-mib=1"])
    try:
        api = f.api
        zid = create_zone(api, "boot.fleet.test")
        for k in range(12):
            post_batch(api, zid, [{"type": "TXT", "name": "b%d-%d.boot.fleet.test" % (k, i),
                                   "content": '"%s"' % ("x" * 200)} for i in range(1000)])
        settle(f.primary, f.edges)
        state = f.nats[0].stream_state("zonecast-txn")
        assert state["first_seq"] > 1, state  # purged behind a snapshot
        late = EdgeServer(f.tmp, "late", f.urls).start()
        f.edges.append(late)
        settle(f.primary, f.edges)
        assert "loaded snapshot" in late.log()
        compare_answers(f.primary, [late], [("b0-0.boot.fleet.test.", "TXT"),
                                            ("b11-999.boot.fleet.test.", "TXT")])
    finally:
        problems = f.stop()
    assert not problems, problems


def test_primary_killed_mid_publish(fleet):
    """SIGKILL the primary while it takes writes and publishes; after its
    restart no acknowledged version is missing at any edge."""
    api = fleet.api
    zid = create_zone(api, "crash.fleet.test")
    acked = []
    stop = threading.Event()
    t = threading.Thread(target=write_records, args=(api, zid, "crash.fleet.test", "c", 10 ** 6,
                                                     acked, stop))
    t.start()
    time.sleep(1.0)
    fleet.primary.kill9()
    stop.set()
    t.join()
    fleet.primary.restart()
    settle(fleet.primary, fleet.edges)
    assert len(acked) > 5
    for name in acked:
        for e in fleet.edges:
            assert answers(e, name, "A")[1], (e.name, name)


def test_three_node_cluster_replicas_3_survives_a_node(tmp_path):
    """A three-node JetStream cluster with replicas 3: one node killed under
    writes loses nothing and stalls no edge."""
    from servers import free_port
    ports = [free_port() for _ in range(3)]
    cports = [free_port() for _ in range(3)]
    nodes = [NatsServer(str(tmp_path), name="n%d" % i, port=ports[i], cluster_port=cports[i],
                        routes=[c for j, c in enumerate(cports) if j != i]) for i in range(3)]
    for n in nodes:
        n.start()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # a meta leader is elected
        try:
            if all(n.jsz().get("meta_cluster", {}).get("leader") for n in nodes):
                break
        except Exception:
            pass
        time.sleep(0.2)
    f = Fleet(tmp_path, edges=2, primary_options=["fleet-replicas=3"], nats=nodes)
    try:
        api = f.api
        zid = create_zone(api, "cluster.fleet.test")
        settle(f.primary, f.edges, timeout=60)
        acked = []
        stop = threading.Event()
        t = threading.Thread(target=write_records,
                             args=(api, zid, "cluster.fleet.test", "n", 10 ** 6, acked, stop))
        t.start()
        time.sleep(1)
        nodes[0].stop(sig=9)
        time.sleep(4)
        stop.set()
        t.join()
        settle(f.primary, f.edges, timeout=60)
        for name in acked:
            for e in f.edges:
                assert answers(e, name, "A")[1], (e.name, name)
        # Still following: a change after the kill reaches every edge, and
        # receipts count both again once their reports get through (the
        # bucket's stream elects a new leader meanwhile).
        f.wait_edges(timeout=30)
        r = api.ok("POST", "/zones/%s/dns_records" % zid,
                   json={"type": "A", "name": "last.cluster.fleet.test", "content": "192.0.2.9"})
        p = api.get("/zones/%s/propagation" % zid,
                    params={"version": r["zone_version"], "wait": 20})
        assert p["live"] and p["live_edges"] == 2, p
    finally:
        problems = f.stop()
    assert not problems, problems


def nats_pub(port, user, password, subject, payload=b"x"):
    """Publishes with the NATS text protocol (verbose); returns the server's
    answer to the PUB (+OK or -ERR ...)."""
    import json as _json
    import socket
    with socket.create_connection(("127.0.0.1", port), timeout=3) as s:
        f = s.makefile("rb")
        f.readline()  # INFO
        s.sendall(b"CONNECT " + _json.dumps({"verbose": True, "user": user, "pass": password,
                                             "protocol": 1}).encode() + b"\r\n")
        ok = f.readline()
        if not ok.startswith(b"+OK"):
            return ok.decode().strip()
        s.sendall(b"PUB %s %d\r\n%s\r\nPING\r\n" % (subject.encode(), len(payload), payload))
        line = f.readline()
        return line.decode().strip()


def test_authenticated_fleet_with_documented_permissions(tmp_path):
    """nats-server with etc/nats-fleet.conf's users: the fleet works with the
    documented permissions; an edge's user cannot publish to the log or the
    snapshots; a wrong password is refused and the edge keeps retrying."""
    conf = open(os.path.join(servers.REPO, "etc", "nats-fleet.conf")).read()
    nats = NatsServer(str(tmp_path), extra_conf=conf).start()
    f = Fleet(tmp_path, edges=1, nats=[nats],
              primary_options=["nats-user=zonecast-primary",
                               "nats-password=CHANGE-ME-primary"],
              edge_options=["nats-user=zonecast-edge", "nats-password=CHANGE-ME-edge"])
    try:
        zid = create_zone(f.api, "auth.fleet.test")
        r = f.api.ok("POST", "/zones/%s/dns_records" % zid,
                     json={"type": "A", "name": "x.auth.fleet.test", "content": "192.0.2.1"})
        p = f.api.get("/zones/%s/propagation" % zid,
                      params={"version": r["zone_version"], "wait": 10})
        assert p["live"] and p["live_edges"] == 1, p
        settle(f.primary, f.edges)
        for subject in ("zonecast.txn", "zonecast.snap.head", "zonecast.snap.data.x.0",
                        "$JS.API.STREAM.PURGE.zonecast-txn",
                        "$JS.API.STREAM.DELETE.zonecast-txn"):
            answer = nats_pub(nats.port, "zonecast-edge", "CHANGE-ME-edge", subject)
            assert "Permissions Violation" in answer, (subject, answer)
        assert nats_pub(nats.port, "zonecast-edge", "wrong", "x").startswith("-ERR"), \
            "a wrong password was accepted"
        bad = EdgeServer(f.tmp, "intruder", f.urls,
                         ["nats-user=zonecast-edge", "nats-password=wrong"]).start()
        time.sleep(1.5)
        assert bad.proc.poll() is None, "an edge that cannot log in must keep retrying"
        assert not os.path.exists(os.path.join(bad.data_dir, "edge.mdb")) or \
            digest(bad.data_dir)["commit"] == 0
        assert not bad.stop()
        violations = [l for l in nats.log().splitlines()
                      if "Permissions Violation" in l and "zonecast-edge" in l
                      and "$JS.API" in l and "PURGE" not in l and "DELETE.zonecast-txn" not in l]
        assert not violations, "the documented edge permissions miss:\n" + "\n".join(violations)
    finally:
        problems = f.stop()
    assert not problems, problems


def make_tls(dirpath):
    """A CA and a server certificate for 127.0.0.1 (python3-cryptography)."""
    import datetime
    import ipaddress
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    now = datetime.datetime.now(datetime.timezone.utc)

    def cert(subject, issuer, key, sign_key, ca):
        b = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer)
             .public_key(key.public_key()).serial_number(x509.random_serial_number())
             .not_valid_before(now - datetime.timedelta(days=1))
             .not_valid_after(now + datetime.timedelta(days=2))
             .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if not ca:
            b = b.add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        return b.sign(sign_key, hashes.SHA256())

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "zonecast test CA")])
    ca = cert(ca_name, ca_name, ca_key, ca_key, True)
    key = ec.generate_private_key(ec.SECP256R1())
    srv = cert(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]), ca_name,
               key, ca_key, False)
    paths = {n: os.path.join(dirpath, n + ".pem") for n in ("ca", "cert", "key")}
    with open(paths["ca"], "wb") as f:
        f.write(ca.public_bytes(serialization.Encoding.PEM))
    with open(paths["cert"], "wb") as f:
        f.write(srv.public_bytes(serialization.Encoding.PEM))
    with open(paths["key"], "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM,
                                  serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    return paths


def test_fleet_over_tls_with_a_token(tmp_path):
    """nats-server requiring TLS and a token: the fleet works with
    nats-tls-ca and nats-token; an edge that does not trust the CA never
    connects (and keeps retrying)."""
    t = make_tls(str(tmp_path))
    conf = ('tls { cert_file: "%s", key_file: "%s" }\nauthorization { token: "s3cret-token" }'
            % (t["cert"], t["key"]))
    nats = NatsServer(str(tmp_path), extra_conf=conf).start()
    opts = ["nats-tls-ca=" + t["ca"], "nats-token=s3cret-token"]
    f = Fleet(tmp_path, edges=1, nats=[nats], primary_options=opts, edge_options=opts)
    try:
        zid = create_zone(f.api, "tls.fleet.test")
        r = f.api.ok("POST", "/zones/%s/dns_records" % zid,
                     json={"type": "A", "name": "x.tls.fleet.test", "content": "192.0.2.1"})
        p = f.api.get("/zones/%s/propagation" % zid,
                      params={"version": r["zone_version"], "wait": 10})
        assert p["live"] and p["live_edges"] == 1, p
        settle(f.primary, f.edges)
        plain = EdgeServer(f.tmp, "untrusting", f.urls, ["nats-token=s3cret-token"]).start()
        time.sleep(1.5)
        assert plain.proc.poll() is None
        assert "cannot connect" in plain.log(), plain.log()
        assert not plain.stop()
    finally:
        problems = f.stop()
    assert not problems, problems


def test_forged_messages_neither_crash_nor_stop_edges(fleet):
    """Whoever can publish on the log subject: a malformed next commit, a
    commit far ahead and a node whose rdata hides a compression pointer are
    ignored; edges keep following the primary and end equal."""
    import struct
    api = fleet.api
    zid = create_zone(api, "forged.fleet.test")
    settle(fleet.primary, fleet.edges)
    state = digest(fleet.primary.data_dir)
    port = fleet.nats[0].port
    base = {"Zc-Epoch": state["history"], "Zc-Part": "0", "Zc-Flags": "1"}
    nxt = str(state["commit"] + 1)
    hpub(port, "zonecast.txn", dict(base, **{"Zc-Commit": nxt}), b"\x01\x09garbage")
    hpub(port, "zonecast.txn", dict(base, **{"Zc-Commit": str(state["commit"] + 1000)}), b"")
    rd = b"\x69\x7c\xd0\x5b"  # MX preference 0x697c, "name" 0xd0 0x5b: a pointer
    node = struct.pack(">BBQHHIH", 1, 0, 1 << 40, 1, 15, 300, 1) + struct.pack(">H", 4) + rd
    key = struct.pack(">Q", 1) + b"x\x00"  # zone id 1: example.com, imported first
    op = struct.pack(">BBHI", 1, 1, len(key), len(node)) + key + node
    hpub(port, "zonecast.txn", dict(base, **{"Zc-Commit": nxt}), op)
    for i in range(5):
        api.ok("POST", "/zones/%s/dns_records" % zid,
               json={"type": "MX", "name": "m%d.forged.fleet.test" % i,
                     "content": "mail.forged.fleet.test", "priority": 10})
    settle(fleet.primary, fleet.edges, timeout=60)
    compare_answers(fleet.primary, fleet.edges, [("m4.forged.fleet.test.", "MX"),
                                                 ("forged.fleet.test.", "SOA"),
                                                 ("x.example.com.", "MX")])
    for e in fleet.edges:
        assert "malformed; ignored" in e.log(), e.log()[-2000:]


def test_new_history_reaches_idle_edges(tmp_path):
    """serve restarted without --nats (changes unrecorded), then with it
    again: a new history; edges load its snapshot without any further
    write."""
    f = Fleet(tmp_path, edges=2)
    try:
        old = digest(f.primary.data_dir)["history"]
        f.primary.stop()
        plain = [o for o in f.primary.options if not o.startswith("nats=")]
        saved = f.primary.options
        f.primary.options = plain
        f.primary.serve()
        f.primary.client_ = f.primary.client()
        zid = create_zone(f.primary.client_, "quiet.fleet.test")
        f.primary.stop()
        f.primary.options = saved
        f.primary.serve()
        f.primary.client_ = f.primary.client()
        f.api = f.primary.client_
        settle(f.primary, f.edges, timeout=30)
        assert digest(f.primary.data_dir)["history"] != old
        compare_answers(f.primary, f.edges, [("quiet.fleet.test.", "SOA")])
        assert zid
    finally:
        problems = f.stop()
    assert not problems, problems


def test_nats_storage_lost(tmp_path):
    """NATS loses its JetStream storage (streams, snapshots, reports): the
    primary publishes a snapshot again and idle edges load it."""
    f = Fleet(tmp_path, edges=2)
    try:
        zid = create_zone(f.api, "lost.fleet.test")
        settle(f.primary, f.edges)
        n = f.nats[0]
        n.stop()
        shutil.rmtree(os.path.join(n.workdir, "js"))
        n.start()
        for i in range(3):
            f.api.ok("POST", "/zones/%s/dns_records" % zid,
                     json={"type": "A", "name": "l%d.lost.fleet.test" % i,
                           "content": "192.0.2.1"})
        settle(f.primary, f.edges, timeout=60)
        compare_answers(f.primary, f.edges, [("l2.lost.fleet.test.", "A")])
    finally:
        problems = f.stop()
    assert not problems, problems


def test_primary_store_rolled_back(tmp_path):
    """The primary's edge store goes back in time (restored from a copy, as
    an OS crash may do to it): a new history begins and edges end equal
    instead of skipping commit numbers given out twice."""
    f = Fleet(tmp_path, edges=1)
    try:
        zid = create_zone(f.api, "rollback.fleet.test")
        settle(f.primary, f.edges)
        f.primary.stop()
        mdb = os.path.join(f.primary.data_dir, "edge.mdb")
        shutil.copy(mdb, mdb + ".old")
        f.primary.serve()
        f.primary.client_ = f.api = f.primary.client()
        for i in range(3):
            f.api.ok("POST", "/zones/%s/dns_records" % zid,
                     json={"type": "A", "name": "r%d.rollback.fleet.test" % i,
                           "content": "192.0.2.1"})
        settle(f.primary, f.edges)
        before = digest(f.primary.data_dir)["history"]
        f.primary.kill9()
        shutil.copy(mdb + ".old", mdb)
        f.primary.serve()
        f.primary.client_ = f.api = f.primary.client()
        settle(f.primary, f.edges, timeout=60)
        assert digest(f.primary.data_dir)["history"] != before
        compare_answers(f.primary, f.edges, [("r2.rollback.fleet.test.", "A")])
    finally:
        problems = f.stop()
    assert not problems, problems


def test_receipts_when_every_edge_is_down(fleet):
    """All edges killed: after fleet-edge-timeout they are down (and stay
    down: the primary's bucket watcher starting over is no sign of life), so
    receipts go live again."""
    api = fleet.api
    zid = create_zone(api, "alldown.fleet.test")
    for e in fleet.edges:
        e.kill9()
    r = api.ok("POST", "/zones/%s/dns_records" % zid,
               json={"type": "A", "name": "x.alldown.fleet.test", "content": "192.0.2.1"})
    t0 = time.monotonic()
    p = api.get("/zones/%s/propagation" % zid, params={"version": r["zone_version"], "wait": 15})
    assert p["live"] and p["live_edges"] == 0 and not any(e["up"] for e in p["edges"]), p
    assert time.monotonic() - t0 < 10
    time.sleep(4)  # past the watcher's silence limit (3 s)
    p = api.get("/zones/%s/propagation" % zid, params={"version": r["zone_version"]})
    assert not any(e["up"] for e in p["edges"]), p
    for e in fleet.edges:
        e.start()
    fleet.wait_edges()


# --- Outside tester 18 ---


def test_commits_and_snapshots_larger_than_max_payload(tmp_path):
    """nats-server takes at most 64 KiB a message (max_payload), less than a
    part (768 KiB): a batch of ~1 MiB and the snapshots go in messages cut
    to fit; the edge gets the batch and every later change, a late edge
    loads the snapshot (which came after a MiB of log)."""
    nats = [NatsServer(str(tmp_path), extra_conf="max_payload: 65536").start()]
    f = Fleet(tmp_path, edges=1, nats=nats, primary_options=["fleet-snapshot-mib=1"])
    try:
        zid = create_zone(f.api, "big.fleet.test")
        for k in range(2):
            post_batch(f.api, zid, [{"type": "TXT", "name": "m%d-%d.big.fleet.test" % (k, i),
                                     "content": '"%s"' % ("x" * 250)} for i in range(2500)])
        f.api.ok("POST", "/zones/%s/dns_records" % zid,
                 json={"type": "A", "name": "after.big.fleet.test", "content": "192.0.2.1"})
        settle(f.primary, f.edges, timeout=20)
        assert "publishing paused" not in f.primary.log()
        assert "snapshot failed" not in f.primary.log()
        late = EdgeServer(f.tmp, "late", f.urls).start()
        f.edges.append(late)
        settle(f.primary, f.edges, timeout=20)
        assert "loaded snapshot" in late.log()
        compare_answers(f.primary, f.edges, [("m1-2499.big.fleet.test.", "TXT"),
                                             ("after.big.fleet.test.", "A")])
    finally:
        problems = f.stop()
    assert not problems, problems


SKEW_SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
static long long off_ms(void) {
    static long long o = -1;
    if (o == -1) { const char *s = getenv("ZC_SKEW_MS"); o = s ? atoll(s) : 0; }
    return o;
}
static void addms(struct timespec *ts, long long ms) {
    long long ns = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec + ms * 1000000LL;
    ts->tv_sec = ns / 1000000000LL; ts->tv_nsec = ns % 1000000000LL;
}
int clock_gettime(clockid_t c, struct timespec *ts) {
    static int (*real)(clockid_t, struct timespec *);
    if (!real) real = dlsym(RTLD_NEXT, "clock_gettime");
    int r = real(c, ts);
    if (r == 0 && (c == CLOCK_REALTIME || c == CLOCK_REALTIME_COARSE)) addms(ts, off_ms());
    return r;
}
int gettimeofday(struct timeval *tv, void *tz) {
    (void)tz; struct timespec ts; clock_gettime(CLOCK_REALTIME, &ts);
    if (tv) { tv->tv_sec = ts.tv_sec; tv->tv_usec = ts.tv_nsec / 1000; }
    return 0;
}
time_t time(time_t *t) {
    struct timespec ts; clock_gettime(CLOCK_REALTIME, &ts);
    if (t) *t = ts.tv_sec;
    return ts.tv_sec;
}
int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *abst) {
    static int (*real)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
    if (!real) real = dlvsym(RTLD_NEXT, "pthread_cond_timedwait", "GLIBC_2.3.2");
    struct timespec a = *abst; addms(&a, -off_ms()); return real(c, m, &a);
}
"""


def test_edge_liveness_is_the_primarys_own_clock(tmp_path):
    """The primary's clock is 8 s ahead of the NATS server's (an LD_PRELOAD
    shim): its edges are still up, and a receipt waits for an edge that
    is up but lacks the version (paused) instead of answering live at
    once."""
    import signal
    import subprocess
    import shim
    src = tmp_path / "skew.c"
    src.write_text(SKEW_SHIM)
    so = str(tmp_path / "skew.so")
    try:
        cp = subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-o", so, str(src), "-ldl",
                             "-lpthread"], capture_output=True, text=True)
    except OSError:
        pytest.skip("no C compiler for the LD_PRELOAD shim")
    if cp.returncode != 0:
        pytest.skip("the skew shim does not build: " + cp.stderr[-500:])
    f = Fleet(tmp_path, edges=2, primary_options=["fleet-edge-timeout=4000"],
              primary_env={"LD_PRELOAD": shim.preload(so), "ZC_SKEW_MS": "8000"})
    try:
        zid = create_zone(f.api, "skew.fleet.test")
        settle(f.primary, f.edges)
        edges = f.api.get("/fleet")["edges"]
        assert len(edges) == 2 and all(e["up"] for e in edges), edges
        f.edges[0].proc.send_signal(signal.SIGSTOP)
        try:
            r = f.api.ok("POST", "/zones/%s/dns_records" % zid,
                         json={"type": "A", "name": "x.skew.fleet.test", "content": "192.0.2.1"})
            t0 = time.monotonic()
            p = f.api.get("/zones/%s/propagation" % zid,
                          params={"version": r["zone_version"], "wait": 2})
            assert not p["live"] and time.monotonic() - t0 >= 1.5, p
            assert p["live_edges"] == 1 and p["edge_count"] == 2, p
        finally:
            f.edges[0].proc.send_signal(signal.SIGCONT)
        settle(f.primary, f.edges)
    finally:
        problems = f.stop()
    assert not problems, problems


def test_snapshot_stream_and_bucket_come_back(tmp_path):
    """The snapshot stream purged, then deleted, then the reports bucket
    deleted, while the primary runs: each time it notices within seconds
    (logged), creates what is gone and publishes its snapshot again; a new
    edge bootstraps, and edges are up again."""
    f = Fleet(tmp_path, edges=1)
    try:
        port = f.nats[0].port
        zid = create_zone(f.api, "gone.fleet.test")
        settle(f.primary, f.edges)
        assert js_api(port, "STREAM.PURGE.zonecast-snap").get("success"), "purge"
        late = EdgeServer(f.tmp, "late", f.urls).start()
        f.edges.append(late)
        settle(f.primary, f.edges, timeout=15)
        assert "loaded snapshot" in late.log()
        assert js_api(port, "STREAM.DELETE.zonecast-snap").get("success"), "delete"
        late.kill9()
        shutil.rmtree(late.data_dir)
        late.start()
        f.api.ok("POST", "/zones/%s/dns_records" % zid,
                 json={"type": "A", "name": "a.gone.fleet.test", "content": "192.0.2.1"})
        settle(f.primary, f.edges, timeout=15)
        assert js_api(port, "STREAM.DELETE.KV_zonecast-edges").get("success"), "bucket"
        time.sleep(2)
        f.wait_edges(timeout=15)
        log = f.primary.log()
        assert "zonecast-snap is gone" in log and "KV_zonecast-edges is gone" in log, log
        assert "no snapshot manifest" in log, log
    finally:
        problems = f.stop()
    assert not problems, problems


def test_forged_next_commit_is_not_kept(fleet):
    """A forged empty final message for the next commit, of the primary's
    history and term: edges apply it, but the primary sees it before its
    own commit goes and begins a new history, so every edge ends with the
    primary's data (the real commit), not the forged one."""
    api = fleet.api
    zid = create_zone(api, "forged.fleet.test")
    settle(fleet.primary, fleet.edges)
    st = digest(fleet.primary.data_dir)
    hpub(fleet.nats[0].port, "zonecast.txn",
         {"Zc-Epoch": st["history"], "Zc-Term": "0", "Zc-Commit": str(st["commit"] + 1),
          "Zc-Part": "0", "Zc-Flags": "1"})
    time.sleep(0.5)
    api.ok("POST", "/zones/%s/dns_records" % zid,
           json={"type": "A", "name": "real.forged.fleet.test", "content": "192.0.2.1"})
    settle(fleet.primary, fleet.edges, timeout=20)
    compare_answers(fleet.primary, fleet.edges, [("real.forged.fleet.test.", "A")])
    assert digest(fleet.primary.data_dir)["history"] != st["history"]
    assert "a new history begins" in fleet.primary.log()


def test_foreign_messages_edges_drop_cost_no_snapshot(fleet):
    """Messages on the txn stream that no edge applies (no zonecast
    headers, another history, a commit applied already) are stepped over:
    the primary publishes on without a snapshot, in the same history."""
    api = fleet.api
    zid = create_zone(api, "step.fleet.test")
    settle(fleet.primary, fleet.edges)
    st = digest(fleet.primary.data_dir)
    snaps = fleet.primary.log().count("snapshot %s" % st["history"])
    port = fleet.nats[0].port
    for i in range(5):
        hpub(port, "zonecast.txn", {"X-Other": "1"})
        hpub(port, "zonecast.txn", {"Zc-Epoch": "%016x" % 0xdead, "Zc-Term": "0",
                                    "Zc-Commit": "1", "Zc-Part": "0", "Zc-Flags": "1"})
        hpub(port, "zonecast.txn", {"Zc-Epoch": st["history"], "Zc-Term": "0",
                                    "Zc-Commit": "1", "Zc-Part": "0", "Zc-Flags": "1"})
        api.ok("POST", "/zones/%s/dns_records" % zid,
               json={"type": "A", "name": "s%d.step.fleet.test" % i, "content": "192.0.2.1"})
    settle(fleet.primary, fleet.edges)
    log = fleet.primary.log()
    assert digest(fleet.primary.data_dir)["history"] == st["history"]
    assert log.count("snapshot %s" % st["history"]) == snaps, log
    assert "stepped over" in log, log
    compare_answers(fleet.primary, fleet.edges, [("s4.step.fleet.test.", "A")])


def test_edge_restart_is_not_a_duplicate(tmp_path):
    """An edge restarted within fleet-edge-timeout (a new instance under
    its name) replaces the old one: no duplicate flag, no warning."""
    f = Fleet(tmp_path, edges=1, primary_options=["fleet-edge-timeout=5000"])
    try:
        e = f.edges[0]
        e.kill9()
        e.start()
        time.sleep(3)
        f.wait_edges()
        edges = f.api.get("/fleet")["edges"]
        assert len(edges) == 1 and not edges[0]["duplicate"], edges
        assert "two edges report" not in f.primary.log()
    finally:
        problems = f.stop()
    assert not problems, problems


def test_edge_from_a_primary_store_is_an_edge(tmp_path):
    """An edge started on a copy of the primary's edge store serves and
    its store says it is an edge's (`fleet digest` role edge)."""
    f = Fleet(tmp_path, edges=0)
    try:
        create_zone(f.api, "copy.fleet.test")
        f.primary.stop()
        e = EdgeServer(f.tmp, "copy", f.urls)
        os.makedirs(e.data_dir)
        shutil.copy(os.path.join(f.primary.data_dir, "edge.mdb"), e.data_dir)
        f.primary.serve()
        f.primary.client_ = f.api = f.primary.client()
        e.start()
        f.edges.append(e)
        settle(f.primary, f.edges)
        # a copy equals the primary's at once: settle does not wait for
        # the edge to take the store as its own
        deadline = time.monotonic() + 20 * servers.TIMEOUT_SCALE
        while digest(e.data_dir)["role"] != "edge" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert digest(e.data_dir)["role"] == "edge"
        compare_answers(f.primary, f.edges, [("copy.fleet.test.", "SOA")])
    finally:
        problems = f.stop()
    assert not problems, problems


# --- Outside tester 22 ---


def reload_nats(n, extra_conf):
    """Rewrites a running nats-server's configuration and reloads it (SIGHUP):
    its clients keep their connections (and their idea of max_payload)."""
    import signal
    n.extra_conf = extra_conf
    with open(os.path.join(n.workdir, "nats.conf"), "w") as f:
        f.write(n.conf())
    n.proc.send_signal(signal.SIGHUP)
    time.sleep(0.5)


BIG_TXT = " ".join('"%s"' % ("y" * 255) for _ in range(15))  # ~3.9 KB


def test_connection_the_server_closed_is_made_again(tmp_path):
    """nats-server's max_payload lowered by a reload (65536 -> 2048): the
    primary's next big message (cut for the old limit) makes the server close
    its connection ("maximum payload exceeded"), which the client library
    never reopens. The primary makes a new connection (logged), cuts for the
    new server's limit, and edges get that commit and every later one."""
    n = NatsServer(str(tmp_path), extra_conf="max_payload: 65536").start()
    f = Fleet(tmp_path, edges=1, nats=[n])
    try:
        zid = create_zone(f.api, "closed.fleet.test")
        settle(f.primary, f.edges)
        reload_nats(n, "max_payload: 2048")
        f.api.ok("POST", "/zones/%s/dns_records" % zid,
                 json={"type": "TXT", "name": "big.closed.fleet.test", "content": BIG_TXT})
        time.sleep(1)
        f.api.ok("POST", "/zones/%s/dns_records" % zid,
                 json={"type": "A", "name": "after.closed.fleet.test", "content": "192.0.2.1"})
        settle(f.primary, f.edges, timeout=20)
        compare_answers(f.primary, f.edges, [("big.closed.fleet.test.", "TXT"),
                                             ("after.closed.fleet.test.", "A")])
        assert "publisher: the connection to" in f.primary.log(), f.primary.log()[-3000:]
    finally:
        problems = f.stop()
    assert not problems, problems


def test_nats_back_with_smaller_max_payload_and_blind_receipts(tmp_path):
    """NATS down, a ~3.9 KB TXT written meanwhile (cut for max_payload 65536),
    NATS back with max_payload 2048: nothing cut for the old limit is replayed
    at the reconnect (that closed the connection for ever), and edges get
    every commit. While NATS is down the primary cannot see its edges'
    reports: a receipt is not live (edges_unknown says why), not "live with
    live_edges 0" as when every edge is known down."""
    n = NatsServer(str(tmp_path), extra_conf="max_payload: 65536").start()
    f = Fleet(tmp_path, edges=1, nats=[n])
    try:
        zid = create_zone(f.api, "smaller.fleet.test")
        settle(f.primary, f.edges)
        n.stop()
        time.sleep(0.5)
        r = f.api.ok("POST", "/zones/%s/dns_records" % zid,
                     json={"type": "TXT", "name": "big.smaller.fleet.test",
                           "content": BIG_TXT})
        # Past fleet-edge-timeout (1.5 s): the edge's reports stopped coming.
        p = f.api.get("/zones/%s/propagation" % zid,
                      params={"version": r["zone_version"], "wait": 3})
        assert p["local_live"] and not p["live"], p
        assert p["edges_unknown"] and "NATS" in p["edges_unknown"], p
        # GET /fleet, fleet status and the metric say so too
        st = f.api.get("/fleet")
        assert st["edges_unknown"] == p["edges_unknown"] or (
            st["edges_unknown"] and "NATS" in st["edges_unknown"]), st
        # ... and not "connected" beside it (outside tester 29)
        assert st["connected"] is False, st
        out = f.primary.run_cli("fleet", "status", "--api", "127.0.0.1:%d" % f.primary.api_port,
                                "--token", f.api.token).stdout
        assert "EDGES UNKNOWN: " in out and "NOT connected" in out, out
        n.extra_conf = "max_payload: 2048"
        n.start()
        f.api.ok("POST", "/zones/%s/dns_records" % zid,
                 json={"type": "A", "name": "after.smaller.fleet.test", "content": "192.0.2.1"})
        settle(f.primary, f.edges, timeout=20)
        compare_answers(f.primary, f.edges, [("big.smaller.fleet.test.", "TXT"),
                                             ("after.smaller.fleet.test.", "A")])
        f.wait_edges()
        p = f.api.get("/zones/%s/propagation" % zid,
                      params={"version": r["zone_version"], "wait": 5})
        assert p["live"] and p["live_edges"] == 1 and p["edges_unknown"] is None, p
        st = f.api.get("/fleet")
        assert st["edges_unknown"] is None and st["connected"] is True, st
    finally:
        problems = f.stop()
    assert not problems, problems


@pytest.mark.parametrize("mode", ["workqueue", "memory"])
def test_txn_stream_made_again_with_other_settings(tmp_path, mode):
    """The txn stream deleted and created again by someone else, same subject,
    with a setting the fleet depends on that an update cannot change
    (retention workqueue, memory storage): the primary sees it within 2 s,
    deletes it and creates it as it needs it, publishes a snapshot, and edges
    get every later write. An edge says why it cannot follow meanwhile (the
    NATS reason), at most every 10 s."""
    f = Fleet(tmp_path, edges=1)
    try:
        port = f.nats[0].port
        zid = create_zone(f.api, "wq.fleet.test")
        settle(f.primary, f.edges)
        new = {"name": "zonecast-txn", "subjects": ["zonecast.txn"], "storage": "file",
               "num_replicas": 1}
        if mode == "workqueue":
            new["retention"] = "workqueue"
        else:
            new["storage"] = "memory"
        assert js_api(port, "STREAM.DELETE.zonecast-txn").get("success")
        assert "error" not in js_api(port, "STREAM.CREATE.zonecast-txn",
                                     json.dumps(new).encode())
        for i in range(4):
            f.api.ok("POST", "/zones/%s/dns_records" % zid,
                     json={"type": "A", "name": "w%d.wq.fleet.test" % i,
                           "content": "192.0.2.1"})
            time.sleep(0.5)
        settle(f.primary, f.edges, timeout=20)
        compare_answers(f.primary, f.edges, [("w3.wq.fleet.test.", "A")])
        cfg = js_api(port, "STREAM.INFO.zonecast-txn")["config"]
        assert cfg["retention"] == "limits" and cfg["storage"] == "file", cfg
        log = f.primary.log()
        assert "deleting it and creating it again" in log, log[-3000:]
        paused = [l for l in f.edges[0].log().splitlines() if "following paused" in l]
        assert len(paused) <= 2, paused
        assert all("NATS/JetStream error: " in l for l in paused), paused
    finally:
        problems = f.stop()
    assert not problems, problems


def test_txn_stream_made_again_holding_as_many_messages_as_an_edge_read(tmp_path):
    """Found by an outside tester (a stream deleted and made again every
    second or so; 1 run in 5): an edge's consumer goes with the txn
    stream, and the stream the primary makes again comes to hold as many
    messages as the edge had read of the old one, so its position (a bare
    sequence number) looks current and nothing came until the next write.
    Here deterministically: the edge stopped (SIGSTOP) while the stream is
    made again and filled to the same last sequence; let go, with no more
    writes, it catches up (the primary's newer snapshot, and the stream's
    new making time, say it is behind)."""
    f = Fleet(tmp_path, edges=1)
    edge = f.edges[0]
    stopped = False
    try:
        port = f.nats[0].port
        zid = create_zone(f.api, "again.fleet.test")
        for i in range(4):
            f.api.ok("POST", "/zones/%s/dns_records" % zid,
                     json={"type": "A", "name": "a%d.again.fleet.test" % i,
                           "content": "192.0.2.1"})
        settle(f.primary, f.edges)

        def last_seq():
            info = js_api(port, "STREAM.INFO.zonecast-txn")
            return info["state"]["last_seq"] if "state" in info else None
        read = last_seq()
        assert read and read >= 3, read
        edge.proc.send_signal(signal.SIGSTOP)
        stopped = True
        assert js_api(port, "STREAM.DELETE.zonecast-txn").get("success")
        deadline = time.monotonic() + 20
        while not last_seq() and time.monotonic() < deadline:
            time.sleep(0.1)      # the primary makes it again (its 2 s look)
        i = 0
        while (last_seq() or 0) < read:
            f.api.ok("POST", "/zones/%s/dns_records" % zid,
                     json={"type": "A", "name": "b%d.again.fleet.test" % i,
                           "content": "192.0.2.2"})
            i += 1
            time.sleep(0.2)
        assert last_seq() == read, (last_seq(), read)   # the same last sequence
        edge.proc.send_signal(signal.SIGCONT)
        stopped = False
        settle(f.primary, f.edges, timeout=15)
        compare_answers(f.primary, f.edges, [("b%d.again.fleet.test." % (i - 1), "A")])
    finally:
        if stopped:
            edge.proc.send_signal(signal.SIGCONT)
        problems = f.stop()
    assert not problems, problems


@pytest.mark.parametrize("what", ["purge-all", "purge-to-last", "made-again-alike",
                                  "made-again-after-a-refused-publish"])
def test_txn_log_gone_under_an_edge_that_was_down(tmp_path, what):
    """Found by outside testers: with an edge down, commits published and
    then taken from NATS under it: the txn stream purged (whole, or up to
    its last message: a purge keeps the last sequence and the making
    time), deleted and made again with the fleet's very settings between
    two of the primary's looks, or between a publish it refused and its
    retry (which took the new stream as its own): the primary published no
    snapshot (nothing looked wrong to it), and the edge, back, stayed
    behind for good. The primary publishes one; the edge has everything
    within seconds, with no more writes."""
    f = Fleet(tmp_path, edges=1)
    edge = f.edges[0]
    try:
        port = f.nats[0].port
        zid = create_zone(f.api, "gone.fleet.test")
        settle(f.primary, f.edges)
        info = js_api(port, "STREAM.INFO.zonecast-txn")
        config, before = info["config"], info["state"]["last_seq"]
        edge.kill9()

        def write(i):
            f.api.ok("POST", "/zones/%s/dns_records" % zid,
                     json={"type": "A", "name": "g%d.gone.fleet.test" % i,
                           "content": "192.0.2.5"})
        for i in range(5):
            write(i)
        deadline = time.monotonic() + 10
        while js_api(port, "STREAM.INFO.zonecast-txn")["state"]["last_seq"] < before + 5:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(0.5)
        last = js_api(port, "STREAM.INFO.zonecast-txn")["state"]["last_seq"]
        if what == "purge-all":
            assert js_api(port, "STREAM.PURGE.zonecast-txn").get("success")
        elif what == "purge-to-last":
            assert js_api(port, "STREAM.PURGE.zonecast-txn",
                          json.dumps({"seq": last}).encode()).get("success")
        else:
            assert js_api(port, "STREAM.DELETE.zonecast-txn").get("success")
            if what == "made-again-after-a-refused-publish":
                write(5)                   # its publish is refused
                time.sleep(0.1)
            made = js_api(port, "STREAM.CREATE.zonecast-txn", json.dumps(config).encode())
            assert "error" not in made, made
        edge.start()
        settle(f.primary, f.edges, timeout=20)
        name = "g5" if what.endswith("publish") else "g4"
        compare_answers(f.primary, f.edges, [("%s.gone.fleet.test." % name, "A")])
    finally:
        problems = f.stop()
    assert not problems, problems


def test_no_snapshot_twice_for_one_position(tmp_path):
    """max_payload 1024 and a snapshot every MiB: one import of ~3 MiB of log
    in one commit crosses the snapshot threshold more than once while the
    store's position stays: one snapshot of that position, not the same id
    published again (its parts overwritten while an edge may load them);
    ids carry a nonce, so no two publishes share one. A late edge loads it."""
    n = NatsServer(str(tmp_path), extra_conf="max_payload: 1024").start()
    f = Fleet(tmp_path, edges=1, nats=[n], primary_options=["fleet-snapshot-mib=1"])
    try:
        create_zone(f.api, "snapone.fleet.test")
        settle(f.primary, f.edges)
        path = os.path.join(str(tmp_path), "imp.zone")
        with open(path, "w") as z:
            z.write("$ORIGIN imp.test.\n$TTL 300\n@ SOA ns1 host 1 3600 600 86400 300\n"
                    "@ NS ns1\nns1 A 192.0.2.53\n")
            for i in range(30000):
                z.write('h%d TXT "%s"\n' % (i, "z" * 60))
        cp = subprocess.run([servers.zonecast_bin(), "zone", "import", "--data-dir",
                             f.primary.data_dir, "imp.test", path],
                            capture_output=True, text=True, timeout=120)
        assert cp.returncode == 0, cp.stderr
        settle(f.primary, f.edges, timeout=90)
        ids = re.findall(r"snapshot (\S+) published", f.primary.log())
        assert len(ids) == len(set(ids)), ids
        positions = [i.rsplit("-", 1)[0] for i in ids]
        assert len(positions) == len(set(positions)), ids
        assert all(len(i.split("-")) == 4 for i in ids), ids
        late = EdgeServer(f.tmp, "late", f.urls).start()
        f.edges.append(late)
        settle(f.primary, f.edges, timeout=30)
        assert "loaded snapshot" in late.log()
    finally:
        problems = f.stop()
    assert not problems, problems


def test_reports_bucket_made_again_is_watched_at_once(tmp_path):
    """The reports bucket deleted and created again (same settings) between
    two of the primary's looks: its watcher starts over within about a
    second, not after 3 s of silence, so with fleet-edge-timeout=3000 the
    edges never show as down."""
    f = Fleet(tmp_path, edges=2, primary_options=["fleet-edge-timeout=3000"])
    try:
        port = f.nats[0].port
        cfg = js_api(port, "STREAM.INFO.KV_zonecast-edges")["config"]
        assert js_api(port, "STREAM.DELETE.KV_zonecast-edges").get("success")
        assert "error" not in js_api(port, "STREAM.CREATE.KV_zonecast-edges",
                                     json.dumps(cfg).encode())
        down = []
        t0 = time.monotonic()
        while time.monotonic() - t0 < 6:
            edges = f.api.get("/fleet")["edges"]
            down += [(round(time.monotonic() - t0, 1), e["name"]) for e in edges
                     if not e["up"]]
            time.sleep(0.2)
        assert not down, down
    finally:
        problems = f.stop()
    assert not problems, problems


def test_max_payload_too_small_is_said_at_start(tmp_path):
    """A nats-server whose max_payload (300) cannot carry the fleet's own
    requests (the bucket's creation is 315 bytes): the primary says so at
    once, naming the setting, and its watcher's retries are not logged
    four times a second."""
    n = NatsServer(str(tmp_path), extra_conf="max_payload: 300").start()
    p = start_primary(str(tmp_path), n.url)
    try:
        time.sleep(4)
        log = p.log()
        assert "max_payload is 300 bytes" in log, log[-3000:]
        assert log.count("watching zonecast-edges again") <= 2, log[-3000:]
    finally:
        problems = p.stop()
        n.stop()
    assert not problems, problems


def test_a_limit_below_the_fleets_then_raised_is_seen(tmp_path):
    """max_payload set below what the fleet needs (300: even one message's
    headers are more) and then raised again, by reloads: the client library
    keeps the limit it read at its connection's start and refuses every
    message over it itself, so the connection is never closed and the
    publisher stayed stuck for good (outside tester 24). A connection that
    took a limit below the fleet's minimum is made again (with backoff)
    until the server's is enough: the edges get every write."""
    n = NatsServer(str(tmp_path)).start()
    f = Fleet(tmp_path, edges=1, nats=[n])
    try:
        zid = create_zone(f.api, "low.fleet.test")
        settle(f.primary, f.edges)
        reload_nats(n, "max_payload: 300")
        f.api.ok("POST", "/zones/%s/dns_records" % zid,
                 json={"type": "TXT", "name": "big.low.fleet.test", "content": "x" * 400})
        time.sleep(2)
        reload_nats(n, "")
        f.api.ok("POST", "/zones/%s/dns_records" % zid,
                 json={"type": "A", "name": "after.low.fleet.test", "content": "192.0.2.1"})
        settle(f.primary, f.edges, timeout=30)
        compare_answers(f.primary, f.edges, [("big.low.fleet.test.", "TXT"),
                                             ("after.low.fleet.test.", "A")])
    finally:
        problems = f.stop()
    assert not problems, problems


def test_receipts_after_a_blind_spell_wait_for_the_edges(tmp_path):
    """NATS down longer than fleet-edge-timeout, a write meanwhile, NATS back:
    the silence while the primary could not see the reports is no sign of the
    edges. The watcher back, the edges counted down at once and a receipt of
    the write said live with live_edges 0 while the edge lacked it (outside
    tester 24). Now a receipt is live only once the edge has the version."""
    n = NatsServer(str(tmp_path)).start()
    f = Fleet(tmp_path, edges=1, nats=[n])
    try:
        zid = create_zone(f.api, "blind.fleet.test")
        settle(f.primary, f.edges)
        import signal
        n.stop(signal.SIGKILL)
        time.sleep(0.3)
        r = f.api.ok("POST", "/zones/%s/dns_records" % zid,
                     json={"type": "TXT", "name": "w.blind.fleet.test", "content": "w"})
        time.sleep(6)   # well past fleet-edge-timeout and the watcher's 3 s
        n.start()
        deadline = time.monotonic() + 20
        while True:
            p = f.api.get("/zones/%s/propagation" % zid,
                          params={"version": r["zone_version"], "wait": 0})
            if p["live"]:
                got = txt(f.edges[0].port, "w.blind.fleet.test.")
                assert got == ['"w"'], (p, got)
                assert p["live_edges"] == 1, p
                break
            assert time.monotonic() < deadline, p
            time.sleep(0.02)
    finally:
        problems = f.stop()
    assert not problems, problems


def test_an_operators_deny_delete_survives_the_primarys_update(tmp_path):
    """An operator set deny_delete on the txn stream (nothing the fleet
    depends on), then changed a limit the fleet does check: the primary's
    update, built without deny_delete, was refused (no update may take it
    back), and the stream was deleted and made again, every edge loading a
    snapshot (outside tester 24). The update keeps it: the stream and its
    messages stay."""
    f = Fleet(tmp_path, edges=1)
    try:
        port = f.nats[0].port
        zid = create_zone(f.api, "deny.fleet.test")
        for i in range(3):
            f.api.ok("POST", "/zones/%s/dns_records" % zid,
                     json={"type": "A", "name": "w%d.deny.fleet.test" % i,
                           "content": "192.0.2.1"})
        settle(f.primary, f.edges)
        cfg = js_api(port, "STREAM.INFO.zonecast-txn")["config"]
        before = js_api(port, "STREAM.INFO.zonecast-txn")["state"]["messages"]
        cfg["deny_delete"] = True
        assert "error" not in js_api(port, "STREAM.UPDATE.zonecast-txn",
                                     json.dumps(cfg).encode())
        cfg["max_age"] = 3600 * 10 ** 9
        assert "error" not in js_api(port, "STREAM.UPDATE.zonecast-txn",
                                     json.dumps(cfg).encode())
        deadline = time.monotonic() + 10
        while js_api(port, "STREAM.INFO.zonecast-txn")["config"].get("max_age", 0):
            assert time.monotonic() < deadline, "the primary did not update the stream"
            time.sleep(0.2)
        info = js_api(port, "STREAM.INFO.zonecast-txn")
        assert info["config"].get("deny_delete") is True, info["config"]
        assert info["state"]["messages"] >= before, (info["state"], before)
        assert "deleting it and creating it again" not in f.primary.log()
        f.api.ok("POST", "/zones/%s/dns_records" % zid,
                 json={"type": "A", "name": "after.deny.fleet.test", "content": "192.0.2.1"})
        settle(f.primary, f.edges)
        compare_answers(f.primary, f.edges, [("after.deny.fleet.test.", "A")])
    finally:
        problems = f.stop()
    assert not problems, problems


def test_an_edge_takes_sighup_and_reopens_its_log(fleet):
    """logrotate's `kill -HUP` after moving an edge's log file: the edge
    reopens it and goes on following the stream (SIGHUP killed it: outside
    tester 37)."""
    api = fleet.api
    zid = create_zone(api, "hup.fleet.test")
    e = fleet.edges[0]
    logfile = os.path.join(e.workdir, "edge-file.log")
    e.kill9()
    e.options.append("log-target=%s" % logfile)
    e.start()
    deadline = time.monotonic() + 20 * servers.TIMEOUT_SCALE
    while not os.path.exists(logfile) and time.monotonic() < deadline:
        time.sleep(0.05)
    os.rename(logfile, logfile + ".1")
    for _ in range(3):
        e.proc.send_signal(signal.SIGHUP)
        time.sleep(0.1)
    post_batch(api, zid, posts=[{"type": "A", "name": "after-hup.hup.fleet.test",
                                 "content": "192.0.2.7"}])
    settle(fleet.primary, fleet.edges)
    assert e.proc.poll() is None, "the edge died of SIGHUP: %s" % e.proc.returncode
    assert answers(e, "after-hup.hup.fleet.test.", "A")[1]
    with open(logfile) as f:
        assert "SIGHUP: log files reopened" in f.read()
