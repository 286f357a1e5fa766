"""zonecast serve on a PostgreSQL records store (issue 17, docs/postgresql.md):
a data directory is bound to one store and refuses another; a write through
the API and one through UPDATE are served; while PostgreSQL is down the API
answers 503 with a message and DNS keeps answering; once it is back, writes
are taken again and nothing acknowledged was lost (`zonecast verify`). Each
test runs its own throwaway cluster (dev/pg), as it stops it."""

import json
import os
import subprocess

import dns.message
import dns.query
import dns.rcode
import dns.update
import pytest

import pg
import servers
from servers import wait_for

DEV_PG = pg.DEV_PG


@pytest.fixture
def cluster():
    with pg.own_cluster("zonecast-pgs.") as pgdir:
        yield pgdir


psql = pg.psql
database = pg.database


def zonecast(*args, check=True):
    cp = subprocess.run([servers.zonecast_bin()] + list(args), capture_output=True,
                        text=True, timeout=120)
    if check:
        assert cp.returncode == 0, cp.stderr
    return cp


def serve(tmp_path, uri, extra=()):
    """A zonecast serve with the API and allow-update from 127.0.0.1,
    its data directory bound to uri."""
    srv = servers.ZonecastServer(str(tmp_path / "srv"), api=True,
                                 options=["allow-update=127.0.0.1"])
    srv.zones = {}
    srv.port = servers.free_port()
    srv.api_port = servers.free_port()
    os.unlink(os.path.join(srv.data_dir, "records-store")) if srv.records_uri else None
    srv.options += ["records-store=%s" % uri] + list(extra)
    return srv


def zone_file(tmp_path, zone="pg.test."):
    path = tmp_path / "pg.zone"
    path.write_text("$ORIGIN %s\n$TTL 300\n@ SOA ns hostmaster 1 7200 900 1209600 300\n"
                    "@ NS ns\nns A 192.0.2.53\nwww A 192.0.2.1\n" % zone)
    return str(path)


def answer(port, name, rdtype="A"):
    r = dns.query.udp(dns.message.make_query(name, rdtype), "127.0.0.1", port=port,
                      timeout=2)
    return sorted(rr.to_text() for rrset in r.answer for rr in rrset)


def test_api_and_update_served_from_postgresql(cluster, tmp_path):
    # A password in the URI (trust authentication ignores it) is kept in
    # the 0600 binding file and never shown.
    uri = database(cluster, "served").replace("zc@", "zc:s3cret@")
    srv = serve(tmp_path, uri)
    srv.serve()
    try:
        bound = os.path.join(srv.data_dir, "records-store")
        assert open(bound).read().strip() == uri
        assert os.stat(bound).st_mode & 0o777 == 0o600
        assert not os.path.exists(os.path.join(srv.data_dir, "records.db"))
        wait_for("the control socket", lambda: os.path.exists(
            os.path.join(srv.data_dir, "control.sock")))
        st = zonecast("status", "--data-dir", srv.data_dir)
        assert "records store    PostgreSQL, postgresql://zc:***@/served" in st.stdout, st.stdout
        assert "s3cret" not in st.stdout
        js = json.loads(zonecast("status", "--data-dir", srv.data_dir, "--json").stdout)
        assert js["records_store"]["backend"] == "postgresql"
        zonecast("zone", "import", "--data-dir", srv.data_dir, "pg.test.", zone_file(tmp_path))
        assert answer(srv.port, "www.pg.test.") == ["192.0.2.1"]
        # The records are PostgreSQL's, the change log sealed in commit order.
        assert psql(cluster, "SELECT serial FROM zones WHERE name = 'pg.test.'",
                    "served").strip() == "1"
        api = srv.client(srv.create_token())
        zid = api.zone_id("pg.test")
        api.ok("POST", "/zones/%s/dns_records?wait=live" % zid,
               {"type": "A", "name": "api.pg.test", "content": "192.0.2.7", "ttl": 60})
        assert answer(srv.port, "api.pg.test.") == ["192.0.2.7"]
        up = dns.update.UpdateMessage("pg.test.")
        up.add("upd", 60, "TXT", '"from nsupdate"')
        r = dns.query.tcp(up, "127.0.0.1", port=srv.port, timeout=5)
        assert r.rcode() == dns.rcode.NOERROR
        assert answer(srv.port, "upd.pg.test.", "TXT") == ['"from nsupdate"']
        commits = psql(cluster, "SELECT count(*) FROM log_commits", "served").strip()
        assert int(commits) >= 3
        cp = zonecast("verify", "--data-dir", srv.data_dir)
        assert "no differences" in cp.stdout
    finally:
        srv.stop()
    # Restarted: the same store, the same data.
    srv.serve()
    try:
        assert answer(srv.port, "api.pg.test.") == ["192.0.2.7"]
    finally:
        srv.stop()


