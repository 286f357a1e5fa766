"""Checks that write nothing (issue 14): `zonecast check-config` (as
`knotc conf-check`) and `zonecast zone check` (as `kzonecheck`), their exit
codes and messages; every config key documented and classified for reload;
and `zonecast fleet status` refusing a data directory that is none.
"""

import os
import re
import subprocess

import pytest

import servers

DOCS = os.path.join(servers.REPO, "docs")


def zc(*args, cwd=None):
    return subprocess.run([servers.zonecast_bin()] + list(args), capture_output=True,
                          text=True, timeout=60, cwd=cwd)


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return str(path)


@pytest.fixture(autouse=True)
def _binary():
    if not os.access(servers.zonecast_bin(), os.X_OK):
        pytest.skip("zonecast not built")


def test_check_config_ok_and_warnings(tmp_path):
    conf = write(tmp_path / "ok.conf", "server:\n    data-dir: %s\n    listen: 127.0.0.1:5353\n"
                 "    log-target: %s\n" % (tmp_path / "data", tmp_path / "z.log"))
    cp = zc("check-config", "-c", conf)
    assert cp.returncode == 0, cp.stderr
    assert cp.stdout == "%s: OK (1 warning(s))\n" % conf  # data-dir to be created
    assert "warning: data-dir: %s does not exist" % (tmp_path / "data") in cp.stderr
    assert not os.path.exists(tmp_path / "data") and not os.path.exists(tmp_path / "z.log")
    os.mkdir(tmp_path / "data")
    cp = zc("check-config", "-c", conf, "-o", "allow-update=0.0.0.0/0")
    assert cp.returncode == 0 and "OK (1 warning(s))" in cp.stdout
    assert "warning: allow-update: a /0 entry lets anyone change the zones" in cp.stderr
    cp = zc("check-config", "-c", conf)
    assert (cp.returncode, cp.stdout, cp.stderr) == (0, "%s: OK\n" % conf, "")


def test_check_config_syntax_error(tmp_path):
    conf = write(tmp_path / "bad.conf", "server:\n    listen: 127.0.0.1:53\n    lissen: x\n")
    cp = zc("check-config", "-c", conf)
    assert cp.returncode == 1
    assert cp.stderr.strip() == "error: %s:3: unknown setting 'lissen'" % conf
    conf = write(tmp_path / "bad2.conf", "server:\n    rrl-rate: fast\n")
    cp = zc("check-config", "-c", conf)
    assert cp.returncode == 1 and ":2: invalid value 'fast' for 'rrl-rate'" in cp.stderr
    cp = zc("check-config", "-c", str(tmp_path / "missing.conf"))
    assert cp.returncode == 1 and "missing.conf: cannot open" in cp.stderr


def test_check_config_semantic_errors(tmp_path):
    (tmp_path / "data").mkdir()
    conf = write(tmp_path / "sem.conf",
                 "server:\n    data-dir: %s\n    listen: 127.0.0.1:5353\n"
                 "    listen: 127.0.0.1:5353\n    api-listen: 127.0.0.1:5353\n"
                 "    user: no-such-user-zc\n    log-target: /nonexistent/x.log\n"
                 "    log-target: syslog\n    log-target: syslog\n" % (tmp_path / "data"))
    cp = zc("check-config", "-c", conf)
    assert cp.returncode == 1
    for msg in ("error: listen: 127.0.0.1:5353 is listed twice",
                "error: api-listen: 127.0.0.1:5353 is also a DNS listen address",
                "error: user: no user 'no-such-user-zc' on this system",
                "error: log-target: /nonexistent/x.log: no directory /nonexistent",
                "error: log-target: syslog is listed twice"):
        assert msg in cp.stderr, cp.stderr
    assert cp.stderr.rstrip().endswith("not fit to run")


