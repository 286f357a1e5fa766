"""Attacks on the PostgreSQL driver's pipeline (rdb_defer(), db_pg_pipe.c;
docs/design-postgresql.md §4.2): statements whose rows nobody reads are
queued and answered with the unit's next read, its RELEASE or the COMMIT.
What must hold (src/writer/writer.c): each API request / UPDATE message is
one unit of a group commit; a unit that fails is rolled back alone and gets
its own error; acknowledged = committed; versions step by one per kept
unit; `zonecast verify` agrees with what is served.

- batches that fail late (a duplicate inside the batch, a CNAME beside data
  the batch created, a failure last in a batch larger than the pipeline's
  queue) while other clients write single records to the same and another
  zone: every other unit succeeds, each failing one gets its own 4xx, and
  the zone's versions have no gap and no repeat;
- odd names in batches (NUL, backslash, dot inside a label, 63-octet
  labels, 255-octet names) and names differing only in case;
- many UPDATE messages at once, half of them refused by a prerequisite:
  nothing half-applied;
- the writer's backend terminated (pg_terminate_backend) while batches are
  queued: no success that is not in the store, verify clean after;
- a zone larger than a scan page (8,192 rows) exported whole, each record
  once, and the per-record build after a batch that creates and deletes
  the same names.

Runs its own PostgreSQL cluster (dev/pg); skips when it is not installed."""

import os
import subprocess
import threading
import time

import dns.message
import dns.name
import dns.query
import dns.rcode
import dns.update
import pytest

import pg
import servers
from servers import verify_clean


@pytest.fixture(scope="module")
def cluster():
    if not os.path.exists(servers.zonecast_bin()):
        pytest.skip("zonecast is not built")
    with pg.own_cluster("zc-pipe.") as pgdir:
        yield pgdir


_dbs = iter(range(1, 10 ** 6))


@pytest.fixture
def node(cluster, tmp_path):
    name = "p%d_%d" % (os.getpid(), next(_dbs))
    uri = pg.database(cluster, name)
    srv = pg.serve_node(tmp_path, "n", uri)
    srv.dbname = name
    srv.cluster_host = cluster
    yield srv
    srv.stop()


def answer(port, name, rdtype="A"):
    r = dns.query.tcp(dns.message.make_query(name, rdtype), "127.0.0.1", port=port,
                      timeout=3)
    return r.rcode(), sorted(rr.to_text() for rrset in r.answer for rr in rrset)


def wait_for(what, fn, timeout=20):
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() > deadline:
            pytest.fail("timed out waiting for %s" % what)
        time.sleep(0.05)


def new_zone(api, name):
    return api.ok("POST", "/zones", json={"name": name})["result"]["id"]


def store_rows(cluster, srv, zone, sql_where="TRUE"):
    return pg.psql(cluster, "SELECT r.id, r.type FROM records r JOIN zones z ON"
                            " z.id = r.zone_id WHERE z.name = '%s.' AND %s"
                            % (zone, sql_where), db=srv.dbname).split()


def a_posts(prefix, zone, n, start=0):
    return [{"type": "A", "name": "%s%d.%s" % (prefix, i, zone),
             "content": "192.0.2.%d" % (i % 250 + 1)} for i in range(start, start + n)]


# ------------------------------------------------------------ late failures, concurrent

def late_failures(zone):
    """Batches that must fail only after the batch queued other writes."""
    dup = {"type": "TXT", "name": "dup." + zone, "content": '"same"'}
    return [
        # the same record twice in one batch
        {"posts": a_posts("d", zone, 40) + [dup, dup]},
        # a CNAME beside data the batch created earlier
        {"posts": a_posts("c", zone, 40) + [{"type": "A", "name": "cn." + zone,
                                             "content": "192.0.2.1"},
                                            {"type": "CNAME", "name": "cn." + zone,
                                             "content": "target.example"}]},
        # data beside a CNAME the batch created earlier
        {"posts": [{"type": "CNAME", "name": "cn2." + zone, "content": "t.example"}]
                  + a_posts("e", zone, 30)
                  + [{"type": "TXT", "name": "cn2." + zone, "content": '"x"'}]},
        # a delete of a record that does not exist, after posts
        {"posts": a_posts("f", zone, 30), "deletes": [{"id": "f" * 32}]},
    ]


