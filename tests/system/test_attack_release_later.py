"""An outside tester's attack on ddbe121 (src/writer/writer.c run_batch() /
attempt(), src/records/db_pg.c pg_release_later(), db_pg_pipe.c
released_slot / replay()): on PostgreSQL the group committer releases each
unit's savepoint without waiting for the answers to its queued writes;
those are answered with the next unit's first read or with the COMMIT. A
write of an already released unit that fails then makes the sync return
ZC_EREPLAY: the transaction is rolled back and the batch runs again from
its start with releases that sync (safe mode, it and the next 8 batches).

What must hold, whatever fails where: every unit (an UPDATE message, an API
request) gets its own outcome; nothing acknowledged is lost; nothing of a
failed unit is kept; a zone's versions step by one per kept unit; the
change-log index is consistent (`zonecast verify`: no differences); the cut
at a zone another node holds still works; TSIG-signed UPDATEs of a batch
that runs again are accepted once (no BADTIME); audit lines and metrics do
not count a request twice.

How batches are made on purpose: a trigger on `records` sleeps for a row
with TTL 4343 (the "blocker", an UPDATE of a zone of its own), so the
writer is busy in its batch while the messages under test are sent
pipelined on ONE TCP connection: they queue up, in order, and form the
next batch. Rows are refused with a chosen SQLSTATE by triggers (TTL 4242
on `records` or on `changes`; a one-shot failure of the N-th `zone_versions`
insert of a zone).

Cases that failed against ddbe121 are marked "FAILED against ddbe121" in
their docstring, with the diagnosis (all fixed since: a refusal the
committer decided is final for the message, update_msg_t.refused; the
commit latency is observed only for a COMMIT that ran); the rest passed
from the start. The failures, in short (one root cause: with ddbe121 a unit that
ran to its end can run again, and what it did outside the transaction is
not undone nor remembered):
- test_the_same_signed_message_twice_in_a_batch[True]: a TSIG replay
  refused in the first run is ACCEPTED in the run that counts
  (src/update/policy.c:102-108 clears m->replay_pending "once" and forgets
  the verdict);
- test_refusal_decided_inside_a_unit_is_audited_and_counted_once: key_again()
  (src/update/policy.c:58-66) audits and counts its BADKEY once per run;
- test_writer_metrics_count_a_replayed_batch_once[commit] (minor): the
  skipped COMMIT of the first run is observed as a commit
  (src/writer/writer.c:198, before the ZC_EREPLAY check at :202).

Runs its own PostgreSQL cluster (dev/pg); skips when it is not installed."""

import os
import re
import socket
import struct
import subprocess
import threading
import time
import urllib.request

import dns.message
import dns.name
import dns.query
import dns.rcode
import dns.tsig
import dns.update
import pytest

import pg
import servers
from servers import verify_clean

NOERROR, SERVFAIL, NOTAUTH = dns.rcode.NOERROR, dns.rcode.SERVFAIL, dns.rcode.NOTAUTH
REFUSE_TTL = 4242   # refused by the test trigger (records or changes)
SLEEP_TTL = 4343    # makes the records insert sleep (the blocker)
LONG_SLEEP_TTL = 4345  # sleeps zc_ctl.long_sleep s (default 3)


@pytest.fixture(scope="module")
def cluster():
    if not os.path.exists(servers.zonecast_bin()):
        pytest.skip("zonecast is not built")
    with pg.own_cluster("zc-rl.") as pgdir:
        yield pgdir


_dbs = iter(range(1, 10 ** 6))


def start_node(cluster, tmp_path, name, uri, dbname, options=()):
    srv = pg.serve_node(tmp_path, name, uri, options=list(options))
    srv.dbname = dbname
    srv.cluster_host = cluster
    return srv


@pytest.fixture
def db(cluster):
    name = "rl%d_%d" % (os.getpid(), next(_dbs))
    return name, pg.database(cluster, name)


@pytest.fixture
def node(cluster, db, tmp_path):
    srv = start_node(cluster, tmp_path, "n", db[1], db[0])
    yield srv
    if srv.proc is not None:
        srv.stop()


# ------------------------------------------------------------------ helpers

def sql(srv, text, check=True):
    return pg.psql(srv.cluster_host, text, db=srv.dbname, check=check)


def sql_script(srv, text):
    cp = subprocess.run([os.path.join(pg.bindir(), "psql"), "-X", "-q", "-h", srv.cluster_host,
                         "-U", "zc", "-d", srv.dbname, "-v", "ON_ERROR_STOP=1", "-c", text],
                        capture_output=True, text=True)
    assert cp.returncode == 0, cp.stderr


def install_triggers(srv, records_state=None, changes_state=None, sleep=1.0):
    """TTL 4242 refused on records (records_state) and/or on changes
    (changes_state) with that SQLSTATE; TTL 4343 sleeps `sleep` s in the
    records insert; zone_versions refuses its insert once, for zone
    zc_ctl.zv_zone, when the sequence zc_zv_shots reaches zc_ctl.zv_shot."""
    sql_script(srv, """
        CREATE TABLE IF NOT EXISTS zc_ctl (k text PRIMARY KEY, v text);
        CREATE SEQUENCE IF NOT EXISTS zc_zv_shots;
        CREATE OR REPLACE FUNCTION zc_att() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE st text;
        BEGIN
          IF NEW.ttl = %d THEN
            SELECT v INTO st FROM zc_ctl WHERE k = TG_TABLE_NAME || '_state';
            IF st IS NOT NULL THEN
              RAISE EXCEPTION 'zc test refuses a %% row', TG_TABLE_NAME USING ERRCODE = st;
            END IF;
          ELSIF NEW.ttl = %d AND TG_TABLE_NAME = 'records' THEN
            PERFORM pg_sleep(coalesce((SELECT v FROM zc_ctl WHERE k = 'sleep')::float8, 1.0));
          ELSIF NEW.ttl = %d AND TG_TABLE_NAME = 'records' THEN
            PERFORM pg_sleep(coalesce((SELECT v FROM zc_ctl WHERE k = 'long_sleep')::float8, 3.0));
          END IF;
          RETURN NEW;
        END $$;
        CREATE OR REPLACE FUNCTION zc_zv() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF NEW.zone_id = (SELECT v FROM zc_ctl WHERE k = 'zv_zone')::bigint THEN
            IF nextval('zc_zv_shots') = (SELECT v FROM zc_ctl WHERE k = 'zv_shot')::bigint THEN
              RAISE EXCEPTION 'zc test refuses zone_versions once' USING ERRCODE = 'P0001';
            END IF;
          END IF;
          RETURN NEW;
        END $$;
        DROP TRIGGER IF EXISTS zc_att ON records;
        DROP TRIGGER IF EXISTS zc_att ON changes;
        DROP TRIGGER IF EXISTS zc_zv ON zone_versions;
        CREATE TRIGGER zc_att BEFORE INSERT ON records FOR EACH ROW EXECUTE FUNCTION zc_att();
        CREATE TRIGGER zc_att BEFORE INSERT ON changes FOR EACH ROW EXECUTE FUNCTION zc_att();
        CREATE TRIGGER zc_zv BEFORE INSERT ON zone_versions
          FOR EACH ROW EXECUTE FUNCTION zc_zv();
    """ % (REFUSE_TTL, SLEEP_TTL, LONG_SLEEP_TTL))
    ctl(srv, "records_state", records_state)
    ctl(srv, "changes_state", changes_state)
    ctl(srv, "sleep", sleep)


def ctl(srv, k, v):
    if v is None:
        sql(srv, "DELETE FROM zc_ctl WHERE k = '%s'" % k)
    else:
        sql(srv, "INSERT INTO zc_ctl VALUES ('%s', '%s') ON CONFLICT (k) DO UPDATE"
                 " SET v = excluded.v" % (k, v))


def new_zone(api, name):
    return api.ok("POST", "/zones", json={"name": name})["result"]["id"]


def serial(api, zid):
    return api.get("/zones/%s" % zid)["serial"]


def names_in(api, zid):
    return {r["name"] for r in api.records(zid)}


_ids = iter(range(1000, 60000))


def upd(zone, name, ttl=60, addr="192.0.2.1", key=None, rdtype="A"):
    m = dns.update.UpdateMessage(zone + ".", id=next(_ids))
    if name is not None:
        m.add(name + ".", ttl, rdtype, addr)
    if key is not None:
        m.use_tsig(key)
    return m


sent_wires = {}   # id -> the exact bytes pipeline() sent


