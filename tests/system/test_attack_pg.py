"""Attacks on the PostgreSQL records store (issue 17, docs/postgresql.md),
with cases the other PostgreSQL tests do not cover:

- odd data through the API and UPDATE (names with \\000 and other octets,
  255-octet names, large and binary TXT, unknown-type rdata, unicode in
  comments, tags and token names) exported identically from an SQLite and
  a PostgreSQL store;
- the data directory's binding file (DATA_DIR/records-store) holding
  garbage, CRLF, nothing, or being a symlink;
- a password in the URI (user:password@ or ?password=) never printed by
  status, the logs or an error;
- zonecast migrate into a database it cannot log in to or reach, and
  killed half-way: the source untouched, the target empty;
- PostgreSQL killed (immediate stop) under concurrent API writes and
  UPDATEs: nothing acknowledged lost, verify clean after.

Each test skips when PostgreSQL is not installed. One throwaway cluster
(dev/pg) per module; a test that stops it starts it again."""

import os
import signal
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
from servers import wait_for

DEV_PG = pg.DEV_PG
SECRET = "Sup3rSecretPw"


pg_bindir = pg.bindir


@pytest.fixture(scope="module")
def cluster():
    if not os.path.exists(servers.zonecast_bin()):
        pytest.skip("zonecast is not built")
    with pg.own_cluster("zc-apg.") as pgdir:
        yield pgdir


psql = pg.psql


def zonecast(*args, check=True, timeout=120):
    cp = subprocess.run([servers.zonecast_bin()] + list(args), capture_output=True,
                        text=True, timeout=timeout)
    if check:
        assert cp.returncode == 0, cp.stdout + cp.stderr
    return cp


def answer(port, name, rdtype="A"):
    r = dns.query.udp(dns.message.make_query(name, rdtype), "127.0.0.1", port=port,
                      timeout=2)
    return sorted(rr.to_text() for rrset in r.answer for rr in rrset)


# ------------------------------------------------------------ odd data, both ways

ZONE = "odd.test"


def odd_names():
    origin = dns.name.from_text(ZONE)
    labels = [b"\x00", b"a\x00b", b"\x01", b"\xff\xfe", b"\\", b".", b"\"", b" ", b"\x7f",
              b"\xc3\xa9", b"x" * 63]
    names = [dns.name.Name([lab] + list(origin.labels)) for lab in labels]
    # The longest name: 255 octets on the wire.
    room = 255 - len(origin.to_wire())
    long_labels = []
    while room > 1:
        n = min(63, room - 1)
        long_labels.append(b"\x00" * n if len(long_labels) % 2 else b"z" * n)
        room -= n + 1
    longest = dns.name.Name(long_labels + list(origin.labels))
    assert len(longest.to_wire()) == 255
    names.append(longest)
    return names


def txt_strings(i):
    # Every octet, strings of 255, about 4 KB in one record.
    blob = bytes(range(256)) * 4
    parts = [blob[k:k + 255] for k in range(0, len(blob), 255)]
    return parts if i == 0 else [bytes([i % 256]) * 255, b"", b"\x00" * 10]


def txt_content(strings):
    out = []
    for s in strings:
        esc = "".join(chr(c) if 0x20 < c < 0x7f and c not in (0x22, 0x5c) else
                      "\\%03d" % c for c in s)
        out.append('"%s"' % esc)
    return " ".join(out)


