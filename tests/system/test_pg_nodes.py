"""Two zonecast serve nodes on one PostgreSQL records store (issue 17,
docs/postgresql.md "Several nodes"): each has its own data directory and
edge store, both take API writes and UPDATEs at once, and each builds every
change, whichever node took it (woken by the store's commit signal). Every
acknowledged write is served by both nodes, each zone's versions are
gap-free and in order, and each node's edge store equals a full build of
the store (`zonecast verify`)."""

import json
import random
import subprocess
import threading
import time

import dns.message
import dns.query
import dns.rcode
import dns.update
import pytest

import pg
import servers

ZONES = ["n1.test.", "n2.test.", "n3.test."]


@pytest.fixture
def cluster():
    with pg.own_cluster("zonecast-pgn.") as pgdir:
        yield pgdir


psql = pg.psql


node = pg.serve_node


def served(port, name, rdtype="TXT"):
    r = dns.query.udp(dns.message.make_query(name, rdtype), "127.0.0.1", port=port,
                      timeout=2)
    return sorted(rr.to_text() for rrset in r.answer for rr in rrset)


def test_two_nodes_take_writes_and_serve_all_of_them(cluster, tmp_path):
    psql(cluster, "CREATE DATABASE nodes", "postgres")
    uri = "postgresql://zc@/nodes?host=%s" % cluster
    a = node(tmp_path, "a", uri)
    zone_file = tmp_path / "z.zone"
    for z in ZONES:
        zone_file.write_text("$ORIGIN %s\n$TTL 60\n@ SOA ns hm 1 7200 900 1209600 60\n"
                             "@ NS ns\nns A 192.0.2.53\n" % z)
        cp = subprocess.run([servers.zonecast_bin(), "zone", "import", "--data-dir",
                             a.data_dir, z, str(zone_file)], capture_output=True, text=True)
        assert cp.returncode == 0, cp.stderr
    # The second node starts after the zones exist: a fresh edge store is
    # built from the store.
    b = node(tmp_path, "b", uri)
    try:
        clients = {n: (n, n.client(n.create_token())) for n in (a, b)}
        zid = {z: clients[a][1].zone_id(z.rstrip(".")) for z in ZONES}
        acked = []          # (name, text)
        lag = []
        errors = []
        lock = threading.Lock()

        def writer(srv, other, seed, count):
            rnd = random.Random(seed)
            api = clients[srv][1]
            for i in range(count):
                z = rnd.choice(ZONES)
                name = "w%d-%d.%s" % (seed, i, z)
                text = '"%d-%d"' % (seed, i)
                try:
                    if rnd.random() < 0.5:
                        api.ok("POST", "/zones/%s/dns_records?wait=live" % zid[z],
                               {"type": "TXT", "name": name.rstrip("."),
                                "content": text.strip('"'), "ttl": 60})
                    else:
                        up = dns.update.UpdateMessage(z)
                        up.add(name, 60, "TXT", text)
                        r = dns.query.tcp(up, "127.0.0.1", port=srv.port, timeout=10)
                        assert r.rcode() == dns.rcode.NOERROR, dns.rcode.to_text(r.rcode())
                    # Acknowledged (the API with ?wait=live, UPDATE always):
                    # served by the node that took it, at once.
                    got = served(srv.port, name)
                    if got != [text]:
                        time.sleep(1)
                        raise AssertionError("%s acked by %s not served: %r; 1 s later %r,"
                                             " other %r" % (name, srv.port, got,
                                                            served(srv.port, name),
                                                            served(other.port, name)))
                    t0 = time.monotonic()
                    while served(other.port, name) != [text]:
                        assert time.monotonic() - t0 < 5, "not served by the other node"
                        time.sleep(0.001)
                    with lock:
                        acked.append((name, text))
                        lag.append(time.monotonic() - t0)
                except Exception as e:  # noqa: BLE001 - reported below
                    with lock:
                        errors.append(repr(e))
                    return

        threads = [threading.Thread(target=writer, args=(a, b, 1, 40)),
                   threading.Thread(target=writer, args=(a, b, 2, 40)),
                   threading.Thread(target=writer, args=(b, a, 3, 40)),
                   threading.Thread(target=writer, args=(b, a, 4, 40))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        assert len(acked) == 160
        for name, text in acked:
            assert served(a.port, name) == [text]
            assert served(b.port, name) == [text]
        lag.sort()
        print("other node serves a write %.1f ms (p50) after it was acknowledged"
              % (1000 * lag[len(lag) // 2]))
        # Versions: gap-free and in order, one per write (and the import).
        for z in ZONES:
            rows = psql(cluster, "SELECT v.version FROM zone_versions v JOIN zones z ON"
                        " z.id = v.zone_id WHERE z.name = '%s' ORDER BY v.version" % z,
                        "nodes").split()
            versions = [int(v) for v in rows]
            serial = int(psql(cluster, "SELECT serial FROM zones WHERE name = '%s'" % z,
                              "nodes"))
            assert versions == list(range(versions[0], serial + 1)), (z, versions, serial)
            soa = lambda srv: dns.query.udp(dns.message.make_query(z, "SOA"), "127.0.0.1",
                                            port=srv.port, timeout=2).answer[0][0].serial
            assert soa(a) == soa(b) == serial
    finally:
        a.stop()
        b.stop()
    for srv in (a, b):
        cp = subprocess.run([servers.zonecast_bin(), "verify", "--data-dir", srv.data_dir],
                            capture_output=True, text=True)
        assert "no differences" in cp.stdout, cp.stdout + cp.stderr


def test_two_nodes_write_two_zones_in_opposite_orders(cluster, tmp_path):
    """Writers to one zone serialise on that zone only (docs/design-postgresql.md
    §4.3): node A's clients write zone one then zone two, node B's zone two
    then zone one, all at once, so each node's batches hold one zone while
    the other node's ask for it. No write fails (no 503 busy), no deadlock
    is left for PostgreSQL to break, batches that met the other node's zone
    were cut and their rest run next, each zone's versions are gap-free and
    one per write, and both nodes serve every write."""
    uri = pg.database(cluster, "opposite")
    a = node(tmp_path, "a", uri)
    zones = ["one.test.", "two.test."]
    zone_file = tmp_path / "z.zone"
    for z in zones:
        zone_file.write_text("$ORIGIN %s\n$TTL 60\n@ SOA ns hm 1 7200 900 1209600 60\n"
                             "@ NS ns\nns A 192.0.2.53\n" % z)
        cp = subprocess.run([servers.zonecast_bin(), "zone", "import", "--data-dir",
                             a.data_dir, z, str(zone_file)], capture_output=True, text=True)
        assert cp.returncode == 0, cp.stderr
    b = node(tmp_path, "b", uri)
    try:
        tokens = {srv: srv.create_token() for srv in (a, b)}
        zid = {z: a.client(tokens[a]).zone_id(z.rstrip(".")) for z in zones}
        serial0 = {z: int(psql(cluster, "SELECT serial FROM zones WHERE name = '%s'" % z,
                               "opposite")) for z in zones}
        deadlocks0 = int(psql(cluster, "SELECT deadlocks FROM pg_stat_database WHERE"
                              " datname = 'opposite'"))
        written = []
        errors = []
        lock = threading.Lock()
        rounds = 25

        def writer(srv, order, tag):
            api = srv.client(tokens[srv])
            try:
                for i in range(rounds):
                    for z in order:
                        name = "%s-%d.%s" % (tag, i, z)
                        api.ok("POST", "/zones/%s/dns_records" % zid[z],
                               {"type": "TXT", "name": name.rstrip("."),
                                "content": tag, "ttl": 60})
                        with lock:
                            written.append(name)
            except Exception as e:  # noqa: BLE001 - reported below
                with lock:
                    errors.append(repr(e))

        threads = [threading.Thread(target=writer, args=(a, zones, "a%d" % k))
                   for k in range(4)]
        threads += [threading.Thread(target=writer, args=(b, zones[::-1], "b%d" % k))
                    for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        assert len(written) == 8 * rounds * 2
        cut = 0
        for srv in (a, b):
            st = subprocess.run([servers.zonecast_bin(), "status", "--json", "--data-dir",
                                 srv.data_dir], capture_output=True, text=True, check=True)
            cut += json.loads(st.stdout)["writer"]["cut_batches"]
        print("batches cut at a zone the other node held: %d" % cut)
        for z in zones:
            rows = psql(cluster, "SELECT v.version FROM zone_versions v JOIN zones z ON"
                        " z.id = v.zone_id WHERE z.name = '%s' ORDER BY v.version" % z,
                        "opposite").split()
            serial = int(psql(cluster, "SELECT serial FROM zones WHERE name = '%s'" % z,
                              "opposite"))
            assert serial == serial0[z] + 8 * rounds
            assert [int(v) for v in rows] == list(range(serial0[z] + 1, serial + 1))
        for name in written:
            for srv in (a, b):
                t0 = time.monotonic()
                while served(srv.port, name) == []:
                    assert time.monotonic() - t0 < 5, (name, srv.port)
                    time.sleep(0.01)
    finally:
        a.stop()
        b.stop()
    deadlocks = int(psql(cluster, "SELECT deadlocks FROM pg_stat_database WHERE"
                         " datname = 'opposite'"))
    assert deadlocks == deadlocks0
    for srv in (a, b):
        cp = subprocess.run([servers.zonecast_bin(), "verify", "--data-dir", srv.data_dir],
                            capture_output=True, text=True)
        assert "no differences" in cp.stdout, cp.stdout + cp.stderr


def _signed(zone, key, name, text):
    u = dns.update.UpdateMessage(zone, keyring=key.keyring, keyalgorithm=key.algorithm + ".")
    u.add(name, 60, "TXT", text)
    return u


def _send(srv, u):
    """(rcode, TSIG error or None) of an UPDATE over TCP, read raw: dnspython
    raises on a BADKEY answer, which is unsigned."""
    wire = servers.exchange_from("127.0.0.1", srv.port, u.to_wire(), tcp=True, timeout=10)
    assert wire is not None, "no answer"
    r, _owner, rd, _ = servers.split_tsig(wire)
    return r.rcode(), (rd.error if rd is not None else None)


def test_a_key_deleted_through_one_node_is_refused_by_the_other_at_once(cluster, tmp_path):
    """Each node keeps the TSIG keys it read a while (update/service.c), and
    the committer checks in its transaction that the key still exists
    (update/policy.c update_key_check()). Node B has the key kept; node A
    deletes it: once A acknowledged the delete, B answers a signed UPDATE
    NOTAUTH with BADKEY and writes nothing. A key made again under the name
    (a new secret) works at once through B; one made again with the same
    secret and narrower grants (a new id: simulated in SQL) is judged by its
    own grants."""
    uri = pg.database(cluster, "keys")
    a = node(tmp_path, "a", uri)
    zone = "k.test."
    zone_file = tmp_path / "z.zone"
    zone_file.write_text("$ORIGIN %s\n$TTL 60\n@ SOA ns hm 1 7200 900 1209600 60\n"
                         "@ NS ns\nns A 192.0.2.53\n" % zone)
    cp = subprocess.run([servers.zonecast_bin(), "zone", "import", "--data-dir",
                         a.data_dir, zone, str(zone_file)], capture_output=True, text=True)
    assert cp.returncode == 0, cp.stderr
    b = node(tmp_path, "b", uri)
    try:
        api = a.client()
        zid = api.zone_id(zone.rstrip("."))
        base = "/zones/%s/tsig_keys" % zid

        def make_key():
            res = api.ok("POST", base, {"name": "k1"})["result"]
            return res["id"], servers.TsigKey(res["name"], res["algorithm"], res["secret"])

        kid, key = make_key()
        for i in range(3):   # B reads the key, then keeps it
            assert _send(b, _signed(zone, key, "before%d.k.test." % i, "x")) == (0, 0)
        api.ok("DELETE", "%s/%s" % (base, kid))
        rcode, err = _send(b, _signed(zone, key, "after.k.test.", "x"))
        assert (rcode, err) == (dns.rcode.NOTAUTH, dns.rcode.BADKEY), (rcode, err)
        assert served(b.port, "after.k.test.") == []
        def stored(label):
            return psql(cluster, "SELECT count(*) FROM records WHERE position('\\x%02x%s'"
                        "::bytea in owner) > 0" % (len(label), label.encode().hex()),
                        "keys").strip()
        assert stored("before0") == "1" and stored("after") == "0"
        # made again: a new secret, through B at once; the old one is refused
        kid, key2 = make_key()
        assert _send(b, _signed(zone, key2, "again.k.test.", "x")) == (0, 0)
        rcode, err = _send(b, _signed(zone, key, "old.k.test.", "x"))
        assert (rcode, err) == (dns.rcode.NOTAUTH, dns.rcode.BADSIG), (rcode, err)
        # the same secret under a new id, granted TXT below dyn. only
        psql(cluster, "UPDATE tsig_keys SET id = id + 1000, grants = 'subdomain:dyn.k.test.:TXT'"
             " WHERE id = %s" % kid, "keys")
        rcode, err = _send(b, _signed(zone, key2, "outside.k.test.", "x"))
        assert (rcode, err) == (dns.rcode.REFUSED, 0), (rcode, err)
        assert _send(b, _signed(zone, key2, "x.dyn.k.test.", "x")) == (0, 0)
        assert served(b.port, "x.dyn.k.test.") == ['"x"']
        assert served(a.port, "again.k.test.") == ['"x"']
    finally:
        for srv in (a, b):
            srv.stop()