class Unsigned:
    """An answer whose TSIG says the server refused the key (BADKEY...)."""

    def __init__(self, wire, error):
        self.wire, self.error, self.had_tsig = wire, error, False

    def rcode(self):
        return self.wire[3] & 0xF


def pipeline(port, msgs, timeout=40):
    """Sends msgs on one TCP connection without waiting, then reads every
    answer; returns {id: response} (TSIG of signed answers checked)."""
    wires = [m.to_wire() for m in msgs]
    sent_wires.update((m.id, w) for m, w in zip(msgs, wires))
    by_id = {m.id: m for m in msgs}
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(b"".join(struct.pack("!H", len(w)) + w for w in wires))
        out = {}
        for _ in msgs:
            n = struct.unpack("!H", servers.recv_exact(s, 2))[0]
            wire = servers.recv_exact(s, n)
            mid = struct.unpack("!H", wire[:2])[0]
            q = by_id[mid]
            if q.had_tsig:
                try:
                    r = dns.message.from_wire(wire, keyring=q.keyring, request_mac=q.mac)
                except dns.tsig.PeerError as e:
                    r = Unsigned(wire, e)
            else:
                r = dns.message.from_wire(wire)
            out[mid] = r
        return out
    finally:
        s.close()


class Blocker:
    """An UPDATE whose records insert sleeps (TTL 4343) in a zone of its
    own, sent first: while its batch runs, what is sent next queues up."""

    def __init__(self, port, zone, name):
        self.result = None
        self.t = threading.Thread(target=self._run, args=(port, zone, name))

    def _run(self, port, zone, name):
        self.result = dns.query.tcp(upd(zone, name, ttl=SLEEP_TTL), "127.0.0.1",
                                    port=port, timeout=40).rcode()

    def __enter__(self):
        self.t.start()
        time.sleep(0.35)
        return self

    def __exit__(self, *exc):
        self.t.join(60)
        assert self.result == NOERROR, self.result


def batch_after_blocker(srv, blk_zone, msgs, blk_name=None):
    blk_name = blk_name or "b%d.%s" % (next(_ids), blk_zone)
    with Blocker(srv.port, blk_zone, blk_name):
        return pipeline(srv.port, msgs)


def writer(srv):
    return srv.status()["writer"]


def changes_versions(srv, zone, since):
    """The distinct versions of the zone's change-log events after `since`."""
    out = sql(srv, "SELECT DISTINCT version FROM changes WHERE zone_id = (SELECT id FROM zones"
                   " WHERE name = '%s.') AND version > %d ORDER BY 1" % (zone, since))
    return [int(x) for x in out.split()]


def answer_a(port, name):
    r = dns.query.tcp(dns.message.make_query(name + ".", "A"), "127.0.0.1", port=port,
                      timeout=5)
    return r.rcode(), sorted(rr.to_text() for rrset in r.answer for rr in rrset)


def check_outcomes(api, zid, zone, v0, expect, got, msgs_names):
    """expect: {id: rcode}; got: {id: response}; msgs_names: {id: name}.
    Each unit has its own outcome; NOERROR ones are stored and served, the
    others left nothing; one version per kept unit."""
    rc = {i: got[i].rcode() for i in expect}
    assert rc == expect, {i: (dns.rcode.to_text(rc[i]), dns.rcode.to_text(expect[i]))
                          for i in expect if rc[i] != expect[i]}
    names = names_in(api, zid)
    for i, n in msgs_names.items():
        if n is None:
            continue
        if expect[i] == NOERROR:
            assert n in names, n
        else:
            assert n not in names, n
    kept = sum(1 for i, n in msgs_names.items() if n is not None and expect[i] == NOERROR)
    assert serial(api, zid) == v0 + kept


# ------------------------------------------------------------ failure placement

@pytest.mark.parametrize("table,state", [("records", "P0001"), ("changes", "23514")])
def test_failure_of_the_last_unit_surfaces_at_commit(node, table, state):
    """The LAST unit of the batch has a write refused (on records, or on its
    change-log event): nothing reads after it, so the failure is answered
    with the COMMIT. The batch runs again; only that unit fails."""
    api = node.client()
    zone, blk = "last.test", "blk.test"
    zid = new_zone(api, zone)
    new_zone(api, blk)
    install_triggers(node, **{table + "_state": state})
    v0 = serial(api, zid)
    r0 = writer(node)["replayed_batches"]
    msgs = [upd(zone, "g%d.%s" % (i, zone)) for i in range(4)]
    msgs.append(upd(zone, "bad.%s" % zone, ttl=REFUSE_TTL))
    got = batch_after_blocker(node, blk, msgs)
    expect = {m.id: NOERROR for m in msgs}
    expect[msgs[-1].id] = SERVFAIL
    names = {m.id: "g%d.%s" % (i, zone) for i, m in enumerate(msgs[:-1])}
    names[msgs[-1].id] = "bad." + zone
    check_outcomes(api, zid, zone, v0, expect, got, names)
    assert writer(node)["replayed_batches"] == r0 + 1
    assert changes_versions(node, zone, v0) == list(range(v0 + 1, v0 + 5))
    assert pg.version_index_problems(node.cluster_host, node.dbname, zone) == []
    for i in range(4):
        assert answer_a(node.port, "g%d.%s" % (i, zone))[1] == ["192.0.2.1"]
    verify_clean(node)


@pytest.mark.parametrize("table,state", [("records", "P0001"), ("changes", "23505"),
                                         ("records", "40001")])
def test_failure_of_an_earlier_unit_surfaces_at_the_next_units_read(node, table, state):
    """A write of the 2nd unit of 6 fails, answered with the 3rd unit's
    first read (the 3rd unit's read is skipped: it cannot tell it). 23505
    maps to ZC_EEXISTS, 40001 to ZC_EBUSY: in safe mode the unit's own
    failure must not be taken for the cut at a zone lock (writer.c) nor
    turn into an error of the units after it."""
    api = node.client()
    zone, blk = "mid.test", "blk.test"
    zid = new_zone(api, zone)
    new_zone(api, blk)
    install_triggers(node, **{table + "_state": state})
    v0 = serial(api, zid)
    w0 = writer(node)
    msgs, names = [], {}
    for i in range(6):
        m = upd(zone, "u%d.%s" % (i, zone), ttl=REFUSE_TTL if i == 1 else 60)
        msgs.append(m)
        names[m.id] = "u%d.%s" % (i, zone)
    got = batch_after_blocker(node, blk, msgs)
    expect = {m.id: NOERROR for m in msgs}
    expect[msgs[1].id] = SERVFAIL
    check_outcomes(api, zid, zone, v0, expect, got, names)
    w1 = writer(node)
    assert w1["replayed_batches"] == w0["replayed_batches"] + 1
    assert changes_versions(node, zone, v0) == list(range(v0 + 1, v0 + 6))
    assert pg.version_index_problems(node.cluster_host, node.dbname, zone) == []
    verify_clean(node)


def test_zone_versions_insert_failing_once_is_run_again_and_kept(node):
    """The zone_versions insert of the 2nd unit (its version's first event,
    one statement with the change) fails ONCE (a transient failure): it is
    answered at the 3rd unit's read, the batch runs again, and in the run
    that counts every unit succeeds: all NOERROR, each kept once, versions
    one per unit, the IXFR index whole."""
    api = node.client()
    zone, blk = "zv.test", "blk.test"
    zid = new_zone(api, zone)
    new_zone(api, blk)
    install_triggers(node)
    ctl(node, "zv_zone", int(sql(node, "SELECT id FROM zones WHERE name = '%s.'" % zone)))
    ctl(node, "zv_shot", 2)
    v0 = serial(api, zid)
    r0 = writer(node)["replayed_batches"]
    msgs = [upd(zone, "z%d.%s" % (i, zone)) for i in range(5)]
    names = {m.id: "z%d.%s" % (i, zone) for i, m in enumerate(msgs)}
    got = batch_after_blocker(node, blk, msgs)
    check_outcomes(api, zid, zone, v0, {m.id: NOERROR for m in msgs}, got, names)
    assert int(sql(node, "SELECT last_value FROM zc_zv_shots")) >= 2
    assert writer(node)["replayed_batches"] == r0 + 1
    assert pg.version_index_problems(node.cluster_host, node.dbname, zone) == []
    assert changes_versions(node, zone, v0) == list(range(v0 + 1, v0 + 6))
    verify_clean(node)