def odd_writes(srv, scoped_name):
    """The same writes, through the API and UPDATE, on srv; returns the zone
    export and the records as the API lists them."""
    api = srv.client()
    zid = api.ok("POST", "/zones", json={"name": ZONE})["result"]["id"]
    names = odd_names()
    for i, n in enumerate(names):
        api.ok("POST", "/zones/%s/dns_records" % zid,
               json={"type": "TXT", "name": n.to_text().rstrip("."),
                     "content": txt_content(txt_strings(i)), "ttl": 2147483647 if i == 1 else 300,
                     "comment": "ünïcödé ✓ 名前 🚀 \\ \" '" + "c" * 90,
                     "tags": ["key:v\u00e4l\u00fc\u00e9", "emoji:\U0001F600"]})
    # Unknown-type rdata, binary, the largest that fits a record.
    api.ok("POST", "/zones/%s/dns_records" % zid,
           json={"type": "TYPE65280", "name": "bin." + ZONE,
                 "content": "\\# 4 00ff00ff"})
    # UPDATE: a binary TXT at a name with octets, and an unknown type.
    up = dns.update.UpdateMessage(ZONE + ".")
    up.add(dns.name.Name([b"u\x00\xff"] + list(dns.name.from_text(ZONE).labels)), 60,
           "TXT", txt_content([bytes(range(1, 200))]))
    up.add("gen", 60, "TYPE65281", "\\# 3 000102")
    r = dns.query.tcp(up, "127.0.0.1", port=srv.port, timeout=5)
    assert r.rcode() == dns.rcode.NOERROR
    # A token with a unicode name (and an expiry) is taken too.
    cp = srv.run_cli("token", "create", "--data-dir", srv.data_dir, "--name", scoped_name,
                     "--expires", "2w", check=False)
    # The serial is the time of the write: left out.
    exported = [line for line in srv.run_cli("zone", "export", "--data-dir", srv.data_dir,
                                             ZONE).stdout.splitlines()
                if "\tSOA\t" not in line and " SOA " not in line]
    listed = sorted((r["name"], r["type"], r["content"], r["ttl"], r.get("comment"),
                     tuple(r.get("tags") or ())) for r in api.records(zid)
                    if r["type"] != "SOA")
    tokens = srv.run_cli("token", "list", "--data-dir", srv.data_dir).stdout
    return exported, listed, cp.returncode, scoped_name in tokens


def test_odd_data_exports_the_same_on_sqlite_and_postgresql(cluster, tmp_path):
    results = []
    _, uri = pg.fresh_database(cluster, "odd")
    for path, u in ((tmp_path / "sqlite", None), (tmp_path / "pg", uri)):
        srv = pg.node(path, u)
        srv.serve()
        try:
            results.append(odd_writes(srv, "tökén ✓ 名"))
            v = srv.verify()
            assert v.returncode == 0 and "no differences" in v.stdout, v.stdout + v.stderr
        finally:
            srv.stop()
    (sq_export, sq_list, sq_tok, sq_seen), (pg_export, pg_list, pg_tok, pg_seen) = results
    assert os.path.exists(tmp_path / "pg" / "data" / "records-store")
    assert not os.path.exists(tmp_path / "sqlite" / "data" / "records-store")
    assert sq_tok == pg_tok and sq_seen == pg_seen
    assert pg_list == sq_list
    assert pg_export == sq_export


# ------------------------------------------------------------ the binding file

def bound_dir(tmp_path, content, mode=0o600):
    d = tmp_path / "data"
    d.mkdir()
    p = d / "records-store"
    p.write_bytes(content)
    os.chmod(p, mode)
    return str(d)


def test_binding_file_with_crlf_is_read(cluster, tmp_path):
    _, uri = pg.fresh_database(cluster, "crlf")
    d = bound_dir(tmp_path, (uri + "\r\n").encode())
    cp = zonecast("zone", "list", "--data-dir", d)
    assert not os.path.exists(os.path.join(d, "records.db"))
    assert cp.returncode == 0


@pytest.mark.parametrize("content", [b"", b"\n", b"garbage\n", b"\x00\xff\xfe\n",
                                     b" postgresql://zc@/x\n", b"sqlite\n"])
def test_binding_file_with_garbage_is_refused(cluster, tmp_path, content):
    d = bound_dir(tmp_path, content)
    cp = zonecast("zone", "list", "--data-dir", d, check=False)
    assert cp.returncode != 0
    assert "records-store" in cp.stderr and "postgresql://" in cp.stderr, cp.stderr
    # Nothing was made in its place.
    assert not os.path.exists(os.path.join(d, "records.db"))


def test_binding_file_symlink_is_followed(cluster, tmp_path):
    _, uri = pg.fresh_database(cluster, "link")
    target = tmp_path / "elsewhere"
    target.write_text(uri + "\n")
    d = tmp_path / "data"
    d.mkdir()
    os.symlink(str(target), str(d / "records-store"))
    zonecast("zone", "list", "--data-dir", str(d))
    assert not os.path.exists(d / "records.db")