def test_every_key_documented_and_classified():
    """Every key check-config knows is in docs/configuration.md (or, for
    the fleet's, docs/fleet.md) and in the reload section of
    docs/operations.md with the same live/restart class."""
    rows = [l.split() for l in zc("check-config", "--keys").stdout.splitlines()]
    assert all(len(r) == 3 for r in rows), rows
    keys = {r[0]: r[1] for r in rows}
    assert len(keys) > 50 and set(keys.values()) == {"live", "restart"}
    conf = open(os.path.join(DOCS, "configuration.md")).read()
    fleet = open(os.path.join(DOCS, "fleet.md")).read()
    ops = open(os.path.join(DOCS, "operations.md")).read()
    for key in keys:
        assert "`%s`" % key in conf or "`%s`" % key in fleet, key
    # The default the table gives is the one the docs' row names.
    for key, _, default in rows:
        if default == "-":
            continue
        row = re.search(r"^\| `%s`[^|]*\|([^|]*)\|" % re.escape(key), conf, re.M)
        if row is None:
            row = re.search(r"^\| `%s`[^|]*\|([^|]*)\|" % re.escape(key), fleet, re.M)
        assert row is not None, key
        assert "`%s`" % default in row.group(1), (key, default, row.group(1))
    live = re.search(r"<!-- live keys -->(.*?)<!-- end -->", ops, re.S).group(1)
    restart = re.search(r"<!-- restart keys -->(.*?)<!-- end -->", ops, re.S).group(1)
    for key, cls in keys.items():
        if key.startswith("nats") or key.startswith("fleet-"):
            assert "`nats*`" in restart or "`%s`" % key in restart, key
            continue
        assert "`%s`" % key in (live if cls == "live" else restart), (key, cls)


def test_keys_print_the_defaults_serve_uses():
    """--keys printed "-" for listen (serve listens on 127.0.0.1:5300) and
    log-target (stderr), and for the keys derived from data-dir."""
    rows = {r.split()[0]: r.split()[2] for r in zc("check-config", "--keys").stdout.splitlines()}
    assert rows["listen"] == "127.0.0.1:5300" and rows["log-target"] == "stderr", rows
    assert rows["control-socket"] == "DATA_DIR/control.sock"
    assert rows["pidfile"] == "DATA_DIR/zonecast.pid" and rows["node-name"] == "HOST:DATA_DIR"


LISTENER_CLASHES = [
    # (listen, api-listen, metrics-listen), the message's start
    (["127.0.0.1:{P}"], "127.0.0.1:{Q}", "127.0.0.1:{P}",
     "metrics-listen: 127.0.0.1:{P} is also a DNS listen address"),
    (["127.0.0.1:{P}"], "127.0.0.1:{Q}", "127.0.0.1:{Q}",
     "metrics-listen: 127.0.0.1:{Q} is also the address of api-listen"),
    (["127.0.0.1:{P}"], "127.0.0.1:{Q}", "0.0.0.0:{Q}",
     "api-listen 127.0.0.1:{Q} and metrics-listen 0.0.0.0:{Q} overlap: 0.0.0.0:{Q} takes port {Q}"),
    (["127.0.0.1:{P}"], "0.0.0.0:{P}", "none",
     "listen 127.0.0.1:{P} and api-listen 0.0.0.0:{P} overlap"),
    (["0.0.0.0:{P}", "127.0.0.1:{P}"], "none", "none",
     "listen 0.0.0.0:{P} and listen 127.0.0.1:{P} overlap: 0.0.0.0:{P} takes port {P} on every "
     "address of its family (both use UDP and TCP there)"),
    (["[::]:{P}", "[::1]:{P}"], "none", "none", "listen [::]:{P} and listen [::1]:{P} overlap"),
]


