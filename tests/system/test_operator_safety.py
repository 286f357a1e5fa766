"""Operator safety rails (issue 14): `zone delete` asks on a terminal or
needs --force; DNSSEC rollover steps wait for the TTLs unless forced (and
say so); `dnssec disable` publishes CDS/CDNSKEY DELETE (RFC 8078 §4) before
it removes any key; `dnssec keys` shows states and next steps, and says
when a zone is unsigned; long work shows progress on a terminal only.

Time passing is simulated by moving the stored times back in records.db
(the keys' publish, activation and retirement times, the DELETE record's
creation time): the CLI reads nothing else to decide."""

import os
import pty
import re
import sqlite3
import subprocess
import time

import dns.message
import dns.query
import dns.rdatatype
import pytest

from servers import ZONES_DIR, ZonecastServer, zonecast_bin

ZONE = "example.com."
ZONE_FILE = os.path.join(ZONES_DIR, "example.com.zone")
TIME_RE = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"


def cli(*args, stdin=None):
    return subprocess.run([zonecast_bin()] + list(args), capture_output=True, text=True,
                          timeout=60, stdin=stdin if stdin is not None else subprocess.DEVNULL)


def on_pty(args, typed=b""):
    """Runs zonecast with a terminal on stdin and stderr (stdout too);
    types `typed` once it asks. Returns (exit status, everything shown)."""
    master, slave = pty.openpty()
    p = subprocess.Popen([zonecast_bin()] + list(args), stdin=slave, stdout=slave,
                         stderr=slave)
    os.close(slave)
    out = b""
    sent = not typed
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            data = os.read(master, 4096)
        except OSError:
            break
        if not data:
            break
        out += data
        if not sent and b"confirm:" in out:
            os.write(master, typed)
            sent = True
    os.close(master)
    return p.wait(timeout=30), out.decode(errors="replace")


@pytest.fixture
def data_dir(tmp_path):
    d = str(tmp_path / "data")
    cp = cli("zone", "import", "--data-dir", d, "--quiet", ZONE, ZONE_FILE)
    assert cp.returncode == 0, cp.stderr
    return d


def zone_names(d):
    return [line.split()[0] for line in cli("zone", "list", "--data-dir", d).stdout.splitlines()]


# ------------------------------------------------------------------ zone delete

def test_delete_without_a_terminal_needs_force(data_dir):
    cp = cli("zone", "delete", "--data-dir", data_dir, ZONE)
    assert cp.returncode == 1
    assert "add --force" in cp.stderr and "not on a terminal" in cp.stderr, cp.stderr
    assert zone_names(data_dir) == [ZONE]
    cp = cli("zone", "delete", "--data-dir", data_dir, "--force", ZONE)
    assert cp.returncode == 0, cp.stderr
    assert zone_names(data_dir) == []
    assert cli("verify", "--data-dir", data_dir).returncode == 0


def test_delete_on_a_terminal_asks_for_the_name(data_dir):
    rc, out = on_pty(["zone", "delete", "--data-dir", data_dir, ZONE], b"example.org\n")
    assert rc == 1 and "Type the zone's name to confirm" in out, out
    assert "not confirmed" in out, out
    assert zone_names(data_dir) == [ZONE]
    rc, out = on_pty(["zone", "delete", "--data-dir", data_dir, ZONE], b"Example.COM\n")
    assert rc == 0, out
    assert "zone example.com. deleted" in out, out
    assert zone_names(data_dir) == []


def test_delete_of_an_unknown_zone_asks_nothing(data_dir):
    cp = cli("zone", "delete", "--data-dir", data_dir, "nosuch.test")
    assert cp.returncode == 1 and "no zone nosuch.test" in cp.stderr, cp.stderr


# ------------------------------------------------------------------ dnssec keys

def test_keys_and_ds_of_an_unsigned_zone(data_dir):
    cp = cli("dnssec", "keys", "--data-dir", data_dir, ZONE)
    assert cp.returncode == 0, cp.stderr
    assert cp.stdout.strip() == ("example.com. is not signed (`zonecast dnssec enable "
                                 "example.com.` signs it)")
    cp = cli("dnssec", "ds", "--data-dir", data_dir, ZONE)
    assert cp.returncode == 1 and "is not signed" in cp.stderr, cp.stderr


def keys(data_dir):
    """{tag: (role, state, next)} from `dnssec keys`."""
    out = cli("dnssec", "keys", "--data-dir", data_dir, ZONE).stdout
    found = {}
    for m in re.finditer(r"^tag=(\d+)\tflags=\d+ \((\w+)\)\t[^\t]*\t(\w+)\tsince (%s)\t"
                         r"next: (.*)$" % TIME_RE, out, re.M):
        found[int(m.group(1))] = (m.group(2), m.group(3), m.group(5))
    return found