def test_binding_file_unreadable_is_refused(cluster, tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root reads a mode 000 file")
    d = bound_dir(tmp_path, b"postgresql://zc@/x\n", mode=0)
    cp = zonecast("zone", "list", "--data-dir", d, check=False)
    assert cp.returncode != 0
    assert not os.path.exists(os.path.join(d, "records.db"))


# ------------------------------------------------------------ passwords never shown

def test_password_in_query_string_hidden_by_status(cluster, tmp_path):
    name, uri = pg.fresh_database(cluster, "pwq")
    uri += "&password=" + SECRET
    srv = pg.node(tmp_path, uri)
    srv.serve()
    try:
        wait_for("the control socket",
                 lambda: os.path.exists(os.path.join(srv.data_dir, "control.sock")))
        st = zonecast("status", "--data-dir", srv.data_dir)
        js = zonecast("status", "--data-dir", srv.data_dir, "--json")
        assert "PostgreSQL" in st.stdout
        assert SECRET not in st.stdout + st.stderr
        assert SECRET not in js.stdout + js.stderr
    finally:
        srv.stop()
    assert SECRET not in srv.log()


def test_password_hidden_when_another_store_is_refused(cluster, tmp_path):
    _, first = pg.fresh_database(cluster, "pwa")
    _, second = pg.fresh_database(cluster, "pwb")
    second = second.replace("zc@", "zc:%s@" % SECRET)
    srv = pg.node(tmp_path, first)
    srv.serve()
    srv.stop()
    cp = zonecast("serve", "--data-dir", srv.data_dir, "--records", second, "--listen",
                  "127.0.0.1:%d" % servers.free_port(), "--api-listen", "none", check=False)
    assert cp.returncode != 0
    assert "belongs to the records store" in cp.stderr
    assert SECRET not in cp.stdout + cp.stderr


def test_password_hidden_for_a_uri_that_is_not_postgresql(cluster, tmp_path):
    d = tmp_path / "data"
    cp = zonecast("serve", "--data-dir", str(d), "--records",
                  "postgres-ql://zc:%s@/x" % SECRET, "--listen",
                  "127.0.0.1:%d" % servers.free_port(), "--api-listen", "none", check=False)
    assert cp.returncode != 0
    assert SECRET not in cp.stdout + cp.stderr


# ------------------------------------------------------------ migrate

def sqlite_dir_with_data(tmp_path):
    """A stopped SQLite data directory with a zone, a token with an expiry
    and a TSIG key; returns (dir, sha of records.db)."""
    srv = pg.node(tmp_path / "src")
    srv.serve()
    try:
        api = srv.client()
        zid = api.ok("POST", "/zones", json={"name": "mig.test"})["result"]["id"]
        for i in range(20):
            api.ok("POST", "/zones/%s/dns_records" % zid,
                   json={"type": "A", "name": "h%d.mig.test" % i, "content": "192.0.2.%d" % i})
        srv.run_cli("token", "create", "--data-dir", srv.data_dir, "--name", "exp",
                    "--expires", "30d")
        export = srv.run_cli("zone", "export", "--data-dir", srv.data_dir, "mig.test").stdout
    finally:
        srv.stop()
    return srv.data_dir, export


def dir_state(d):
    """What says which store d is on (SQLite's -wal/-shm and serve.lock come
    and go)."""
    return sorted(n for n in os.listdir(d) if n == "records.db" or
                  n.startswith("records-store") or n.startswith("records.db.migrated") or
                  n == "migrate.tmp")


def test_migrate_to_unreachable_or_wrong_password(cluster, tmp_path):
    d, export = sqlite_dir_with_data(tmp_path)
    before = dir_state(d)
    # Password authentication for a role of its own.
    psql(cluster, "CREATE ROLE mig LOGIN PASSWORD 'right'")
    name, _ = pg.fresh_database(cluster, "mpw")
    psql(cluster, "ALTER DATABASE %s OWNER TO mig" % name)
    hba = psql(cluster, "SHOW hba_file").strip()
    with open(hba) as f:
        orig = f.read()
    with open(hba, "w") as f:
        f.write("local all mig scram-sha-256\n" + orig)
    psql(cluster, "SELECT pg_reload_conf()")
    try:
        for uri in ("postgresql://mig:%s@/%s?host=%s" % (SECRET, name, cluster),
                    "postgresql://zc:%s@/nosuchdb?host=%s" % (SECRET, cluster),
                    "postgresql://zc:%s@/x?host=/tmp/zc-no-such-dir" % SECRET,
                    "postgresql://zc:%s@192.0.2.1:1/x?connect_timeout=2" % SECRET):
            cp = zonecast("migrate", "--data-dir", d, "--to", uri, "--quiet", check=False,
                          timeout=60)
            assert cp.returncode != 0, uri
            assert SECRET not in cp.stdout + cp.stderr, cp.stderr
            assert dir_state(d) == before, uri
        assert psql(cluster, "SELECT count(*) FROM pg_tables WHERE tablename = 'zones'",
                    db=name).strip() == "0"
    finally:
        with open(hba, "w") as f:
            f.write(orig)
        psql(cluster, "SELECT pg_reload_conf()")
    assert zonecast("zone", "export", "--data-dir", d, "mig.test").stdout == export


def test_migrate_killed_mid_copy_leaves_source_and_empty_target(cluster, tmp_path):
    d, export = sqlite_dir_with_data(tmp_path)
    # A zone big enough that the copy takes a while (records go by one
    # COPY: 200,000 of them take seconds).
    zf = tmp_path / "big.zone"
    with open(zf, "w") as f:
        f.write("$ORIGIN big.test.\n$TTL 300\n@ SOA ns hm 1 7200 900 1209600 300\n@ NS ns\n"
                "ns A 192.0.2.53\n")
        for i in range(200000):
            f.write("h%d A 10.%d.%d.%d\n" % (i, i >> 16, (i >> 8) & 255, i & 255))
    zonecast("zone", "import", "--data-dir", d, "big.test.", str(zf))
    before = dir_state(d)
    name, uri = pg.fresh_database(cluster, "mkill")
    p = subprocess.Popen([servers.zonecast_bin(), "migrate", "--data-dir", d, "--to", uri,
                          "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # Kill it in the middle of the records' COPY (the copy is one
    # transaction: pg_stat_activity shows the statement running).
    def copying():
        return psql(cluster, "SELECT count(*) FROM pg_stat_activity WHERE datname = '%s'"
                    " AND query LIKE 'COPY records%%'" % name).strip() != "0"
    wait_for("the records' COPY to start", copying, timeout=60)
    time.sleep(0.2)
    assert p.poll() is None, "migrate ended before it could be killed"
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert dir_state(d) == before
    assert zonecast("zone", "export", "--data-dir", d, "mig.test").stdout == export
    # The target holds no row (the schema may be there); a new migrate
    # goes through.
    wait_for("the killed session to end", lambda: psql(
        cluster, "SELECT count(*) FROM pg_stat_activity WHERE datname = '%s'" % name
    ).strip() == "0")
    assert psql(cluster, "SELECT count(*) FROM zones", db=name, check=False).strip() in ("", "0")
    zonecast("migrate", "--data-dir", d, "--to", uri, "--quiet", timeout=300)
    assert os.path.exists(os.path.join(d, "records-store"))
    assert zonecast("zone", "export", "--data-dir", d, "mig.test").stdout == export


# ------------------------------------------------------------ PostgreSQL killed under writes

def test_postgresql_killed_under_concurrent_writes(cluster, tmp_path):
    _, uri = pg.fresh_database(cluster, "kill")
    srv = pg.node(tmp_path, uri)
    srv.serve()
    acked_api, acked_upd, errors = [], [], []
    stop = threading.Event()
    try:
        api = srv.client()
        zid = api.ok("POST", "/zones", json={"name": "k.test"})["result"]["id"]

        def api_writer(w):
            i = 0
            while not stop.is_set():
                name = "w%d-%d.k.test" % (w, i)
                try:
                    r = api.call("POST", "/zones/%s/dns_records" % zid,
                                 json={"type": "A", "name": name, "content": "192.0.2.1"},
                                 timeout=20)
                except Exception as e:  # a connection reset is no ack
                    errors.append(repr(e))
                    time.sleep(0.05)
                    continue
                if r.status_code == 200:
                    acked_api.append(name)
                else:
                    assert r.status_code in (503, 500, 409), r.text
                    errors.append(r.status_code)
                    time.sleep(0.02)
                i += 1

        def upd_writer():
            i = 0
            while not stop.is_set():
                name = "u%d.k.test." % i
                up = dns.update.UpdateMessage("k.test.")
                up.add(name, 60, "A", "192.0.2.2")
                try:
                    r = dns.query.tcp(up, "127.0.0.1", port=srv.port, timeout=20)
                    if r.rcode() == dns.rcode.NOERROR:
                        acked_upd.append(name)
                    else:
                        assert r.rcode() == dns.rcode.SERVFAIL, dns.rcode.to_text(r.rcode())
                        time.sleep(0.02)
                except dns.exception.Timeout:
                    errors.append("update timeout")
                i += 1

        threads = [threading.Thread(target=api_writer, args=(w,)) for w in range(2)]
        threads.append(threading.Thread(target=upd_writer))
        for t in threads:
            t.start()
        for _ in range(2):
            time.sleep(1.5)
            bindir = pg_bindir()
            pgctl = [os.path.join(bindir, "pg_ctl"), "-D", os.path.join(cluster, "data"),
                     "stop", "-m", "immediate"]
            if os.geteuid() == 0:
                pgctl = ["runuser", "-u", "postgres", "--"] + pgctl
            subprocess.run(pgctl, check=True, capture_output=True)
            time.sleep(1.5)
            assert srv.proc.poll() is None, "serve died with PostgreSQL"
            subprocess.run([DEV_PG, "start", cluster], check=True, capture_output=True)
        time.sleep(2)
        stop.set()
        for t in threads:
            t.join(timeout=60)
        assert srv.proc.poll() is None
        assert acked_api and acked_upd
        assert errors, "no write met PostgreSQL down"
        # A write after: the builder follows again.
        api.ok("POST", "/zones/%s/dns_records?wait=live" % zid,
               json={"type": "A", "name": "last.k.test", "content": "192.0.2.9"})
        for name in acked_api + [n.rstrip(".") for n in acked_upd]:
            wait_for("%s served" % name, lambda: answer(srv.port, name + ".") != [], 20)
        in_store = int(psql(cluster, "SELECT count(*) FROM records r JOIN zones z ON"
                                     " z.id = r.zone_id WHERE z.name = 'k.test.' AND"
                                     " r.type = 1", db=uri.split("/")[3].split("?")[0]))
        assert in_store >= len(acked_api) + len(acked_upd) + 1
        v = srv.verify()
        assert v.returncode == 0 and "no differences" in v.stdout, v.stdout + v.stderr
    finally:
        stop.set()
        srv.stop()


def test_first_requests_after_a_postgresql_restart_are_answered(cluster, tmp_path):
    """PostgreSQL restarted while the node is idle (fast and immediate
    stops): its pooled connections are dead, and the first API read, API
    write and UPDATE after the restart reconnect and succeed instead of
    failing with 503 / SERVFAIL (db_pg.c hung_up())."""
    _, uri = pg.fresh_database(cluster, "idle")
    srv = pg.node(tmp_path, uri)
    srv.serve()
    try:
        api = srv.client()
        zid = api.ok("POST", "/zones", json={"name": "idle.test"})["result"]["id"]
        for rnd, mode in enumerate(("fast", "immediate", "fast")):
            # Every kind of connection in use before the restart.
            api.ok("GET", "/zones/%s/dns_records" % zid)
            up = dns.update.UpdateMessage("idle.test.")
            up.add("before-%d.idle.test." % rnd, 60, "A", "192.0.2.1")
            assert dns.query.tcp(up, "127.0.0.1", port=srv.port, timeout=10).rcode() == \
                dns.rcode.NOERROR
            pgctl = [os.path.join(pg_bindir(), "pg_ctl"), "-D", os.path.join(cluster, "data"),
                     "stop", "-m", mode, "-w"]
            if os.geteuid() == 0:
                pgctl = ["runuser", "-u", "postgres", "--"] + pgctl
            subprocess.run(pgctl, check=True, capture_output=True)
            subprocess.run([DEV_PG, "start", cluster], check=True, capture_output=True)
            # The first of each, once PostgreSQL is back.
            r = api.call("GET", "/zones/%s/dns_records" % zid, timeout=20)
            assert r.status_code == 200, (mode, "read", r.status_code, r.text)
            r = api.call("POST", "/zones/%s/dns_records" % zid, timeout=20,
                         json={"type": "A", "name": "after-%d.idle.test" % rnd,
                               "content": "192.0.2.2"})
            assert r.status_code == 200, (mode, "write", r.status_code, r.text)
            up = dns.update.UpdateMessage("idle.test.")
            up.add("upd-%d.idle.test." % rnd, 60, "A", "192.0.2.3")
            rcode = dns.query.tcp(up, "127.0.0.1", port=srv.port, timeout=20).rcode()
            assert rcode == dns.rcode.NOERROR, (mode, "update", dns.rcode.to_text(rcode))
        assert srv.proc.poll() is None
        # Said at most every 10 s, not by each statement that met it.
        said = srv.log().count("PostgreSQL unavailable")
        assert 1 <= said <= 2, srv.log()[-4000:]
    finally:
        srv.stop()


# ------------------------------------------------------------ nodes, one killed mid-write

def test_three_nodes_one_killed_mid_write(cluster, tmp_path):
    dbname, uri = pg.fresh_database(cluster, "nodes")
    nodes = [pg.node(tmp_path / n, uri) for n in ("a", "b", "c")]
    nodes[0].serve()
    api0 = nodes[0].client()
    zid = api0.ok("POST", "/zones", json={"name": "n.test"})["result"]["id"]
    for n in nodes[1:]:
        n.serve()
    clients = [n.client() for n in nodes]
    acked, lock, stop = [], threading.Lock(), threading.Event()

    def writer(k, w):
        srv, api = nodes[k], clients[k]
        i = 0
        while not stop.is_set():
            name = "n%d-%d-%d.n.test" % (k, w, i)
            i += 1
            try:
                if i % 2:
                    r = api.call("POST", "/zones/%s/dns_records" % zid,
                                 json={"type": "A", "name": name, "content": "192.0.2.3"},
                                 timeout=10)
                    ok = r.status_code == 200
                else:
                    up = dns.update.UpdateMessage("n.test.")
                    up.add(name + ".", 60, "A", "192.0.2.3")
                    ok = dns.query.tcp(up, "127.0.0.1", port=srv.port,
                                       timeout=10).rcode() == dns.rcode.NOERROR
            except Exception:  # the killed node: no ack
                ok = False
                time.sleep(0.05)
            if ok:
                with lock:
                    acked.append(name)

    threads = [threading.Thread(target=writer, args=(k, w)) for k in range(3) for w in range(2)]
    try:
        for t in threads:
            t.start()
        time.sleep(2)
        nodes[1].kill9()
        time.sleep(1.5)
        nodes[1].restart()
        time.sleep(1.5)
        stop.set()
        for t in threads:
            t.join(timeout=60)
        assert len(acked) > 20
        rows = psql(cluster, "SELECT v.version FROM zone_versions v JOIN zones z ON"
                    " z.id = v.zone_id WHERE z.name = 'n.test.' ORDER BY v.version",
                    db=dbname).split()
        versions = [int(v) for v in rows]
        serial = int(psql(cluster, "SELECT serial FROM zones WHERE name = 'n.test.'",
                          db=dbname))
        assert versions == list(range(versions[0], serial + 1))
        for srv in nodes:
            for name in acked:
                wait_for("%s served by %d" % (name, srv.port),
                         lambda: answer(srv.port, name + ".") == ["192.0.2.3"], 10)
            soa = dns.query.udp(dns.message.make_query("n.test.", "SOA"), "127.0.0.1",
                                port=srv.port, timeout=2).answer[0][0].serial
            assert soa == serial
    finally:
        stop.set()
        for srv in nodes:
            if srv.proc is not None:
                srv.stop()
    for srv in nodes:
        v = srv.verify()
        assert v.returncode == 0 and "no differences" in v.stdout, v.stdout + v.stderr


def test_password_hidden_when_the_uri_is_too_long(cluster, tmp_path):
    # A URI longer than the configuration takes is refused without echoing it.
    uri = "postgresql://zc:%s@/x?host=%s&application_name=%s" % (SECRET, cluster, "a" * 5000)
    cp = zonecast("serve", "--data-dir", str(tmp_path / "d"), "--records", uri, "--listen",
                  "127.0.0.1:%d" % servers.free_port(), "--api-listen", "none", check=False)
    assert cp.returncode != 0
    assert "records-store" in cp.stderr
    assert SECRET not in cp.stdout + cp.stderr


# ------------------------------------------------------------ PostgreSQL over TCP

class Forwarder:
    """127.0.0.1:port -> the cluster's unix socket, a thread per direction:
    PostgreSQL over TCP without reconfiguring the cluster."""

    def __init__(self, socket_path):
        import socket
        self.path = socket_path
        self.lsock = socket.socket()
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(64)
        self.port = self.lsock.getsockname()[1]
        self.stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        import socket
        while not self.stop.is_set():
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            u = socket.socket(socket.AF_UNIX)
            u.connect(self.path)
            for a, b in ((c, u), (u, c)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(a, b):
        try:
            while True:
                data = a.recv(65536)
                if not data:
                    break
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                try:
                    s.shutdown(2)
                except OSError:
                    pass

    def close(self):
        self.stop.set()
        self.lsock.close()


def tcp_timers(pid, port):
    """(timer kind, ticks until it fires) of pid's TCP sockets connected to
    127.0.0.1:port, from /proc/net/tcp (kind 2: the keepalive timer; ticks
    in USER_HZ, 100 a second)."""
    inodes = set()
    fd_dir = "/proc/%d/fd" % pid
    for fd in os.listdir(fd_dir):
        try:
            target = os.readlink(os.path.join(fd_dir, fd))
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    timers = []
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            cols = line.split()
            rem_port = int(cols[2].split(":")[1], 16)
            kind, when = cols[5].split(":")
            if rem_port == port and cols[9] in inodes and cols[3] == "01":
                timers.append((int(kind, 16), int(when, 16)))
    return timers


@pytest.mark.parametrize("idle", [None, 60])
def test_connections_over_tcp_probe_a_silent_server(cluster, tmp_path, idle):
    """Over TCP every connection of a node (pool, writer, builder, LISTEN)
    sends keepalive probes after 10 s of silence (db_pg.c
    connect_with_settings()), not after the system's 2 hours: a server
    that vanished without a reset ends the connection in about 25 s
    instead of leaving writes stuck. The URI's own keepalives_idle wins."""
    name, _ = pg.fresh_database(cluster, "ka")
    fwd = Forwarder(os.path.join(cluster, ".s.PGSQL.5432"))
    uri = "postgresql://zc@127.0.0.1:%d/%s" % (fwd.port, name)
    if idle is not None:
        uri += "?keepalives_idle=%d" % idle
    srv = pg.node(tmp_path, uri)
    srv.serve()
    try:
        api = srv.client()
        zid = api.ok("POST", "/zones", json={"name": "ka.test"})["result"]["id"]
        api.ok("POST", "/zones/%s/dns_records" % zid,
               json={"type": "A", "name": "a.ka.test", "content": "192.0.2.1"})
        time.sleep(1.5)  # every connection idle a while
        timers = tcp_timers(srv.proc.pid, fwd.port)
        assert len(timers) >= 3, timers
        limit = (idle or 10) * 100 + 50
        assert all(kind == 2 and when <= limit for kind, when in timers), (limit, timers)
        if idle is not None:
            assert any(when > 1100 for _, when in timers), timers
    finally:
        srv.stop()
        fwd.close()