@pytest.mark.parametrize("listen,api,metrics,msg", LISTENER_CLASHES)
def test_own_listeners_clash(tmp_path, listen, api, metrics, msg):
    """The server's own listeners on one port: the same address, or a
    wildcard over a specific address of its family. check-config accepted
    them and serve failed with "address already in use (by another
    zonecast or another server)", blaming another process for its own
    configuration. Both keys are named, and serve refuses before it binds."""
    p, q = str(servers.free_port()), str(servers.free_port())
    sub = lambda t: t.replace("{P}", p).replace("{Q}", q)
    text = "server:\n    data-dir: %s\n" % (tmp_path / "d")
    text += "".join("    listen: %s\n" % sub(l) for l in listen)
    text += "    api-listen: %s\n    metrics-listen: %s\n" % (sub(api), sub(metrics))
    conf = write(tmp_path / "c.conf", text)
    os.mkdir(tmp_path / "d")
    cp = zc("check-config", "-c", conf)
    assert cp.returncode == 1 and "error: " + sub(msg) in cp.stderr, cp.stderr
    cp = subprocess.run([servers.zonecast_bin(), "serve", "-c", conf], capture_output=True,
                        text=True, timeout=30)
    assert cp.returncode == 1 and sub(msg) in cp.stderr, cp.stderr
    assert "another" not in cp.stderr and "nothing was started" in cp.stderr, cp.stderr


def test_listeners_that_do_not_clash(tmp_path):
    """[::]:P is bound IPv6-only, so it takes nothing of 127.0.0.1:P; two
    addresses of one family on one port, and port 0, are fine."""
    p = servers.free_port()
    os.mkdir(tmp_path / "d")
    conf = write(tmp_path / "c.conf",
                 "server:\n    data-dir: %s\n    listen: 127.0.0.1:%d\n    listen: [::]:%d\n"
                 "    listen: 127.0.0.2:%d\n    api-listen: 127.0.0.1:0\n"
                 "    metrics-listen: 127.0.0.1:0\n" % (tmp_path / "d", p, p, p))
    cp = zc("check-config", "-c", conf)
    assert cp.returncode == 0, cp.stderr


def test_zone_check(tmp_path):
    good = os.path.join(servers.ZONES_DIR, "example.com.zone")
    cp = zc("zone", "check", "--origin", "example.com.", good, cwd=str(tmp_path))
    assert cp.returncode == 0, cp.stderr
    assert re.match(r"zone example.com.: \d+ records, no problems found in ", cp.stdout)
    assert os.listdir(tmp_path) == []  # nothing written, no data directory
    # ZONE FILE, as import takes them
    assert zc("zone", "check", "example.com.", good).returncode == 0
    # the origin from the file name
    cp = zc("zone", "check", good)
    assert cp.returncode == 0 and "zone example.com (from the file name" in cp.stderr


def test_zone_check_problems(tmp_path):
    bad = write(tmp_path / "bad.test.zone", "\n".join([
        "$ORIGIN bad.test.",
        "@ 3600 IN SOA ns hostmaster 1 7200 3600 1209600 300",
        "@ NS ns",
        "ns A 192.0.2.1",
        "www CNAME ns",
        "www A 192.0.2.2",
        "mail A 999.0.2.1",
        "out.example.org. A 192.0.2.3",
        ""]))
    cp = zc("zone", "check", bad)
    assert cp.returncode == 1
    assert "%s:7: error:" % bad in cp.stderr, cp.stderr
    assert "%s:8: error: out.example.org. is outside the zone" % bad in cp.stderr
    assert "zone bad.test: " in cp.stderr and "problem(s) found in %s" % bad in cp.stderr
    fixed = write(tmp_path / "fixed.zone", "\n".join([
        "$ORIGIN bad.test.",
        "@ 3600 IN SOA ns hostmaster 1 7200 3600 1209600 300",
        "@ NS ns",
        "ns A 192.0.2.1",
        "www CNAME ns",
        "www A 192.0.2.2",
        ""]))
    cp = zc("zone", "check", "--origin", "bad.test", fixed)
    assert cp.returncode == 1
    assert "www.bad.test. A: CNAME and other data at the same name" in cp.stderr or \
        "CNAME and other data" in cp.stderr, cp.stderr
    nosoa = write(tmp_path / "nosoa.zone", "$ORIGIN n.test.\nwww 300 A 192.0.2.1\n")
    cp = zc("zone", "check", "--origin", "n.test", nosoa)
    assert cp.returncode == 1 and "no SOA record at the zone apex" in cp.stderr
    cp = zc("zone", "check", str(tmp_path / "missing.zone"))
    assert cp.returncode == 1
    cp = zc("zone", "check")
    assert cp.returncode == 2 and "Usage: zonecast zone check" in cp.stderr