def test_pipeline_filled_by_empty_units_after_a_failed_write(node):
    """A failing unit, then 200 UPDATEs that change nothing (no read: the
    zone's row is the transaction's already, no prerequisite, no RR): each
    queues only its SAVEPOINT and RELEASE, so the queue fills (PIPE_MAX 256)
    inside a later unit's SAVEPOINT / RELEASE, and the failure surfaces
    there. Every empty UPDATE is still NOERROR, the failing one SERVFAIL,
    the good ones around kept."""
    api = node.client()
    zone, blk = "fill.test", "blk.test"
    zid = new_zone(api, zone)
    new_zone(api, blk)
    install_triggers(node, records_state="P0001")
    v0 = serial(api, zid)
    r0 = writer(node)["replayed_batches"]
    first = upd(zone, "first.%s" % zone)
    bad = upd(zone, "bad.%s" % zone, ttl=REFUSE_TTL)
    empties = [upd(zone, None) for _ in range(200)]
    last = upd(zone, "last.%s" % zone)
    msgs = [first, bad] + empties + [last]
    got = batch_after_blocker(node, blk, msgs)
    expect = {m.id: NOERROR for m in msgs}
    expect[bad.id] = SERVFAIL
    names = {first.id: "first." + zone, bad.id: "bad." + zone, last.id: "last." + zone}
    names.update({m.id: None for m in empties})
    check_outcomes(api, zid, zone, v0, expect, got, names)
    assert writer(node)["replayed_batches"] == r0 + 1
    assert pg.version_index_problems(node.cluster_host, node.dbname, zone) == []
    verify_clean(node)


def test_failing_every_time_gives_answers_and_does_not_loop(node):
    """A trigger that refuses every TTL-4242 row, with four clients (UPDATE
    over TCP and UDP, API batches) each sending bad writes among good ones:
    every request answered in time with its own outcome, the versions one
    per kept unit, and the writer runs a batch again at most once per bad
    unit (safe mode after a replay: a write the server keeps refusing costs
    one replay, not one per batch)."""
    api = node.client()
    zone = "always.test"
    zid = new_zone(api, zone)
    install_triggers(node, records_state="P0001")
    v0 = serial(api, zid)
    r0 = writer(node)["replayed_batches"]
    results, lock = [], threading.Lock()

    def dns_client(k, tcp):
        for i in range(16):
            bad = (i + k) % 4 == 0
            name = "d%d-%d.%s" % (k, i, zone)
            m = upd(zone, name, ttl=REFUSE_TTL if bad else 60)
            send = dns.query.tcp if tcp else dns.query.udp
            rc = send(m, "127.0.0.1", port=node.port, timeout=20).rcode()
            with lock:
                results.append(("dns", name, bad, rc, None))

    def api_client(k):
        for i in range(10):
            bad = i % 3 == 1
            posts = [{"type": "A", "name": "a%d-%d-%d.%s" % (k, i, j, zone),
                      "content": "192.0.2.7", "ttl": REFUSE_TTL if bad and j == 2 else 60}
                     for j in range(4)]
            r = api.call("POST", "/zones/%s/dns_records/batch" % zid, json={"posts": posts},
                         timeout=30)
            with lock:
                results.append(("api", posts, bad, r.status_code, r.json().get("zone_version")))

    t0 = time.monotonic()
    threads = [threading.Thread(target=dns_client, args=(0, True)),
               threading.Thread(target=dns_client, args=(1, False)),
               threading.Thread(target=dns_client, args=(2, True)),
               threading.Thread(target=api_client, args=(3,))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
    assert not any(t.is_alive() for t in threads), "clients still waiting"
    assert time.monotonic() - t0 < 80
    names = names_in(api, zid)
    kept, bad_units = 0, 0
    for kind, what, bad, rc, v in results:
        bad_units += bad
        if kind == "dns":
            assert rc == (SERVFAIL if bad else NOERROR), (what, bad, rc)
            assert (what in names) == (not bad), what
            kept += not bad
        else:
            assert (rc == 200) == (not bad), (what[0]["name"], bad, rc)
            mine = {p["name"] for p in what}
            assert (mine <= names) if not bad else not (mine & names)
            kept += not bad
    assert len(results) == 3 * 16 + 10
    assert serial(api, zid) == v0 + kept
    replays = writer(node)["replayed_batches"] - r0
    assert 1 <= replays <= bad_units, replays
    assert pg.version_index_problems(node.cluster_host, node.dbname, zone) == []
    verify_clean(node)


# ------------------------------------------------------------ TSIG, audit, metrics

def audit_lines(srv, outcome, needle):
    return [ln for ln in srv.log().splitlines()
            if "audit: update %s" % outcome in ln and needle in ln]


def test_signed_updates_in_a_batch_that_runs_again_are_accepted_once(node):
    """Signed UPDATEs (a kept key: their replay check is the committer
    unit's) before and after a failing unit: the batch runs again, and each
    signed message is NOERROR with a valid TSIG answer, applied once,
    audited once as accepted, never BADTIME. The same bytes sent again
    afterwards are a replay (NOTAUTH BADTIME), so the replay cache did
    remember them, once."""
    api = node.client()
    zone, blk = "sig.test", "blk.test"
    zid = new_zone(api, zone)
    new_zone(api, blk)
    key = node.tsig_create("k1.sig.test", zone)
    install_triggers(node, records_state="P0001")
    # a first signed message reads the key from the store and keeps it
    warm = upd(zone, "warm.%s" % zone, key=key.key)
    assert dns.query.tcp(warm, "127.0.0.1", port=node.port, timeout=10).rcode() == NOERROR
    v0 = serial(api, zid)
    r0 = writer(node)["replayed_batches"]
    s1 = upd(zone, "s1.%s" % zone, key=key.key)
    s2 = upd(zone, "s2.%s" % zone, key=key.key)
    bad = upd(zone, "bad.%s" % zone, ttl=REFUSE_TTL)
    s3 = upd(zone, "s3.%s" % zone, key=key.key)
    s4 = upd(zone, "s4.%s" % zone, key=key.key)
    msgs = [s1, s2, bad, s3, s4]
    got = batch_after_blocker(node, blk, msgs)
    expect = {m.id: NOERROR for m in msgs}
    expect[bad.id] = SERVFAIL
    names = {s1.id: "s1." + zone, s2.id: "s2." + zone, bad.id: "bad." + zone,
             s3.id: "s3." + zone, s4.id: "s4." + zone}
    check_outcomes(api, zid, zone, v0, expect, got, names)
    for m in (s1, s2, s3, s4):
        assert got[m.id].had_tsig, "answer not signed"
    assert writer(node)["replayed_batches"] == r0 + 1
    accepted = audit_lines(node, "accepted", "key=k1.sig.test.")
    assert len(accepted) == 5, accepted      # warm + s1..s4, once each
    assert not [ln for ln in node.log().splitlines() if "BADTIME" in ln]
    # the replay cache holds them once: the same bytes again are a replay
    resend = pipeline_raw(node.port, sent_wires[s1.id])
    assert resend[3] & 0xF == NOTAUTH, resend[:4]
    verify_clean(node)


def pipeline_raw(port, wire):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        s.sendall(struct.pack("!H", len(wire)) + wire)
        n = struct.unpack("!H", servers.recv_exact(s, 2))[0]
        return servers.recv_exact(s, n)
    finally:
        s.close()


def test_nsupdate_signed_in_a_batch_that_runs_again(node):
    """nsupdate -k (a real client, which checks the answer's TSIG) sends a
    signed UPDATE queued first in a batch whose next unit is refused after
    its release: the batch runs again, and nsupdate gets a good signed
    NOERROR (no BADTIME), its record is stored once."""
    api = node.client()
    zone, blk = "nsu.test", "blk.test"
    zid = new_zone(api, zone)
    new_zone(api, blk)
    key = node.tsig_create("kn.nsu.test", zone)
    install_triggers(node, records_state="P0001", sleep=2.0)
    warm = upd(zone, "warm.%s" % zone, key=key.key)
    assert dns.query.tcp(warm, "127.0.0.1", port=node.port, timeout=10).rcode() == NOERROR
    v0 = serial(api, zid)
    r0 = writer(node)["replayed_batches"]
    out = {}

    def run_nsupdate():
        script = ("server 127.0.0.1 %d\nzone %s.\nupdate add ns1u.%s. 60 A 192.0.2.77\n"
                  "send\nquit\n" % (node.port, zone, zone))
        out["cp"] = subprocess.run(["nsupdate", "-v", "-k", key.path], input=script,
                                   capture_output=True, text=True, timeout=60)

    bad = upd(zone, "bad." + zone, ttl=REFUSE_TTL)
    good = upd(zone, "good." + zone)
    with Blocker(node.port, blk, "b." + blk):
        t = threading.Thread(target=run_nsupdate)
        t.start()
        time.sleep(0.5)
        got = pipeline(node.port, [bad, good])
        t.join(60)
    cp = out["cp"]
    assert cp.returncode == 0, cp.stdout + cp.stderr
    assert (got[bad.id].rcode(), got[good.id].rcode()) == (SERVFAIL, NOERROR)
    assert writer(node)["replayed_batches"] == r0 + 1, "the batch did not run again"
    assert {"ns1u." + zone, "good." + zone} <= names_in(api, zid)
    assert serial(api, zid) == v0 + 2
    assert len(audit_lines(node, "accepted", "key=kn.nsu.test.")) == 2   # warm + nsupdate
    verify_clean(node)


def metric(port, name, **labels):
    """The sum of the samples of `name` whose labels include `labels`."""
    body = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5).read().decode()
    total = 0.0
    for ln in body.splitlines():
        m = re.match(r'^([a-z_]+)(?:\{([^}]*)\})? (\S+)$', ln)
        if not m or m.group(1) != name:
            continue
        if not labels or all('%s="%s"' % kv in (m.group(2) or "") for kv in labels.items()):
            total += float(m.group(3))
    return total