def test_late_failing_batches_among_concurrent_single_writes(node):
    api = node.client()
    zone, other = "late.test", "other.test"
    zid, oid = new_zone(api, zone), new_zone(api, other)
    v0 = api.get("/zones/%s" % zid)["serial"]
    results = []     # (zone id, status, version or None, what)
    lock = threading.Lock()

    def record(zone_id, r, what):
        v = r.json().get("zone_version") if r.status_code == 200 else None
        with lock:
            results.append((zone_id, r.status_code, v, what, r.text[:300]))

    def batcher(k):
        for round_ in range(4):
            for j, body in enumerate(late_failures(zone)):
                r = api.call("POST", "/zones/%s/dns_records/batch" % zid, json=body,
                             timeout=60)
                record(zid, r, "bad-batch-%d" % j)
            good = {"posts": a_posts("g%d-%d-" % (k, round_), zone, 25)}
            r = api.call("POST", "/zones/%s/dns_records/batch" % zid, json=good, timeout=60)
            record(zid, r, "good-batch")

    def single(zone_id, zname, k):
        for i in range(40):
            r = api.call("POST", "/zones/%s/dns_records" % zone_id,
                         json={"type": "A", "name": "s%d-%d.%s" % (k, i, zname),
                               "content": "198.51.100.1"}, timeout=60)
            record(zone_id, r, "single")

    threads = [threading.Thread(target=batcher, args=(k,)) for k in range(2)]
    threads += [threading.Thread(target=single, args=(zid, zone, 0)),
                threading.Thread(target=single, args=(oid, other, 1))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    bad = [r for r in results if r[3].startswith("bad") and not 400 <= r[1] < 500]
    assert not bad, bad
    good = [r for r in results if not r[3].startswith("bad") and r[1] != 200]
    assert not good, good
    versions = sorted(r[2] for r in results if r[0] == zid and r[1] == 200)
    assert versions == list(range(v0 + 1, v0 + 1 + len(versions))), versions
    assert api.get("/zones/%s" % zid)["serial"] == v0 + len(versions)
    # nothing of a failed batch is kept
    names = {r["name"] for r in api.records(zid)}
    for prefix in ("d0.", "c0.", "e0.", "f0.", "dup.", "cn.", "cn2."):
        assert prefix + zone not in names, prefix
    assert len(names & {"s0-%d.%s" % (i, zone) for i in range(40)}) == 40
    assert len(api.records(oid)) >= 40
    wait_for("serial served", lambda: node.answers_soa(zone))
    assert pg.version_index_problems(node.cluster_host, node.dbname, zone, events_required=True) == []
    verify_clean(node)


def test_failure_last_in_a_batch_larger_than_the_queue(node):
    api = node.client()
    zone = "big.test"
    zid = new_zone(api, zone)
    v0 = api.get("/zones/%s" % zid)["serial"]
    path = "/zones/%s/dns_records/batch" % zid
    posts = a_posts("r", zone, 6000)
    # the duplicate of the first record, at the very end
    r = api.call("POST", path, json={"posts": posts + [dict(posts[0])]}, timeout=300)
    assert 400 <= r.status_code < 500, r.text[:500]
    # a CNAME beside a record of the batch, 3 before the end
    r = api.call("POST", path, json={"posts": posts + [
        {"type": "CNAME", "name": posts[-1]["name"], "content": "x.example"}] + posts[:0]},
        timeout=300)
    assert 400 <= r.status_code < 500, r.text[:500]
    assert api.get("/zones/%s" % zid)["serial"] == v0
    assert store_rows(node.cluster_host, node, zone, "r.type = 1") == []
    r = api.call("POST", path, json={"posts": posts}, timeout=300)
    assert r.status_code == 200, r.text[:500]
    body = r.json()
    assert body["zone_version"] == v0 + 1
    assert len(body["result"]["posts"]) == 6000
    ids = [p["id"] for p in body["result"]["posts"]]
    assert len(set(ids)) == 6000
    assert [p["name"] for p in body["result"]["posts"]] == [p["name"] for p in posts]
    assert len(store_rows(node.cluster_host, node, zone, "r.type = 1")) == 6000
    verify_clean(node)


# ------------------------------------------------------------ odd names, case

def odd_label_names(zone):
    origin = dns.name.from_text(zone)
    labels = [b"\x00", b"a\x00b", b"\\", b"a.b", b"x" * 63, b"\xff"]
    names = [dns.name.Name([lab] + list(origin.labels)) for lab in labels]
    room = 255 - len(origin.to_wire())
    long_labels = []
    while room > 1:
        n = min(63, room - 1)
        long_labels.append(b"\x00" * n if len(long_labels) % 2 else b"z" * n)
        room -= n + 1
    names.append(dns.name.Name(long_labels + list(origin.labels)))
    return names


def test_odd_names_and_case_in_one_batch(node):
    api = node.client()
    zone = "odd.test"
    zid = new_zone(api, zone)
    names = odd_label_names(zone)
    posts = [{"type": "TXT", "name": n.to_text().rstrip("."), "content": '"%d"' % i}
             for i, n in enumerate(names)]
    # names differing only in case: one node, two records of it
    posts += [{"type": "A", "name": "MiXeD." + zone, "content": "192.0.2.1"},
              {"type": "A", "name": "mixed." + zone, "content": "192.0.2.2"}]
    body = api.ok("POST", "/zones/%s/dns_records/batch" % zid, json={"posts": posts})
    assert len(body["result"]["posts"]) == len(posts)
    # the same record again under another case is a duplicate, and fails the batch
    r = api.call("POST", "/zones/%s/dns_records/batch" % zid, json={
        "posts": a_posts("q", zone, 10) + [{"type": "A", "name": "MIXED." + zone,
                                           "content": "192.0.2.2"}]})
    assert 400 <= r.status_code < 500, r.text
    assert not any(x["name"].startswith("q0.") for x in api.records(zid))
    for i, n in enumerate(names):
        wait_for(n.to_text(), lambda: answer(node.port, n, "TXT")[1] != [])
        assert answer(node.port, n, "TXT")[1] == ['"%d"' % i]
    assert answer(node.port, "mixed." + zone, "A")[1] == ["192.0.2.1", "192.0.2.2"]
    verify_clean(node)


def test_create_and_delete_the_same_names_then_per_record_build(node):
    """A batch that deletes every record of some names and creates others:
    the per-record build (records_nodes_foreach, array parameters) must
    empty those nodes and fill the new ones."""
    api = node.client()
    zone = "churn.test"
    zid = new_zone(api, zone)
    path = "/zones/%s/dns_records/batch" % zid
    first = api.ok("POST", path, json={"posts": a_posts("n", zone, 300)})["result"]["posts"]
    wait_for("first served", lambda: answer(node.port, "n299." + zone)[1] != [])
    # delete all of them; re-create half of the names, under another case,
    # with other data
    body = api.ok("POST", path, json={
        "deletes": [{"id": p["id"]} for p in first],
        "posts": [{"type": "AAAA", "name": "N%d.%s" % (i, zone), "content": "2001:db8::%x" % (i + 1)}
                  for i in range(0, 300, 2)]})
    v = body["zone_version"]
    wait_for("serial", lambda: node.answers_soa(zone) and
             answer(node.port, zone + ".", "SOA")[1][0].split()[2] == str(v))
    for i in (0, 1, 2, 3, 298, 299):
        rc, a = answer(node.port, "n%d.%s" % (i, zone), "A")
        assert a == [], (i, a)
        rc6, a6 = answer(node.port, "n%d.%s" % (i, zone), "AAAA")
        if i % 2:
            assert rc == dns.rcode.NXDOMAIN, i
        else:
            assert rc == dns.rcode.NOERROR and a6 == ["2001:db8::%x" % (i + 1)], (i, a6)
    verify_clean(node)


# ------------------------------------------------------------ UPDATE, many at once

def test_concurrent_updates_half_refused_by_prerequisites(node):
    api = node.client()
    zone = "upd.test"
    new_zone(api, zone)
    outcomes, lock = [], threading.Lock()

    def client(k):
        for i in range(15):
            up = dns.update.UpdateMessage(zone + ".")
            refused = (i % 2 == 1)
            if refused:
                # prerequisite that fails: a name that must exist does not
                up.present("absent-%d-%d.%s." % (k, i, zone))
            else:
                up.absent("m%d-%d.%s." % (k, i, zone))
            for j in range(6):
                up.add("m%d-%d-%d.%s." % (k, i, j, zone), 60, "A", "192.0.2.%d" % (j + 1))
            up.add("m%d-%d.%s." % (k, i, zone), 60, "TXT", '"t"')
            r = dns.query.tcp(up, "127.0.0.1", port=node.port, timeout=30)
            with lock:
                outcomes.append((k, i, refused, r.rcode()))

    threads = [threading.Thread(target=client, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert len(outcomes) == 90
    for k, i, refused, rc in outcomes:
        assert rc == (dns.rcode.NXDOMAIN if refused else dns.rcode.NOERROR), (k, i, rc)
    rows = store_rows(node.cluster_host, node, zone, "r.type IN (1, 16)")
    assert len(rows) == 7 * sum(1 for o in outcomes if not o[2])
    for k, i, refused, rc in outcomes:
        name = "m%d-%d-5.%s." % (k, i, zone)
        got = answer(node.port, name)
        assert (got[1] == []) == refused, (name, got)
    assert pg.version_index_problems(node.cluster_host, node.dbname, zone, events_required=True) == []
    verify_clean(node)


# ------------------------------------------------------------ the writer's backend killed

def writer_backends(cluster, dbname):
    out = pg.psql(cluster, "SELECT pid FROM pg_stat_activity WHERE datname = '%s'"
                           " AND application_name = 'zonecast' AND pid <> pg_backend_pid()"
                           " AND (backend_xid IS NOT NULL OR query ILIKE '%%INSERT INTO records%%'"
                           " OR query ILIKE '%%SAVEPOINT%%' OR query ILIKE '%%RELEASE%%')"
                           % dbname, check=False)
    return [int(x) for x in out.split()]


def run_batches_under(node, zone, disrupt, rounds=4, clients=3):
    """Clients post batches of 60 records (the last one a duplicate of the
    first on every third batch: a late failure) while disrupt() runs;
    returns (acked names, failed-batch names by status)."""
    api = node.client()
    zid = new_zone(api, zone)
    acked, statuses, lock = [], [], threading.Lock()
    stop = threading.Event()

    def client(k):
        i = 0
        while not stop.is_set():
            posts = a_posts("b%d-%d-" % (k, i), zone, 60)
            late = i % 3 == 2
            body = {"posts": posts + ([dict(posts[0])] if late else [])}
            try:
                r = api.call("POST", "/zones/%s/dns_records/batch" % zid, json=body,
                             timeout=60)
                st = r.status_code
            except Exception as e:  # a reset connection is no ack
                st = repr(e)
            with lock:
                statuses.append((late, st, r.text[:200] if not isinstance(st, str) else ""))
                if st == 200:
                    assert not late, "a batch with a duplicate was acknowledged"
                    acked.extend(p["name"] for p in posts)
            i += 1

    def updater():
        i = 0
        while not stop.is_set():
            up = dns.update.UpdateMessage(zone + ".")
            for j in range(5):
                up.add("u%d-%d.%s." % (i, j, zone), 60, "A", "192.0.2.%d" % (j + 1))
            if i % 4 == 3:
                # refused late: a prerequisite that fails after nothing else
                up.present("nowhere-%d.%s." % (i, zone))
            try:
                r = dns.query.tcp(up, "127.0.0.1", port=node.port, timeout=30)
                rc = r.rcode()
            except Exception as e:
                rc = repr(e)
            with lock:
                statuses.append((i % 4 == 3, "dns:%s" % rc, ""))
                if rc == dns.rcode.NOERROR:
                    assert i % 4 != 3, "an UPDATE with a failing prerequisite was applied"
                    acked.extend("u%d-%d.%s" % (i, j, zone) for j in range(5))
            i += 1

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    threads.append(threading.Thread(target=updater))
    for t in threads:
        t.start()
    try:
        for _ in range(rounds):
            time.sleep(0.7)
            disrupt()
    finally:
        time.sleep(1.5)
        stop.set()
        for t in threads:
            t.join(timeout=120)
    return zid, acked, statuses


def check_after(node, zid, zone, acked, statuses):
    api = node.client()
    for late, st, text in statuses:
        if late:
            assert st not in (200, "dns:%d" % dns.rcode.NOERROR)
        if isinstance(st, str) and st.startswith("dns:"):
            assert st in ("dns:%d" % c for c in (dns.rcode.NOERROR, dns.rcode.NXDOMAIN,
                                                 dns.rcode.SERVFAIL)) or "Timeout" in st, st
            continue
        assert st in (200, 400, 409, 422, 503) or isinstance(st, str), (st, text)
    # the store holds every acknowledged record, once
    r = api.call("POST", "/zones/%s/dns_records?wait=live" % zid,
                 json={"type": "A", "name": "after." + zone, "content": "192.0.2.9"},
                 timeout=60)
    assert r.status_code == 200, r.text
    names = [x["name"] for x in api.records(zid) if x["type"] == "A"]
    assert len(names) == len(set(names))
    missing = set(acked) - set(names)
    assert not missing, sorted(missing)[:10]
    # every batch is whole or absent
    by_batch = {}
    for n in names:
        if n[0] in "bu":
            key = n.split("-")[0] if n[0] == "u" else "-".join(n.split("-")[:2])
            by_batch.setdefault(key, []).append(n)
    torn = {b: len(v) for b, v in by_batch.items() if len(v) != (60 if b[0] == "b" else 5)}
    assert not torn, torn
    for name in acked[::37]:
        wait_for(name, lambda: answer(node.port, name + ".")[1] != [])
    verify_clean(node)


def test_writer_backend_terminated_while_batches_queue(node):
    cluster, db = node.cluster_host, node.dbname
    killed = []

    def disrupt():
        for _ in range(20):
            pids = writer_backends(cluster, db)
            if pids:
                for pid in pids:
                    pg.psql(cluster, "SELECT pg_terminate_backend(%d)" % pid, check=False)
                killed.extend(pids)
                return
            time.sleep(0.02)

    zone = "term.test"
    zid, acked, statuses = run_batches_under(node, zone, disrupt, rounds=6)
    assert killed, "no backend found to terminate"
    assert acked
    check_after(node, zid, zone, acked, statuses)
    assert node.proc.poll() is None


@pytest.mark.parametrize("mode", ["fast", "immediate"])
def test_postgresql_restarted_while_batches_queue(node, mode):
    cluster = node.cluster_host

    def disrupt():
        ctl = [os.path.join(pg.bindir(), "pg_ctl"), "-D", os.path.join(cluster, "data"),
               "stop", "-m", mode, "-w"]
        if os.geteuid() == 0:
            ctl = ["runuser", "-u", "postgres", "--"] + ctl
        subprocess.run(ctl, check=True, capture_output=True)
        time.sleep(0.3)
        subprocess.run([pg.DEV_PG, "start", cluster], check=True, capture_output=True)

    zone = "restart-%s.test" % mode
    zid, acked, statuses = run_batches_under(node, zone, disrupt, rounds=3)
    assert acked
    assert any(st != 200 for late, st, _ in statuses if not late), "no write met the restart"
    check_after(node, zid, zone, acked, statuses)
    assert node.proc.poll() is None


# ------------------------------------------------------------ zones past a scan page

def test_zone_past_several_scan_pages_exported_and_rebuilt_whole(node):
    """Paged scans (scan.c: keyset by (okey, type, id), 8,192 rows a page):
    one RRset of 4,000 A records after 8,000 records at names sorting
    before it (a page boundary inside one (okey, type): an RRset fits in
    one DNS message, so no RRset spans a whole page), and 4,000 TXT at
    names after it. The CLI and API exports, and a full build after the
    edge store is removed, hold each record once."""
    api = node.client()
    zone = "huge.test"
    zid = new_zone(api, zone)
    path = "/zones/%s/dns_records/batch" % zid
    big = [{"type": "A", "name": "big." + zone, "content": "10.0.%d.%d" % (i >> 8, i & 255)}
           for i in range(4000)]
    api.ok("POST", path, json={"posts": big}, timeout=300)
    others = []
    for i in range(4000):
        others += [{"type": "A", "name": "a%d.%s" % (i, zone), "content": "192.0.2.%d" % (i % 250 + 1)},
                   {"type": "AAAA", "name": "a%d.%s" % (i, zone), "content": "2001:db8::%x" % (i + 1)},
                   {"type": "TXT", "name": "H%d.%s" % (i, zone), "content": '"t%d"' % i}]
    for k in range(0, len(others), 6000):
        api.ok("POST", path, json={"posts": others[k:k + 6000]}, timeout=300)
    expected = 4000 + 12000

    def count_export(text):
        lines = [ln for ln in text.splitlines() if ln and not ln.startswith((";", "$"))]
        data = [ln for ln in lines if " SOA " not in ln and "\tSOA\t" not in ln
                and " NS " not in ln and "\tNS\t" not in ln]
        return data

    cli = node.run_cli("zone", "export", "--data-dir", node.data_dir, zone, timeout=300)
    rows = count_export(cli.stdout)
    assert len(rows) == expected, len(rows)
    assert len(set(rows)) == expected
    r = api.call("GET", "/zones/%s/dns_records/export" % zid, timeout=300)
    assert r.status_code == 200
    assert sorted(count_export(r.text)) == sorted(rows)
    # a full build from the records store
    node.stop()
    os.unlink(os.path.join(node.data_dir, "edge.mdb"))
    node.serve()
    wait_for("rebuilt", lambda: node.answers_soa(zone), 120)
    verify_clean(node)
    for i in (0, 1, 2047, 3999):
        assert answer(node.port, "a%d.%s." % (i, zone), "AAAA")[1] == ["2001:db8::%x" % (i + 1)]
        assert answer(node.port, "h%d.%s." % (i, zone), "TXT")[1] == ['"t%d"' % i]
    r = dns.query.tcp(dns.message.make_query("big." + zone, "A"), "127.0.0.1",
                      port=node.port, timeout=10)
    got = {rr.to_text() for rrset in r.answer for rr in rrset}
    assert len(got) == 4000 and not r.flags & dns.flags.TC, (len(got), r.flags)


# ------------------------------------------------------------ a quota reached mid-message

def test_updates_and_batches_that_pass_zone_max_records_late(cluster, tmp_path):
    """zone-max-records makes the last add of a message fail after the
    earlier adds were queued: such a message changes nothing (SERVFAIL /
    400), the others are whole, the count never passes the limit."""
    name = "q%d_%d" % (os.getpid(), next(_dbs))
    uri = pg.database(cluster, name)
    srv = pg.serve_node(tmp_path, "q", uri, options=["zone-max-records=120"])
    try:
        api = srv.client()
        zone = "quota.test"
        zid = new_zone(api, zone)
        base = len(api.records(zid))
        outcomes, lock = [], threading.Lock()

        def upd(k):
            for i in range(8):
                up = dns.update.UpdateMessage(zone + ".")
                for j in range(7):
                    up.add("u%d-%d-%d.%s." % (k, i, j, zone), 60, "A", "192.0.2.%d" % (j + 1))
                r = dns.query.tcp(up, "127.0.0.1", port=srv.port, timeout=30)
                with lock:
                    outcomes.append(("u%d-%d-" % (k, i), 7, r.rcode()))

        def batch(k):
            for i in range(5):
                r = api.call("POST", "/zones/%s/dns_records/batch" % zid,
                             json={"posts": a_posts("b%d-%d-" % (k, i), zone, 9)}, timeout=60)
                with lock:
                    outcomes.append(("b%d-%d-" % (k, i), 9, r.status_code))

        threads = [threading.Thread(target=upd, args=(k,)) for k in range(3)]
        threads += [threading.Thread(target=batch, args=(k,)) for k in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
        recs = api.records(zid)
        assert len(recs) <= 120
        names = [r["name"] for r in recs]
        kept = 0
        for prefix, n, code in outcomes:
            mine = [x for x in names if x.startswith(prefix)]
            if code in (dns.rcode.NOERROR, 200):
                assert len(mine) == n, (prefix, code, mine)
                kept += n
            else:
                assert code in (dns.rcode.SERVFAIL, 400), (prefix, code)
                assert mine == [], (prefix, code, mine)
        assert kept == len(recs) - base
        assert any(c in (dns.rcode.SERVFAIL, 400) for _, _, c in outcomes)
        counted = pg.psql(cluster, "SELECT record_count FROM zones WHERE name = '%s.'" % zone,
                          db=name).strip()
        assert int(counted) == len(recs)
        assert pg.version_index_problems(cluster, name, zone, events_required=True) == []
        verify_clean(srv)
    finally:
        srv.stop()


# ------------------------------------------------------------ where the failure surfaces

def test_a_duplicate_answers_the_same_wherever_the_queue_is_synced(node):
    """A duplicate's unique violation surfaces at whatever statement syncs
    the queue next: a read, the release, or the sync forced by a full
    queue (PIPE_MAX). The answer must not depend on which."""
    api = node.client()
    zone = "where.test"
    zid = new_zone(api, zone)
    path = "/zones/%s/dns_records/batch" % zid
    answers = {}
    for n in list(range(0, 8)) + list(range(60, 140, 3)) + [255, 256, 257, 511, 512]:
        posts = a_posts("w%d-" % n, zone, n)
        body = {"posts": posts + [{"type": "A", "name": "dup." + zone, "content": "192.0.2.7"}] * 2
                + a_posts("z%d-" % n, zone, 3)}
        r = api.call("POST", path, json=body, timeout=120)
        answers[n] = (r.status_code, r.json()["errors"][0]["message"] if r.status_code != 200 else "")
    # the failure names the second duplicate's place, wherever it is
    assert all(m.startswith("posts[%d]." % (n + 1)) for n, (_, m) in answers.items()), answers
    answers = {n: (st, m.split(".", 1)[1]) for n, (st, m) in answers.items()}
    assert len(set(answers.values())) == 1, answers
    assert list(answers.values())[0][0] in (400, 409), answers
    assert [x for x in api.records(zid) if x["type"] == "A"] == []
    verify_clean(node)


# ------------------------------------------------------------ a queued statement that fails

@pytest.mark.parametrize("table,sqlstate", [("records", "23505"), ("records", "P0001"),
                                           ("records", "55P03"), ("records", "40P01"),
                                           ("changes", "P0001"), ("changes", "55P03")])
def test_queued_insert_failing_in_the_server_fails_its_unit_alone(node, table, sqlstate):
    """A trigger makes the server refuse one queued INSERT (a record, or
    its change-log event, with TTL 4242) with a chosen SQLSTATE: the failure surfaces at a later
    statement, maybe while other units share the transaction. Only that
    unit fails, with an error of its own; the others are committed whole
    and acknowledged; nothing of the failed one is kept."""
    api = node.client()
    zone = "trig.test"
    zid = new_zone(api, zone)
    cp = subprocess.run([os.path.join(pg.bindir(), "psql"), "-X", "-q", "-h", node.cluster_host,
                         "-U", "zc", "-d", node.dbname, "-v", "ON_ERROR_STOP=1", "-c", """
        CREATE FUNCTION zc_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF NEW.ttl = 4242 THEN
            RAISE EXCEPTION 'refused by the test' USING ERRCODE = '%s';
          END IF;
          RETURN NEW;
        END $$;
        CREATE TRIGGER zc_refuse BEFORE INSERT ON %s
          FOR EACH ROW EXECUTE FUNCTION zc_refuse();""" % (sqlstate, table)],
                        capture_output=True, text=True)
    assert cp.returncode == 0, cp.stderr
    v0 = api.get("/zones/%s" % zid)["serial"]
    results, lock = [], threading.Lock()

    def client(k):
        for i in range(12):
            bad = (i + k) % 3 == 0
            posts = a_posts("t%d-%d-" % (k, i), zone, 20)
            if bad:
                posts[-3]["ttl"] = 4242
            r = api.call("POST", "/zones/%s/dns_records/batch" % zid, json={"posts": posts},
                         timeout=60)
            with lock:
                results.append((k, i, bad, r.status_code, r.json().get("zone_version"),
                                r.text[:200]))

    def updater():
        for i in range(12):
            up = dns.update.UpdateMessage(zone + ".")
            bad = i % 3 == 1
            for j in range(4):
                up.add("up%d-%d.%s." % (i, j, zone), 4242 if bad and j == 2 else 60, "A",
                       "192.0.2.%d" % (j + 1))
            r = dns.query.tcp(up, "127.0.0.1", port=node.port, timeout=30)
            with lock:
                results.append(("u", i, bad, "dns:%s" % r.rcode(), None, ""))

    threads = [threading.Thread(target=client, args=(k,)) for k in range(3)]
    threads.append(threading.Thread(target=updater))
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    names = {x["name"] for x in api.records(zid)}
    versions = []
    for k, i, bad, st, v, text in results:
        if k == "u":
            mine = {"up%d-%d.%s" % (i, j, zone) for j in range(4)}
            if bad:
                assert st == "dns:%d" % dns.rcode.SERVFAIL, (k, i, st)
                assert not mine & names
            else:
                assert st == "dns:%d" % dns.rcode.NOERROR, (k, i, st)
                assert mine <= names
            continue
        mine = {"t%d-%d-%d.%s" % (k, i, j, zone) for j in range(20)}
        if bad:
            assert st in (400, 409, 500, 503), (k, i, st, text)
            assert not mine & names, (k, i)
        else:
            assert st == 200, (k, i, st, text)
            assert mine <= names
            versions.append(v)
    assert len(versions) == len(set(versions))
    serial = api.get("/zones/%s" % zid)["serial"]
    # one version per kept unit (API and UPDATE), no gap
    kept_updates = sum(1 for r in results if r[0] == "u" and not r[2])
    assert serial == v0 + len(versions) + kept_updates
    assert pg.version_index_problems(node.cluster_host, node.dbname, zone, events_required=True) == []
    # Units are released without waiting for their writes' answers: each
    # refused write surfaced after its release, and its batch ran again.
    assert node.status()["writer"]["replayed_batches"] >= 1
    wait_for("served", lambda: answer(node.port, "t0-1-0.%s." % zone)[1] != [])
    verify_clean(node)