def test_fleet_status_checks_the_data_directory(tmp_path):
    """fleet status reads the token from the data directory: a path that
    is none is said as such (as the other commands say it)."""
    missing = tmp_path / "nope"
    env = dict(os.environ)
    env.pop("ZONECAST_TOKEN", None)
    cp = subprocess.run([servers.zonecast_bin(), "fleet", "status", "--data-dir", str(missing)],
                        capture_output=True, text=True, env=env)
    assert cp.returncode == 1
    assert "no zonecast data directory at %s" % missing in cp.stderr


@pytest.mark.parametrize("value,error", [
    ('nsid="ns1 #2"', None),
    ("nsid=plain", None),
    ('nsid="a" b', "-o nsid: text after the closing quote"),
    ('nsid="a', "-o nsid: a quote left open"),
    ('nsid= "ab', "-o nsid: a quote left open"),     # blanks go first, as in the file
    ('workers= "2"', None),
    ('nsid="abc" ', None),
    ("nsid=a\rversion: EVIL", "a control character (0x0d) in the value of 'nsid'"),
    ("nsid=a\nb", "a control character (0x0a) in the value of 'nsid'"),
])
def test_o_takes_values_as_the_file_does(value, error):
    """-o passed quotes and control characters through, where the file
    refuses them (an outside tester's)."""
    cp = subprocess.run([servers.zonecast_bin(), "check-config", "-o", value],
                        capture_output=True, text=True, timeout=30)
    if error is None:
        assert cp.returncode == 0, cp.stderr
    else:
        assert cp.returncode != 0 and error in cp.stderr, (cp.returncode, cp.stderr)


def test_o_with_an_empty_value_empties_a_list(tmp_path):
    """A repeatable key's list could not be emptied from the command
    line (`-o allow-update=` was "invalid value ''"): an empty value
    empties it, whatever the file and earlier flags said."""
    os.mkdir(tmp_path / "data")
    conf = write(tmp_path / "open.conf", "server:\n    data-dir: %s\n"
                 "    allow-update: 0.0.0.0/0\n" % (tmp_path / "data"))
    cp = zc("check-config", "-c", conf)
    assert cp.returncode == 0 and "a /0 entry lets anyone" in cp.stderr, cp.stderr
    for flags in (["-o", "allow-update="],
                  ["-o", "allow-update=::/0", "-o", "allow-update= "]):
        cp = zc("check-config", "-c", conf, *flags)
        assert (cp.returncode, cp.stderr) == (0, ""), (flags, cp.stderr)
    cp = zc("check-config", "-c", conf, "-o", "allow-update=", "-o", "allow-update=::/0")
    assert cp.returncode == 0 and "a /0 entry lets anyone" in cp.stderr, cp.stderr


@pytest.mark.parametrize("key", ["listen", "api-listen", "metrics-listen"])
def test_an_ipv4_mapped_listen_address_is_refused(key):
    """check-config said OK to listen on [::ffff:127.0.0.1]:P, which serve
    could never bind (IPv6 sockets are IPv6-only: "Invalid argument"; an
    outside tester's). Refused by both, saying why."""
    value = "[::ffff:127.0.0.1]:%d" % servers.free_port()
    for cmd in (["check-config"], ["serve", "--no-demo", "--data-dir", "/nonexistent/x"]):
        cp = subprocess.run([servers.zonecast_bin(), *cmd, "-o", "%s=%s" % (key, value)],
                            capture_output=True, text=True, timeout=30)
        assert cp.returncode != 0, (cmd, cp.stderr)
        assert "IPv4-mapped IPv6 address" in cp.stderr, (cmd, cp.stderr)