def raw_pipeline(port, wires, timeout=40):
    """Sends raw wires on one TCP connection without waiting; the answers'
    wires, in order (pipelined UPDATEs are answered in order)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(b"".join(struct.pack("!H", len(w)) + w for w in wires))
        out = []
        for _ in wires:
            n = struct.unpack("!H", servers.recv_exact(s, 2))[0]
            out.append(servers.recv_exact(s, n))
        return out
    finally:
        s.close()


@pytest.mark.parametrize("replayed", [False, True])
def test_the_same_signed_message_twice_in_a_batch(node, replayed):
    """FAILED against ddbe121 (fixed) for replayed=True; replayed=False is the
    control and passes. The same signed bytes are sent twice (a replay by
    an attacker, or a client's resend) while the writer is busy, with an
    unsigned UPDATE between them that deletes what the signed one added:
    both copies pass the kept-key precheck (the replay check is left to the
    committer unit, update_key_check()); the first is applied, the delete
    is applied, the second copy must be refused as a replay (NOTAUTH
    BADTIME) and the name stay deleted. With a refused unit after them the
    batch runs again (writer.c run_batch()); update_key_check() cleared
    m->replay_pending in the first run, so in the run that counts the
    second copy is not checked at all: it is APPLIED (the replay undoes the
    later delete), answered rcode NOERROR with a TSIG whose error is
    BADTIME, and the log has both `refused ... BADTIME` and `accepted` for
    it; zonecast_tsig_refusals_total{BADTIME} counts a message that was
    accepted."""
    api = node.client()
    zone, blk = "twice.test", "blk.test"
    zid = new_zone(api, zone)
    new_zone(api, blk)
    key = node.tsig_create("kt.twice.test", zone)
    install_triggers(node, records_state="P0001")
    warm = upd(zone, "warm.%s" % zone, key=key.key)
    assert dns.query.tcp(warm, "127.0.0.1", port=node.port, timeout=10).rcode() == NOERROR
    v0 = serial(api, zid)
    r0 = writer(node)["replayed_batches"]
    signed = upd(zone, "once.%s" % zone, addr="192.0.2.55", key=key.key)
    wire = signed.to_wire()
    undo = dns.update.UpdateMessage(zone + ".", id=next(_ids))
    undo.delete("once.%s." % zone, "A")
    bad = upd(zone, "bad.%s" % zone, ttl=REFUSE_TTL)
    good = upd(zone, "good.%s" % zone)
    wires = [wire, undo.to_wire(), wire] + ([bad.to_wire()] if replayed else []) + \
        [good.to_wire()]
    with Blocker(node.port, blk, "b." + blk):
        answers = raw_pipeline(node.port, wires)
    rcodes = [w[3] & 0xF for w in answers]
    expect = [NOERROR, NOERROR, NOTAUTH] + ([SERVFAIL] if replayed else []) + [NOERROR]
    assert writer(node)["replayed_batches"] == r0 + (1 if replayed else 0)
    accepted = audit_lines(node, "accepted", "key=kt.twice.test.")
    refused = audit_lines(node, "refused", "key=kt.twice.test.")
    stored = "once.%s" % zone in names_in(api, zid)
    assert (rcodes, len(accepted), len(refused), stored) == (expect, 2, 1, False), (
        [dns.rcode.to_text(r) for r in rcodes], accepted, refused, stored)
    # after warm: copy 1, the delete, good (the second copy refused)
    assert serial(api, zid) == v0 + 3
    verify_clean(node)


def test_refusal_decided_inside_a_unit_is_audited_and_counted_once(cluster, db, tmp_path):
    """FAILED against ddbe121 (fixed). A signed UPDATE whose key was deleted after
    the server kept it (key cache, 60 s) passes the precheck and is refused
    by its committer unit (policy.c update_key_check() -> key_again():
    BADKEY, an audit line `update refused ... tsig_error=BADKEY` and
    zonecast_tsig_refusals_total{error="BADKEY"} + 1). When a later unit's
    write fails after its release, the whole batch runs again
    (writer.c run_batch()) and key_again() runs again: the one request is
    audited twice and counted twice. Every side effect a unit has outside
    the transaction happens once per run, and with ddbe121 a unit that
    completed can run again (before, only a unit cut at its first read
    could)."""
    mport = servers.free_port()
    srv = start_node(cluster, tmp_path, "m", db[1], db[0],
                     options=["metrics-listen=127.0.0.1:%d" % mport])
    try:
        api = srv.client()
        zone, blk = "gone.test", "blk.test"
        new_zone(api, zone)
        new_zone(api, blk)
        keys = {k: srv.tsig_create("%s.gone.test" % k, zone) for k in ("kc", "kd")}
        install_triggers(srv, records_state="P0001")
        for k, key in keys.items():   # each key read from the store, and kept
            warm = upd(zone, "warm-%s.%s" % (k, zone), key=key.key)
            assert dns.query.tcp(warm, "127.0.0.1", port=srv.port, timeout=10).rcode() == NOERROR
        for k in keys:
            srv.tsig_delete("%s.gone.test" % k)

        def refusals(k):
            return (len(audit_lines(srv, "refused", "key=%s.gone.test." % k)),
                    metric(mport, "zonecast_tsig_refusals_total", error="BADKEY"))

        # control: the kept key's refusal in a batch that runs once
        _, m0 = refusals("kc")
        r0 = writer(srv)["replayed_batches"]
        signed = upd(zone, "c.%s" % zone, key=keys["kc"].key)
        good = upd(zone, "good0.%s" % zone)
        got = batch_after_blocker(srv, blk, [signed, good])
        assert (got[signed.id].rcode(), got[good.id].rcode()) == (NOTAUTH, NOERROR)
        assert writer(srv)["replayed_batches"] == r0
        n, m1 = refusals("kc")
        assert (n, m1 - m0) == (1, 1)
        # the same in a batch that runs again
        signed = upd(zone, "k.%s" % zone, key=keys["kd"].key)
        bad = upd(zone, "bad.%s" % zone, ttl=REFUSE_TTL)
        good = upd(zone, "good.%s" % zone)
        got = batch_after_blocker(srv, blk, [signed, bad, good])
        assert got[signed.id].rcode() == NOTAUTH
        assert got[bad.id].rcode() == SERVFAIL
        assert got[good.id].rcode() == NOERROR
        assert writer(srv)["replayed_batches"] == r0 + 1, "the batch did not run again"
        n, m2 = refusals("kd")
        assert (n, m2 - m1) == (1, 1), (audit_lines(srv, "refused", "key=kd.gone.test."),
                                        m2 - m1)
    finally:
        srv.stop()


@pytest.mark.parametrize("where", ["next-read", "commit"])
def test_writer_metrics_count_a_replayed_batch_once(cluster, db, tmp_path, where):
    """A batch that runs again is one group commit for the metrics: the
    blocker's batch and this one are 2 batches, 2 observations of
    zonecast_writer_batch_units, units 3 ok (blocker, two good) and 1
    failed, and 2 observations of zonecast_writer_commit_duration_seconds.
    where=commit: FAILED against ddbe121 (fixed; minor, misleading metric): the refused
    write is the last unit's, answered with the COMMIT; writer.c attempt()
    observes ZC_HIST_WRITER_COMMIT_NS before it looks at ZC_EREPLAY, so the
    COMMIT the server skipped (pipeline aborted) is counted as a commit:
    the histogram's _count grows by 3 for 2 group commits (and the skipped
    COMMIT's time, which is really the last unit's writes, is in it)."""
    mport = servers.free_port()
    srv = start_node(cluster, tmp_path, "m", db[1], db[0],
                     options=["metrics-listen=127.0.0.1:%d" % mport])
    try:
        api = srv.client()
        zone, blk = "met.test", "blk.test"
        new_zone(api, zone)
        new_zone(api, blk)
        install_triggers(srv, records_state="P0001")
        names = ("zonecast_writer_batches_total", "zonecast_writer_batch_units_count",
                 "zonecast_writer_commit_duration_seconds_count")

        def snap():
            return ([metric(mport, n) for n in names] +
                    [metric(mport, "zonecast_writer_units_total", result="ok"),
                     metric(mport, "zonecast_writer_units_total", result="failed")])

        before = snap()
        r0 = writer(srv)["replayed_batches"]
        g1, g2 = upd(zone, "g1." + zone), upd(zone, "g2." + zone)
        bad = upd(zone, "bad." + zone, ttl=REFUSE_TTL)
        got = batch_after_blocker(srv, blk, [g1, bad, g2] if where == "next-read"
                                  else [g1, g2, bad])
        assert [got[m.id].rcode() for m in (g1, g2, bad)] == [NOERROR, NOERROR, SERVFAIL]
        assert writer(srv)["replayed_batches"] == r0 + 1
        delta = [a - b for a, b in zip(snap(), before)]
        assert delta == [2, 2, 2, 3, 1], dict(zip(names + ("units ok", "units failed"), delta))
    finally:
        srv.stop()


# ------------------------------------------------------------ two nodes: the cut

def test_cut_at_a_zone_another_node_holds_after_a_replay(cluster, db, tmp_path):
    """Two nodes on one database. Node B holds zone Y's row (its blocker
    batch sleeps 3 s in Y). Node A's batch: a1 (X), a2 (X, refused), a3 (Y),
    a4 (X). First run: a2's failure surfaces at a3's lock read (NOWAIT,
    since a1 is kept) -> replay; safe run: a2 fails alone, a3 cannot lock Y
    without waiting -> the batch is cut before a3, a1 committed; a3 and a4
    run next, a3 waiting for B. Outcomes: a1, a3, a4 NOERROR, a2 SERVFAIL;
    node A counts one replay and at least one cut; both zones gap-free."""
    a = start_node(cluster, tmp_path, "a", db[1], db[0])
    b = start_node(cluster, tmp_path, "b", db[1], db[0])
    try:
        api = a.client()
        x, y, blk = "x.test", "y.test", "blk.test"
        xid, yid = new_zone(api, x), new_zone(api, y)
        new_zone(api, blk)
        install_triggers(a, records_state="P0001", sleep=0.8)
        ctl(a, "long_sleep", 3.0)
        vx, vy = serial(api, xid), serial(api, yid)
        wa0 = writer(a)
        res = {}

        def b_holds_y():
            # node B: its own batch in Y sleeps 3 s holding Y's row
            res["b"] = dns.query.tcp(upd(y, "hold.%s" % y, ttl=LONG_SLEEP_TTL), "127.0.0.1",
                                     port=b.port, timeout=40).rcode()

        tb = threading.Thread(target=b_holds_y)
        tb.start()
        time.sleep(0.5)
        a1 = upd(x, "a1." + x)
        a2 = upd(x, "a2." + x, ttl=REFUSE_TTL)
        a3 = upd(y, "a3." + y)
        a4 = upd(x, "a4." + x)
        got = batch_after_blocker(a, blk, [a1, a2, a3, a4])
        tb.join(60)
        assert res.get("b") == NOERROR
        rc = {k: got[m.id].rcode() for k, m in (("a1", a1), ("a2", a2), ("a3", a3),
                                               ("a4", a4))}
        assert rc == {"a1": NOERROR, "a2": SERVFAIL, "a3": NOERROR, "a4": NOERROR}, rc
        xn, yn = names_in(api, xid), names_in(api, yid)
        assert {"a1." + x, "a4." + x} <= xn and "a2." + x not in xn
        assert {"a3." + y, "hold." + y} <= yn
        assert serial(api, xid) == vx + 2 and serial(api, yid) == vy + 2
        wa1 = writer(a)
        assert wa1["replayed_batches"] == wa0["replayed_batches"] + 1
        assert wa1["cut_batches"] >= wa0["cut_batches"] + 1
        for z in (x, y):
            assert pg.version_index_problems(a.cluster_host, a.dbname, z) == []
        verify_clean(a)
        verify_clean(b)
    finally:
        a.stop()
        b.stop()


def test_two_nodes_opposite_zone_order_with_failures(cluster, db, tmp_path):
    """Two nodes, each with clients writing zones X and Y in opposite order
    (batches cut at the zone the other node holds), one bad write in
    every fourth message: every message gets its own outcome, no deadlock
    hangs a client, versions one per kept unit in both zones, verify clean
    on both nodes."""
    a = start_node(cluster, tmp_path, "a", db[1], db[0])
    b = start_node(cluster, tmp_path, "b", db[1], db[0])
    try:
        api = a.client()
        x, y = "ox.test", "oy.test"
        xid, yid = new_zone(api, x), new_zone(api, y)
        install_triggers(a, records_state="P0001")
        vx, vy = serial(api, xid), serial(api, yid)
        results, lock = [], threading.Lock()

        def client(srv, k, zones):
            for i in range(24):
                z = zones[i % 2]
                bad = i % 4 == 3
                name = "c%d-%d.%s" % (k, i, z)
                rc = dns.query.tcp(upd(z, name, ttl=REFUSE_TTL if bad else 60), "127.0.0.1",
                                   port=srv.port, timeout=30).rcode()
                with lock:
                    results.append((z, name, bad, rc))

        threads = []
        for k in range(3):
            threads.append(threading.Thread(target=client, args=(a, k, (x, y))))
            threads.append(threading.Thread(target=client, args=(b, 10 + k, (y, x))))
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not any(t.is_alive() for t in threads)
        names = names_in(api, xid) | names_in(api, yid)
        kept = {x: 0, y: 0}
        for z, name, bad, rc in results:
            assert rc == (SERVFAIL if bad else NOERROR), (name, bad, rc)
            assert (name in names) == (not bad), name
            kept[z] += not bad
        assert serial(api, xid) == vx + kept[x] and serial(api, yid) == vy + kept[y]
        for z in (x, y):
            assert pg.version_index_problems(a.cluster_host, a.dbname, z) == []
        verify_clean(a)
        verify_clean(b)
    finally:
        a.stop()
        b.stop()


# ------------------------------------------------------------ the connection, PostgreSQL, the node

def writer_backend_sleeping(srv):
    out = sql(srv, "SELECT pid FROM pg_stat_activity WHERE datname = '%s' AND"
                   " wait_event = 'PgSleep'" % srv.dbname)
    return [int(p) for p in out.split()]


@pytest.mark.parametrize("when", ["first-run", "safe-run"])
def test_writer_backend_terminated_around_a_replay(node, when):
    """The writer's backend is terminated (pg_terminate_backend) while it
    sleeps in a unit's insert: in the first run (the sleeping unit is
    released, the error reaches the next unit's read) or in the safe run
    after a replay (the sleeping unit comes after the refused one, whose
    failure made the batch run again). Whatever the writer then does, no
    client is told NOERROR for something not stored, nothing of a failed
    unit is kept, the refused unit is SERVFAIL, versions stay gap-free, the
    node writes again afterwards, and verify is clean."""
    api = node.client()
    zone, blk = "term.test", "blk.test"
    zid = new_zone(api, zone)
    new_zone(api, blk)
    install_triggers(node, records_state="P0001", sleep=2.0)
    v0 = serial(api, zid)
    g1 = upd(zone, "g1." + zone)
    bad = upd(zone, "bad." + zone, ttl=REFUSE_TTL)
    sleeper = upd(zone, "sl." + zone, ttl=SLEEP_TTL)
    g2 = upd(zone, "g2." + zone)
    msgs = [g1, sleeper, bad, g2] if when == "first-run" else [g1, bad, sleeper, g2]
    killed = []

    def killer():
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            pids = writer_backend_sleeping(node)
            # the blocker sleeps first (its batch): skip it, kill the next
            if pids and blocker_done.is_set():
                for p in pids:
                    sql(node, "SELECT pg_terminate_backend(%d)" % p)
                    killed.append(p)
                return
            time.sleep(0.05)

    blocker_done = threading.Event()
    with Blocker(node.port, blk, "b." + blk) as b:
        kt = threading.Thread(target=killer)
        s = socket.create_connection(("127.0.0.1", node.port), timeout=40)
        wires = [m.to_wire() for m in msgs]
        s.sendall(b"".join(struct.pack("!H", len(w)) + w for w in wires))
        b.t.join(30)
        blocker_done.set()
        kt.start()
        got = {}
        for _ in msgs:
            n = struct.unpack("!H", servers.recv_exact(s, 2))[0]
            w = servers.recv_exact(s, n)
            r = dns.message.from_wire(w)
            got[r.id] = r.rcode()
        s.close()
        kt.join(30)
    assert killed, "the writer's backend was never seen sleeping"
    assert got[bad.id] == SERVFAIL
    names = names_in(api, zid)
    for m, n in ((g1, "g1"), (sleeper, "sl"), (g2, "g2"), (bad, "bad")):
        assert got[m.id] in (NOERROR, SERVFAIL)
        assert (n + "." + zone in names) == (got[m.id] == NOERROR), (n, got[m.id])
    kept = sum(1 for m in (g1, sleeper, g2) if got[m.id] == NOERROR)
    assert serial(api, zid) == v0 + kept
    # the node writes again
    after = upd(zone, "after." + zone)
    assert dns.query.tcp(after, "127.0.0.1", port=node.port, timeout=20).rcode() == NOERROR
    assert serial(api, zid) == v0 + kept + 1
    assert pg.version_index_problems(node.cluster_host, node.dbname, zone) == []
    verify_clean(node)


def test_postgres_stopped_while_a_released_write_runs(node, cluster):
    """PostgreSQL is stopped (fast shutdown: every backend FATAL 57P01)
    while a released unit's insert runs (it sleeps; the next unit's read
    waits for it): the error reaches the writer as a released write's
    failure, so the batch runs again, and that run cannot connect. No
    client is told NOERROR, nothing of the batch is kept, and once
    PostgreSQL is back the node writes again with versions gap-free."""
    api = node.client()
    zone, blk = "down.test", "blk.test"
    zid = new_zone(api, zone)
    new_zone(api, blk)
    install_triggers(node, records_state="P0001", sleep=1.0)
    ctl(node, "long_sleep", 4.0)
    v0 = serial(api, zid)
    msgs = [upd(zone, "g1." + zone), upd(zone, "sl." + zone, ttl=LONG_SLEEP_TTL),
            upd(zone, "bad." + zone, ttl=REFUSE_TTL), upd(zone, "g2." + zone)]
    with Blocker(node.port, blk, "b." + blk) as b:
        s = socket.create_connection(("127.0.0.1", node.port), timeout=60)
        s.sendall(b"".join(struct.pack("!H", len(w)) + w for w in (m.to_wire() for m in msgs)))
        b.t.join(30)
        servers.wait_for("the released insert sleeping",
                         lambda: writer_backend_sleeping(node), timeout=15)
        subprocess.run([pg.DEV_PG, "stop", cluster], check=True, capture_output=True)
        try:
            got = {}
            for _ in msgs:
                n = struct.unpack("!H", servers.recv_exact(s, 2))[0]
                w = servers.recv_exact(s, n)
                got[struct.unpack("!H", w[:2])[0]] = w[3] & 0xF
            s.close()
        finally:
            subprocess.run([pg.DEV_PG, "start", cluster], check=True, capture_output=True)
    assert all(rc == SERVFAIL for rc in got.values()), got

    def writes_again():
        m = upd(zone, "after." + zone)
        try:
            return dns.query.tcp(m, "127.0.0.1", port=node.port, timeout=10).rcode() == NOERROR
        except Exception:
            return False
    servers.wait_for("writes after PostgreSQL came back", writes_again, timeout=40, step=0.5)
    names = names_in(api, zid)
    assert not names & {"g1." + zone, "sl." + zone, "bad." + zone, "g2." + zone}, names
    assert "after." + zone in names
    assert serial(api, zid) == v0 + 1
    assert pg.version_index_problems(node.cluster_host, node.dbname, zone) == []
    verify_clean(node)


def test_sigkill_of_the_node_during_the_safe_run(cluster, db, tmp_path):
    """The node is SIGKILLed while the safe run of a replayed batch sleeps
    in a unit's insert: no answer was given for that batch, and after a
    restart nothing of it is in the store (its transaction died with the
    connection), the zone's versions are gap-free, verify clean, and
    writes work again."""
    srv = start_node(cluster, tmp_path, "k", db[1], db[0])
    try:
        api = srv.client()
        zone, blk = "kill.test", "blk.test"
        zid = new_zone(api, zone)
        new_zone(api, blk)
        install_triggers(srv, records_state="P0001", sleep=3.0)
        v0 = serial(api, zid)
        msgs = [upd(zone, "g1." + zone), upd(zone, "bad." + zone, ttl=REFUSE_TTL),
                upd(zone, "sl." + zone, ttl=SLEEP_TTL), upd(zone, "g2." + zone)]
        ctl(srv, "sleep", 1.0)    # the blocker's sleep
        with Blocker(srv.port, blk, "b." + blk) as b:
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=40)
            s.sendall(b"".join(struct.pack("!H", len(w)) + w
                               for w in (m.to_wire() for m in msgs)))
            ctl(srv, "sleep", 3.0)
            b.t.join(30)
            servers.wait_for("the safe run sleeping",
                             lambda: writer_backend_sleeping(srv), timeout=15)
            srv.kill9()
            s.settimeout(5)
            try:
                data = s.recv(2)
            except OSError:
                data = b""
            s.close()
            b.result = NOERROR  # answered before the kill
        assert data == b"", "an answer came for the killed batch"
        srv.restart()
        api = srv.client()
        names = names_in(api, zid)
        assert not names & {"g1." + zone, "bad." + zone, "sl." + zone, "g2." + zone}, names
        assert serial(api, zid) == v0
        after = upd(zone, "after." + zone)
        assert dns.query.tcp(after, "127.0.0.1", port=srv.port, timeout=20).rcode() == NOERROR
        assert serial(api, zid) == v0 + 1
        assert pg.version_index_problems(srv.cluster_host, srv.dbname, zone) == []
        verify_clean(srv)
    finally:
        if srv.proc is not None:
            srv.stop()


# ------------------------------------------------------------ the API: versions, read your write

def test_ids_in_answers_are_those_of_the_run_that_counted(node):
    """API writes (two zone creations, three record POSTs) queued first in
    a batch whose LAST unit (an UPDATE) is refused at the COMMIT: they ran
    in the first run (ids drawn from the sequences, rolled back) and again
    in the safe run. The ids, names and zone_versions they answer must be
    those stored: each returned zone id and record id reads back, each new
    zone is served."""
    api = node.client()
    zone, blk = "ids.test", "blk.test"
    zid = new_zone(api, zone)
    new_zone(api, blk)
    install_triggers(node, records_state="P0001")
    v0 = serial(api, zid)
    r0 = writer(node)["replayed_batches"]
    out, lock = {}, threading.Lock()

    def create(name):
        r = api.call("POST", "/zones", json={"name": name}, timeout=30)
        with lock:
            out[name] = r

    def post(name):
        r = api.call("POST", "/zones/%s/dns_records" % zid,
                     json={"type": "A", "name": name, "content": "203.0.113.9"}, timeout=30)
        with lock:
            out[name] = r

    bad = upd(zone, "bad." + zone, ttl=REFUSE_TTL)
    with Blocker(node.port, blk, "b." + blk):
        threads = [threading.Thread(target=create, args=(z,)) for z in ("new1.test", "new2.test")]
        threads += [threading.Thread(target=post, args=("p%d.%s" % (i, zone),)) for i in range(3)]
        for t in threads:
            t.start()
        time.sleep(0.2)
        got = pipeline(node.port, [bad])
        for t in threads:
            t.join(30)
    assert got[bad.id].rcode() == SERVFAIL
    assert writer(node)["replayed_batches"] == r0 + 1, "the batch did not run again"
    for name, r in out.items():
        assert r.status_code == 200, (name, r.text)
        body = r.json()["result"]
        if name.startswith("new"):
            assert api.get("/zones/%s" % body["id"])["name"] == name
            servers.wait_for(name + " served", lambda: node.answers_soa(name))
        else:
            back = api.get("/zones/%s/dns_records/%s" % (zid, body["id"]))
            assert (back["name"], back["content"]) == (name, "203.0.113.9")
    versions = sorted(out["p%d.%s" % (i, zone)].json()["zone_version"] for i in range(3))
    assert versions == [v0 + 1, v0 + 2, v0 + 3]
    assert serial(api, zid) == v0 + 3
    verify_clean(node)


def test_api_writes_in_replayed_batches_read_their_write(node):
    """API writes (?wait=live) share batches with UPDATEs of which some are
    refused: each 200 answer's zone_version is the one its unit took in the
    run that counted (unique, no gap with the UPDATEs' versions), and a DNS
    query sent right after the answer sees the record and a serial at least
    that version."""
    api = node.client()
    zone = "ryw.test"
    zid = new_zone(api, zone)
    install_triggers(node, records_state="P0001")
    v0 = serial(api, zid)
    r0 = writer(node)["replayed_batches"]
    results, problems, lock = [], [], threading.Lock()

    def api_client(k):
        for i in range(15):
            name = "api%d-%d.%s" % (k, i, zone)
            r = api.call("POST", "/zones/%s/dns_records?wait=live" % zid,
                         json={"type": "A", "name": name, "content": "198.51.100.%d" % (k + 1)},
                         timeout=30)
            if r.status_code == 200:
                rc, ans = answer_a(node.port, name)
                soa = dns.query.tcp(dns.message.make_query(zone + ".", "SOA"), "127.0.0.1",
                                    port=node.port, timeout=5)
                served = soa.answer[0][0].serial if soa.answer else None
                v = r.json().get("zone_version")
                if ans != ["198.51.100.%d" % (k + 1)] or served is None or served < v:
                    with lock:
                        problems.append((name, rc, ans, served, v))
            with lock:
                results.append(("api", name, False, r.status_code, r.json().get("zone_version")))

    def dns_client(k):
        for i in range(24):
            bad = i % 3 == 1
            name = "u%d-%d.%s" % (k, i, zone)
            rc = dns.query.tcp(upd(zone, name, ttl=REFUSE_TTL if bad else 60), "127.0.0.1",
                               port=node.port, timeout=20).rcode()
            with lock:
                results.append(("dns", name, bad, rc, None))

    threads = [threading.Thread(target=api_client, args=(k,)) for k in range(2)]
    threads += [threading.Thread(target=dns_client, args=(k,)) for k in range(2, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not problems, problems
    api_versions = [v for kind, _, _, st, v in results if kind == "api"]
    assert all(st == 200 for kind, _, _, st, _ in results if kind == "api")
    assert len(set(api_versions)) == len(api_versions)
    kept_dns = sum(1 for kind, _, bad, rc, _ in results if kind == "dns" and not bad)
    for kind, name, bad, rc, _ in results:
        if kind == "dns":
            assert rc == (SERVFAIL if bad else NOERROR), (name, rc)
    total = len(api_versions) + kept_dns
    assert serial(api, zid) == v0 + total
    assert changes_versions(node, zone, v0) == list(range(v0 + 1, v0 + total + 1))
    assert writer(node)["replayed_batches"] >= r0 + 1, "no batch ran again: the test proved nothing"
    verify_clean(node)


# ------------------------------------------------------------ SQLite is not affected

def test_sqlite_store_has_no_replays(tmp_path):
    """The same failure on a SQLite store (a trigger refusing TTL 4242):
    each unit its own outcome, and the writer never reports a batch run
    again (rdb_release_later() is rdb_release() there)."""
    import sqlite3
    if not os.path.exists(servers.zonecast_bin()):
        pytest.skip("zonecast is not built")
    srv = pg.serve_node(tmp_path, "s", None)
    try:
        api = srv.client()
        zone = "lite.test"
        zid = new_zone(api, zone)
        dbf = sqlite3.connect(os.path.join(srv.data_dir, "records.db"), timeout=10)
        dbf.execute("CREATE TRIGGER zc_refuse BEFORE INSERT ON records WHEN NEW.ttl = %d"
                    " BEGIN SELECT RAISE(ABORT, 'refused by the test'); END" % REFUSE_TTL)
        dbf.commit()
        dbf.close()
        v0 = serial(api, zid)
        results, lock = [], threading.Lock()

        def client(k):
            for i in range(15):
                bad = (i + k) % 3 == 0
                name = "l%d-%d.%s" % (k, i, zone)
                rc = dns.query.tcp(upd(zone, name, ttl=REFUSE_TTL if bad else 60), "127.0.0.1",
                                   port=srv.port, timeout=20).rcode()
                with lock:
                    results.append((name, bad, rc))

        threads = [threading.Thread(target=client, args=(k,)) for k in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        names = names_in(api, zid)
        for name, bad, rc in results:
            assert rc == (SERVFAIL if bad else NOERROR), (name, rc)
            assert (name in names) == (not bad)
        assert serial(api, zid) == v0 + sum(1 for r in results if not r[1])
        w = writer(srv)
        assert w["replayed_batches"] == 0, w
        verify_clean(srv)
    finally:
        srv.stop()


# ------------------------------------------------------------ the API: the error of the run that counted

def _api_in_order(api, calls):
    """Sends the API calls [(method, path, json)] in that order, each on
    its own thread, 0.2 s apart (so that their units queue in that order);
    returns the threads and {index: response}."""
    out, threads = {}, []

    def run(i, method, path, body):
        out[i] = api.call(method, path, json=body, timeout=40)

    for i, (method, path, body) in enumerate(calls):
        t = threading.Thread(target=run, args=(i, method, path, body))
        t.start()
        threads.append(t)
        time.sleep(0.2)
    return threads, out



CNAME_BESIDE = "name: a CNAME cannot share its name with other records (RFC 1034 section 3.6.2)"


def test_api_batch_in_a_replayed_batch_answers_the_error_of_the_run_that_counted(node):
    """An API batch request (unit B) whose first op fails in the batch's
    first run and passes in the run that counts, and whose second op fails
    then: its answer is the second op's error (400, a CNAME beside other
    data), not the first run's (404, no such record). FAILED against
    8a1b924 (fixed by 6b7a3c6: write_unit() clears u->err and u->status at
    the start of each run; fail() keeps the first message of a run, and
    kept the first run's).

    The batch, after the blocker: A, an API POST of a record (kept); B, the
    API batch {"patches": [the id A's record gets in the second run],
    "posts": [a CNAME at the name of an A record]}; C, an UPDATE refused by
    the trigger (TTL 4242), answered with the COMMIT: the batch runs again.
    The state B meets cannot differ between the runs through a refused unit
    before it (that unit's failure reaches B's first read, before any op of
    B decides anything: B returns ZC_EREPLAY, no error recorded); what
    differs is the ids: A's record gets another id in the second run (the
    first run's are never handed out again). That id is known ahead: a
    first round of the same shape measures how far past the id of a POST
    made just before the batch A's record lands."""
    api = node.client()
    zone, blk = "rerun.test", "blk.test"
    zid = new_zone(api, zone)
    new_zone(api, blk)
    install_triggers(node, records_state="P0001", sleep=1.5)
    recs = "/zones/%s/dns_records" % zid

    def post_a(name, content="192.0.2.1"):
        r = api.ok("POST", recs, json={"type": "A", "name": name, "content": content})
        return int(r["result"]["id"], 16)

    taken = post_a("taken." + zone, "192.0.2.10")

    def round_(tag, patch_id):
        """Blocker; then A, B, C in one batch. Returns (A, B, C's rcode,
        the writer's counters before and after)."""
        w0 = writer(node)
        body = {"patches": [{"id": "%032x" % patch_id, "content": "192.0.2.99"}],
                "posts": [{"type": "CNAME", "name": "taken." + zone,
                           "content": "target.example"}]}
        bad = upd(zone, "bad-%s.%s" % (tag, zone), ttl=REFUSE_TTL)
        with Blocker(node.port, blk, "b-%s.%s" % (tag, blk)):
            threads, out = _api_in_order(api, [
                ("POST", recs, {"type": "A", "name": "a-%s.%s" % (tag, zone),
                                "content": "192.0.2.1"}),
                ("POST", recs + "/batch", body)])
            got = pipeline(node.port, [bad])
            for t in threads:
                t.join(40)
        return out[0], out[1], got[bad.id].rcode(), w0, writer(node)

    def one_batch_run_again(w0, w1):
        # the blocker's batch and ours, ours of 3 units (A, B, C), run again once
        assert (w1["batches"] - w0["batches"], w1["last_batch"],
                w1["replayed_batches"] - w0["replayed_batches"]) == (2, 3, 1), (w0, w1)

    # First round: B patches a record that exists in both runs (control:
    # the same answer either way), and A's id is measured.
    p0 = post_a("p0." + zone)
    a, b, rc, w0, w1 = round_("cal", taken)
    assert a.status_code == 200, a.text
    assert rc == SERVFAIL
    one_batch_run_again(w0, w1)
    assert b.status_code == 400, b.text
    # the batch's post names its place (84ff69d)
    assert b.json()["errors"][0]["message"] == "posts[0]." + CNAME_BESIDE, b.text
    delta = int(a.json()["result"]["id"], 16) - p0
    # Past the batches that run in safe mode after a replay (writer.c
    # SAFE_BATCHES, 8): releases without waiting again.
    for i in range(9):
        post_a("burn%d.%s" % (i, zone))
    v0 = serial(api, zid)
    p1 = post_a("p1." + zone)
    want = p1 + delta
    # Second round: B patches the id A's record gets in the second run. In
    # the first run no record has it: op 1 fails, 404; in the second op 1
    # passes and op 2 fails, 400.
    a, b, rc, w0, w1 = round_("real", want)
    assert a.status_code == 200, a.text
    assert rc == SERVFAIL
    one_batch_run_again(w0, w1)
    assert int(a.json()["result"]["id"], 16) == want, (a.text, want, delta)
    assert (b.status_code, b.json()["errors"][0]["message"]) == (400, "posts[0]." + CNAME_BESIDE), \
        b.text
    # B left nothing: A's record as A wrote it, no CNAME; one version (A's)
    back = api.get("%s/%032x" % (recs, want))
    assert (back["name"], back["content"]) == ("a-real." + zone, "192.0.2.1")
    assert [r["type"] for r in api.records(zid) if r["name"] == "taken." + zone] == ["A"]
    assert serial(api, zid) == v0 + 2      # p1 and A
    verify_clean(node)


# ------------------------------------- answers from a transaction that was lost

def refuse_zone_row(srv, zone, shot=None):
    """The zone row's UPDATE (a batch's serial, written at the commit or
    when a later unit reads another zone's row) refused for `zone`: every
    time (shot None), or once, at its shot-th UPDATE from now."""
    sql_script(srv, """
        CREATE TABLE IF NOT EXISTS zc_ctl (k text PRIMARY KEY, v text);
        CREATE SEQUENCE IF NOT EXISTS zc_zu_shots;
        CREATE OR REPLACE FUNCTION zc_zu() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF NEW.id = (SELECT v FROM zc_ctl WHERE k = 'zu_zone')::bigint AND
             ((SELECT v FROM zc_ctl WHERE k = 'zu_shot') IS NULL OR
              nextval('zc_zu_shots') = (SELECT v FROM zc_ctl WHERE k = 'zu_shot')::bigint) THEN
            RAISE EXCEPTION 'zc test refuses the zone row' USING ERRCODE = 'P0001';
          END IF;
          RETURN NEW;
        END $$;
        DROP TRIGGER IF EXISTS zc_zu ON zones;
        CREATE TRIGGER zc_zu BEFORE UPDATE ON zones FOR EACH ROW EXECUTE FUNCTION zc_zu();
    """)
    at = int(sql(srv, "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM zc_zu_shots"))
    ctl(srv, "zu_shot", None if shot is None else at + shot)
    ctl(srv, "zu_zone", int(sql(srv, "SELECT id FROM zones WHERE name = '%s.'" % zone)))


def test_prerequisite_judged_on_a_lost_write_is_not_answered(node):
    """Found by an outside tester (D1): a batch whose commit fails, in its
    first run and in the run again unit by unit (the zone row's UPDATE
    refused every time). U1 adds y; U2 requires y to be absent. U1 is
    answered SERVFAIL and y was never stored, but U2 was answered YXDOMAIN
    ("y is in use"): an answer drawn from a write that never existed
    (writer.c fail_done() rewrote the units that had succeeded only). Now
    every unit of a lost transaction is told its failure (writer_unit_t
    .lost): U2 SERVFAIL too. The same for an API write: a POST of a record
    identical to one an earlier unit of the batch wrote answers the
    commit's failure, not 400 "an identical record already exists"."""
    api = node.client()
    zone, blk = "lost.test", "blk.test"
    zid = new_zone(api, zone)
    new_zone(api, blk)
    install_triggers(node)
    v0 = serial(api, zid)
    refuse_zone_row(node, zone)
    u1 = upd(zone, "y." + zone)
    u2 = upd(zone, "x." + zone, addr="192.0.2.2")
    u2.absent("y.%s." % zone)
    recs = "/zones/%s/dns_records" % zid
    same = {"type": "A", "name": "api." + zone, "content": "192.0.2.3"}
    with Blocker(node.port, blk, "b1." + blk):
        threads, out = _api_in_order(api, [("POST", recs, same), ("POST", recs, same)])
        got = pipeline(node.port, [u1, u2])
        for t in threads:
            t.join(40)
    ctl(node, "zu_zone", None)
    rc = (got[u1.id].rcode(), got[u2.id].rcode())
    assert rc == (SERVFAIL, SERVFAIL), [dns.rcode.to_text(r) for r in rc]
    # The commit's failure for both (500 for a refusal by the database,
    # as for any write whose commit it refuses), not the unit's own 400.
    statuses = [out[i].status_code for i in (0, 1)]
    assert statuses[0] >= 500 and statuses[1] == statuses[0], [out[i].text for i in (0, 1)]
    assert out[1].json()["errors"] == out[0].json()["errors"], out[1].text
    assert names_in(api, zid) == {zone}
    assert serial(api, zid) == v0
    # The same batch with the zone row taken: U1 kept, U2's prerequisite
    # fails on the stored y (YXDOMAIN), the second POST is the duplicate.
    u1, u2 = upd(zone, "y." + zone), upd(zone, "x." + zone, addr="192.0.2.2")
    u2.absent("y.%s." % zone)
    with Blocker(node.port, blk, "b2." + blk):
        threads, out = _api_in_order(api, [("POST", recs, same), ("POST", recs, same)])
        got = pipeline(node.port, [u1, u2])
        for t in threads:
            t.join(40)
    assert (got[u1.id].rcode(), got[u2.id].rcode()) == (NOERROR, dns.rcode.YXDOMAIN)
    assert [out[i].status_code for i in (0, 1)] == [200, 400], [out[i].text for i in (0, 1)]
    assert names_in(api, zid) == {zone, "y." + zone, "api." + zone}
    assert serial(api, zid) == v0 + 2
    verify_clean(node)


@pytest.mark.parametrize("units", ["late", "safe"])
def test_zone_row_write_failing_once_is_not_the_next_zones_unit(node, units):
    """Found by an outside tester (D2): a batch of U1 (an UPDATE of zone
    one) and U2 (of zone two). The batch keeps zone one's new serial in
    memory and writes it when U2 reads zone two's row, inside U2's
    savepoint: a transient failure of that write (once here) failed U2,
    another zone's unit with nothing wrong, and kept U1. Now it goes ahead
    of U2's savepoint as the released units' work, and its failure runs
    the batch again: both kept. safe: the batch runs in the safe mode
    after a replay (each unit writes its own zone row): the failure is
    U1's own, U2 kept."""
    api = node.client()
    z1, z2, blk = "row1.test", "row2.test", "blk.test"
    zid1, zid2 = new_zone(api, z1), new_zone(api, z2)
    new_zone(api, blk)
    install_triggers(node, records_state="P0001")
    v1, v2 = serial(api, zid1), serial(api, zid2)
    if units == "safe":
        # A replay first: the next batches run in safe mode.
        bad = upd(blk, "bad." + blk, ttl=REFUSE_TTL)
        assert batch_after_blocker(node, blk, [bad, upd(blk, "ok." + blk)])[bad.id].rcode() \
            == SERVFAIL
    r0 = writer(node)["replayed_batches"]
    refuse_zone_row(node, z1, shot=1)
    u1, u2 = upd(z1, "a." + z1), upd(z2, "b." + z2)
    got = batch_after_blocker(node, blk, [u1, u2])
    ctl(node, "zu_zone", None)
    rc = (got[u1.id].rcode(), got[u2.id].rcode())
    if units == "late":
        assert rc == (NOERROR, NOERROR), [dns.rcode.to_text(r) for r in rc]
        assert writer(node)["replayed_batches"] == r0 + 1
        assert (serial(api, zid1), serial(api, zid2)) == (v1 + 1, v2 + 1)
        assert "a." + z1 in names_in(api, zid1)
    else:
        assert rc == (SERVFAIL, NOERROR), [dns.rcode.to_text(r) for r in rc]
        assert (serial(api, zid1), serial(api, zid2)) == (v1, v2 + 1)
        assert "a." + z1 not in names_in(api, zid1)
    assert "b." + z2 in names_in(api, zid2)
    for z in (z1, z2):
        assert pg.version_index_problems(node.cluster_host, node.dbname, z) == []
    verify_clean(node)