def test_a_data_directory_keeps_its_store(cluster, tmp_path):
    uri = database(cluster, "first")
    other = database(cluster, "second")
    srv = serve(tmp_path, uri)
    srv.serve()
    srv.stop()
    cp = zonecast("serve", "--data-dir", srv.data_dir, "--records", other, "--listen",
                  "127.0.0.1:%d" % servers.free_port(), "--api-listen", "none", check=False)
    assert cp.returncode != 0
    assert "belongs to the records store" in cp.stderr and other in cp.stderr
    # A store that cannot be opened is named as the directory's binding
    # says, not as an SQLite file that does not exist (outside tester 21).
    with open(os.path.join(srv.data_dir, "records-store"), "w") as f:
        f.write(uri.replace("first", "gone") + "\n")
    for args in (["zone", "list"], ["token", "create"]):
        cp = zonecast(*args, "--data-dir", srv.data_dir, check=False)
        assert cp.returncode != 0, args
        assert "cannot open the records store postgresql" in cp.stderr, cp.stderr
        assert "records.db" not in cp.stderr, cp.stderr
    # A directory with an SQLite store is not silently switched either.
    sqlite_dir = tmp_path / "sqlite"
    zonecast("zone", "import", "--data-dir", str(sqlite_dir), "pg.test.",
             zone_file(tmp_path))
    if os.path.exists(sqlite_dir / "records-store"):
        pytest.skip("this run binds every data directory to PostgreSQL")
    cp = zonecast("serve", "--data-dir", str(sqlite_dir), "--records", other, "--listen",
                  "127.0.0.1:%d" % servers.free_port(), "--api-listen", "none", check=False)
    assert cp.returncode != 0
    assert "already holds an SQLite records store" in cp.stderr


def test_postgresql_down_then_back(cluster, tmp_path):
    uri = database(cluster, "restart")
    srv = serve(tmp_path, uri)
    srv.serve()
    try:
        zonecast("zone", "import", "--data-dir", srv.data_dir, "pg.test.", zone_file(tmp_path))
        api = srv.client(srv.create_token())
        zid = api.zone_id("pg.test")
        acked = []
        for i in range(5):
            api.ok("POST", "/zones/%s/dns_records?wait=live" % zid,
                   {"type": "A", "name": "a%d.pg.test" % i, "content": "192.0.2.%d" % (i + 1)})
            acked.append(i)
        subprocess.run([DEV_PG, "stop", cluster], check=True, capture_output=True)
        # DNS keeps answering from the edge store; writes get a clear 503.
        assert answer(srv.port, "a4.pg.test.") == ["192.0.2.5"]
        r = api.call("POST", "/zones/%s/dns_records?wait=live" % zid,
                     {"type": "A", "name": "down.pg.test", "content": "192.0.2.99"})
        assert r.status_code == 503, r.text
        assert "PostgreSQL" in r.json()["errors"][0]["message"]
        subprocess.run([DEV_PG, "start", cluster], check=True, capture_output=True)
        # Back: the first writes may still find a dead connection; then
        # writes are taken and served.
        def write_again():
            r = api.call("POST", "/zones/%s/dns_records?wait=live" % zid,
                         {"type": "A", "name": "back.pg.test", "content": "192.0.2.100"})
            return r.status_code == 200
        wait_for("a write after PostgreSQL came back", write_again, timeout=20)
        wait_for("the write served", lambda: answer(srv.port, "back.pg.test.") ==
                 ["192.0.2.100"])
        for i in acked:
            assert answer(srv.port, "a%d.pg.test." % i) == ["192.0.2.%d" % (i + 1)]
        assert answer(srv.port, "down.pg.test.") == []
    finally:
        srv.stop()
    cp = zonecast("verify", "--data-dir", srv.data_dir)
    assert "no differences" in cp.stdout


def test_first_opens_at_once_load_the_schema_once(cluster, tmp_path):
    """Several commands opening an empty database at the same moment: one
    loads the schema, the others wait and find it (a transaction begun
    before that load would not see the new tables in PostgreSQL's caches)."""
    for round_ in range(3):
        uri = database(cluster, "first%d" % round_)
        d = tmp_path / ("d%d" % round_)
        d.mkdir()
        with open(os.open(str(d / "records-store"), os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(uri + "\n")
        procs = [subprocess.Popen([servers.zonecast_bin(), "token", "create", "--data-dir",
                                   str(d)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True) for _ in range(6)]
        outs = [p.communicate(timeout=60) for p in procs]
        for p, (out, err) in zip(procs, outs):
            assert p.returncode == 0, err
            assert out.strip().splitlines()[-1].startswith("zc_"), out
        assert psql(cluster, "SELECT count(*) FROM tokens", "first%d" % round_).strip() == "6"


def test_more_api_writes_at_once_than_store_connections(cluster, tmp_path):
    """Each API request holds one of the API's 16 records store
    connections for its length, a write's wait for the writer included.
    With every insert slowed by a trigger, 30 writes at once outnumber
    them: the requests that find none free wait for one (up to 10 s)
    instead of being answered 503 at once, and every write is made."""
    import threading
    uri = database(cluster, "pool")
    srv = serve(tmp_path, uri)
    srv.serve()
    try:
        zonecast("zone", "import", "--data-dir", srv.data_dir, "pg.test.", zone_file(tmp_path))
        psql(cluster, """
            CREATE FUNCTION zc_slow() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
              IF NEW.ttl = 777 THEN PERFORM pg_sleep(0.05); END IF;
              RETURN NEW;
            END $$;
            CREATE TRIGGER zc_slow BEFORE INSERT ON records
              FOR EACH ROW EXECUTE FUNCTION zc_slow();""", "pool")
        token = srv.create_token()
        zid = srv.client(token).zone_id("pg.test")
        answers = []

        def write(k):
            api = servers.ApiClient(srv.api_url, token)
            r = api.call("POST", "/zones/%s/dns_records" % zid, timeout=60,
                         json={"type": "A", "name": "w%d.pg.test" % k,
                               "content": "192.0.2.9", "ttl": 777})
            answers.append((k, r.status_code, r.text[:200]))

        threads = [threading.Thread(target=write, args=(k,)) for k in range(30)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert sorted(a[1] for a in answers) == [200] * 30, answers
        names = {x["name"] for x in srv.client(token).records(zid)}
        assert {"w%d.pg.test" % k for k in range(30)} <= names
        assert "no differences" in zonecast("verify", "--data-dir", srv.data_dir).stdout
    finally:
        srv.stop()