def shift_keys(data_dir, seconds, tag_filter=None):
    """Moves every key's stored times `seconds` into the past."""
    db = sqlite3.connect(os.path.join(data_dir, "records.db"))
    with db:
        for col in ("created_on", "active_on", "retired_on"):
            db.execute("UPDATE dnssec_keys SET %s = %s - ? WHERE %s IS NOT NULL"
                       % (col, col, col), (seconds * 1000,))
    db.close()


def shift_records(data_dir, rtype, seconds):
    db = sqlite3.connect(os.path.join(data_dir, "records.db"))
    with db:
        db.execute("UPDATE records SET created_on = created_on - ? WHERE type = ?",
                   (seconds * 1000, rtype))
    db.close()


def dnssec(data_dir, *args):
    return cli("dnssec", args[0], "--data-dir", data_dir, ZONE, *args[1:])


def test_zsk_rollover_waits_for_the_ttls(data_dir):
    assert dnssec(data_dir, "enable", "--split").returncode == 0
    k = keys(data_dir)
    assert sorted(v[:2] for v in k.values()) == [("KSK", "active"), ("ZSK", "active")], k
    cp = dnssec(data_dir, "rollover", "zsk", "prepublish")
    assert cp.returncode == 0, cp.stderr
    new = [t for t, v in keys(data_dir).items() if v[1] == "published"]
    assert len(new) == 1
    assert re.fullmatch(r"zsk activate: from " + TIME_RE, keys(data_dir)[new[0]][2])
    # Too early: refused, with the time it may run and why.
    cp = dnssec(data_dir, "rollover", "zsk", "activate")
    assert cp.returncode == 1
    assert "too early for zsk activate" in cp.stderr and "DNSKEY TTL" in cp.stderr, cp.stderr
    assert re.search(r"It may run from %s \(in 3[89]\d\d s" % TIME_RE, cp.stderr), cp.stderr
    assert keys(data_dir)[new[0]][1] == "published"
    # The DNSKEY TTL (3600 s) and the propagation margin (300 s) later: runs.
    shift_keys(data_dir, 3901)
    assert keys(data_dir)[new[0]][2] == "zsk activate: now"
    cp = dnssec(data_dir, "rollover", "zsk", "activate")
    assert cp.returncode == 0, cp.stderr
    k = keys(data_dir)
    assert k[new[0]][1] == "active"
    old = [t for t, v in k.items() if v[:2] == ("ZSK", "retired")]
    assert len(old) == 1, k
    # Retiring waits for the zone's signatures to leave caches (its
    # largest TTL, capped by the signatures' lifetime, 17.5 days).
    cp = dnssec(data_dir, "rollover", "zsk", "retire")
    assert cp.returncode == 1 and "too early for zsk retire" in cp.stderr, cp.stderr
    # Forced: runs, loudly.
    cp = dnssec(data_dir, "rollover", "zsk", "retire", "--force")
    assert cp.returncode == 0, cp.stderr
    assert "WARNING: zsk retire of example.com. forced" in cp.stderr, cp.stderr
    assert old[0] not in keys(data_dir)
    assert cli("verify", "--data-dir", data_dir).returncode == 0


def test_ksk_activation_waits_for_the_ds_ttl(data_dir):
    assert dnssec(data_dir, "enable").returncode == 0
    assert dnssec(data_dir, "rollover", "ksk", "prepublish").returncode == 0
    shift_keys(data_dir, 3901)  # enough for a ZSK, not for the parent's DS
    cp = dnssec(data_dir, "rollover", "ksk", "activate")
    assert cp.returncode == 1 and "the parent's DS" in cp.stderr, cp.stderr
    # A parent with a one-minute DS TTL: the DNSKEY TTL is the longer wait.
    cp = dnssec(data_dir, "rollover", "ksk", "activate", "--ds-ttl", "60")
    assert cp.returncode == 0, cp.stderr


def test_csk_zone_gets_a_zsk_in_two_steps(data_dir):
    """docs/dnssec.md: prepublish and activate split a CSK; retire then has
    nothing to act on and says so."""
    assert dnssec(data_dir, "enable").returncode == 0
    assert dnssec(data_dir, "rollover", "zsk", "prepublish").returncode == 0
    # the ZSK only published: the 257 key still signs everything (a CSK)
    roles = sorted(v[:2] for v in keys(data_dir).values())
    assert roles == [("CSK", "active"), ("ZSK", "published")], roles
    shift_keys(data_dir, 3901)
    assert dnssec(data_dir, "rollover", "zsk", "activate").returncode == 0
    roles = sorted(v[:2] for v in keys(data_dir).values())
    assert roles == [("KSK", "active"), ("ZSK", "active")], roles
    cp = dnssec(data_dir, "rollover", "zsk", "retire")
    assert cp.returncode == 1 and "nothing to do for zsk retire" in cp.stderr, cp.stderr


# ------------------------------------------------------------------ dnssec disable

@pytest.fixture
def served(tmp_path):
    srv = ZonecastServer(str(tmp_path / "srv"), zones={ZONE: ZONE_FILE}).start()
    yield srv
    assert not srv.stop()


def ask(srv, name, rtype):
    q = dns.message.make_query(name, rtype, want_dnssec=True)
    return dns.query.udp(q, "127.0.0.1", port=srv.port, timeout=5)


def answer_texts(r, rtype):
    return sorted(rd.to_text() for rrset in r.answer if rrset.rdtype == rtype
                  for rd in rrset)


def wait_until(fn, what, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if fn():
            return
        time.sleep(0.05)
    raise AssertionError(what)


def test_disable_publishes_delete_first(served):
    d = served.data_dir
    assert dnssec(d, "enable").returncode == 0
    wait_until(lambda: answer_texts(ask(served, ZONE, "DNSKEY"), dns.rdatatype.DNSKEY),
               "DNSKEY served")
    cp = dnssec(d, "disable")
    assert cp.returncode == 0, cp.stderr
    assert "CDS and CDNSKEY DELETE published" in cp.stdout, cp.stdout
    assert "remove the DS records of example.com. at the parent" in cp.stdout, cp.stdout
    # RFC 8078 §4: the DELETE records, signed; the zone is still signed.
    wait_until(lambda: answer_texts(ask(served, ZONE, "CDS"), dns.rdatatype.CDS)
               == ["0 0 0 00"], "CDS DELETE served")
    r = ask(served, ZONE, "CDNSKEY")
    assert answer_texts(r, dns.rdatatype.CDNSKEY) == ["0 3 0 AA=="], r
    assert answer_texts(r, dns.rdatatype.RRSIG), r
    assert answer_texts(ask(served, ZONE, "DNSKEY"), dns.rdatatype.DNSKEY)
    out = cli("dnssec", "keys", "--data-dir", d, ZONE).stdout
    assert "being disabled" in out and "Remove the DS at the parent" in out, out
    # Again before the DS TTL: refused, nothing removed.
    cp = dnssec(d, "disable")
    assert cp.returncode == 1 and "too early for disable" in cp.stderr, cp.stderr
    assert "DS TTL" in cp.stderr, cp.stderr
    # Once the DS TTL (a day by default) and the margin have passed: the
    # keys go and the zone is served unsigned.
    shift_records(d, 59, 86400 + 301)  # the CDS DELETE's creation time
    cp = dnssec(d, "disable")
    assert cp.returncode == 0, cp.stderr
    assert "keys removed" in cp.stdout, cp.stdout
    wait_until(lambda: not answer_texts(ask(served, ZONE, "DNSKEY"), dns.rdatatype.DNSKEY),
               "DNSKEY gone")
    r = ask(served, ZONE, "SOA")
    assert not answer_texts(r, dns.rdatatype.RRSIG) and not answer_texts(r, dns.rdatatype.CDS)
    assert "is not signed" in cli("dnssec", "keys", "--data-dir", d, ZONE).stdout


def test_enable_cancels_a_disable(data_dir):
    out = dnssec(data_dir, "enable").stdout
    ds = [line for line in out.splitlines() if " IN DS " in line]
    assert dnssec(data_dir, "disable").returncode == 0
    cp = dnssec(data_dir, "enable")
    assert cp.returncode == 0 and "disable cancelled" in cp.stdout, cp.stdout + cp.stderr
    assert [line for line in cp.stdout.splitlines() if " IN DS " in line] == ds
    export = cli("zone", "export", "--data-dir", data_dir, ZONE).stdout
    assert "0 0 0 00" not in export and re.search(r"\tCDS\t\d+ 13 2 ", export), export
    assert "being disabled" not in cli("dnssec", "keys", "--data-dir", data_dir, ZONE).stdout


def apex_cds(data_dir):
    """The exported apex CDS and CDNSKEY rdata, sorted."""
    export = cli("zone", "export", "--data-dir", data_dir, ZONE).stdout
    return sorted(re.findall(r"^\S+\s*\t\d+\t(CDS|CDNSKEY)\t(.*)$", export, re.M))


def test_no_rollover_step_joins_cds_to_the_delete_ones(data_dir):
    """RFC 8078 §4: the DELETE CDS (CDNSKEY) RRset holds that record alone.
    While a disable is pending, ksk prepublish (which publishes the new
    KSK's CDS and CDNSKEY) is refused, saying what to do; the steps that
    publish none still run. Cancelling the disable lets it run again."""
    assert dnssec(data_dir, "enable").returncode == 0
    assert dnssec(data_dir, "disable").returncode == 0
    delete = [("CDNSKEY", "0 3 0 AA=="), ("CDS", "0 0 0 00")]
    assert apex_cds(data_dir) == delete
    before = keys(data_dir)
    cp = dnssec(data_dir, "rollover", "ksk", "prepublish")
    assert cp.returncode == 1, cp.stdout + cp.stderr
    assert "ksk prepublish refused" in cp.stderr and "being disabled" in cp.stderr, cp.stderr
    assert "dnssec enable" in cp.stderr and "dnssec disable" in cp.stderr, cp.stderr
    assert apex_cds(data_dir) == delete
    assert keys(data_dir) == before
    # a ZSK publishes no CDS: its prepublish runs
    assert dnssec(data_dir, "rollover", "zsk", "prepublish").returncode == 0
    assert apex_cds(data_dir) == delete
    # the disable cancelled: real CDS again, and ksk prepublish adds its own
    assert dnssec(data_dir, "enable").returncode == 0
    cp = dnssec(data_dir, "rollover", "ksk", "prepublish")
    assert cp.returncode == 0, cp.stderr
    cds = apex_cds(data_dir)
    assert [t for t, _ in cds] == ["CDNSKEY"] * 2 + ["CDS"] * 2, cds
    assert not [r for _, r in cds if r.startswith("0 ")], cds


def test_enable_of_a_zone_being_disabled_refuses_key_options(data_dir):
    """enable on a zone being disabled cancels the disable and keeps its
    keys: --algorithm and --split, which it would not apply, are refused
    (they were ignored silently)."""
    assert dnssec(data_dir, "enable").returncode == 0
    assert dnssec(data_dir, "disable").returncode == 0
    for opts in (["--algorithm", "ed25519", "--split"], ["--split"],
                 ["--algorithm", "ecdsap256sha256"]):
        cp = dnssec(data_dir, "enable", *opts)
        assert cp.returncode == 1, (opts, cp.stdout, cp.stderr)
        assert "is being disabled" in cp.stderr and "--algorithm and --split" in cp.stderr, \
            cp.stderr
        out = cli("dnssec", "keys", "--data-dir", data_dir, ZONE).stdout
        assert "being disabled" in out, out
    cp = dnssec(data_dir, "enable")
    assert cp.returncode == 0 and "disable cancelled" in cp.stdout, cp.stdout + cp.stderr


def test_disable_force_removes_at_once_loudly(data_dir):
    assert dnssec(data_dir, "enable").returncode == 0
    cp = dnssec(data_dir, "disable", "--force")
    assert cp.returncode == 0, cp.stderr
    assert "WARNING: keys of example.com. removed at once" in cp.stderr, cp.stderr
    assert "is not signed" in cli("dnssec", "keys", "--data-dir", data_dir, ZONE).stdout


# ------------------------------------------------------------------ progress

@pytest.fixture(scope="module")
def big_zone(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("big") / "big.zone")
    gen = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "bench", "gen_zone.py")
    subprocess.run(["/usr/bin/python3", gen, "300000", path, "--origin", "big.test.",
                    "--queries", "10"], check=True, capture_output=True, timeout=300)
    return path


def test_progress_on_a_terminal_only(big_zone, tmp_path):
    d = str(tmp_path / "tty")
    rc, out = on_pty(["zone", "import", "--data-dir", d, "big.test", big_zone])
    assert rc == 0, out
    assert re.search(r"\rreading: [\d,]+ records, [\d,]+ records/s", out), out
    assert re.search(r"\rbuilding: [\d,]+ records, [\d,]+ records/s\x1b\[K in [\d.]+ s", out), out
    rc, out = on_pty(["verify", "--data-dir", d, "big.test"])
    assert rc == 0, out
    assert re.search(r"\rverifying big.test: [\d,]+ records.*records/s", out), out
    # Not a terminal: the summary only, no carriage returns.
    d2 = str(tmp_path / "pipe")
    cp = cli("zone", "import", "--data-dir", d2, "big.test", big_zone)
    assert cp.returncode == 0, cp.stderr
    assert "\r" not in cp.stderr and "records/s" not in cp.stderr, cp.stderr
    assert re.match(r"zone big.test.: \d+ records, serial \d+, stored in", cp.stderr), cp.stderr
    cp = cli("verify", "--data-dir", d2)
    assert cp.returncode == 0 and "\r" not in cp.stderr + cp.stdout
