"""A mistyped --data-dir or zone name is an error (issue 11 item 7).

Only `zonecast serve` and `zonecast zone import` create a data directory.
Every other command given a path that holds no zonecast data directory
(missing, an empty directory, a file; by --data-dir or by the config file's
data-dir) fails with "no zonecast data directory at PATH" and creates
nothing. Every command that takes a zone name fails with "no zone NAME" for
a zone the data directory does not have, and changes nothing: zone export
and delete, verify, token create --zone, tsig create/list --zone, each dnssec
subcommand, and the record subcommands (through the API).
"""

import os
import sqlite3
import subprocess

import pytest

import servers

ZONE = "example.com."
ZONE_FILE = os.path.join(servers.ZONES_DIR, "example.com.zone")


def zonecast(*args, env=None):
    e = dict(os.environ, **(env or {}))
    e.pop("ZONECAST_TOKEN", None)
    return subprocess.run([servers.zonecast_bin()] + list(args), capture_output=True,
                          text=True, timeout=60 * servers.TIMEOUT_SCALE, env=e)


@pytest.fixture(autouse=True)
def _binary():
    if not os.access(servers.zonecast_bin(), os.X_OK):
        pytest.skip("zonecast binary not found")


@pytest.fixture
def data_dir(tmp_path):
    """A real data directory holding example.com and a TSIG key of it."""
    d = str(tmp_path / "data")
    cp = zonecast("zone", "import", "--data-dir", d, "--quiet", ZONE, ZONE_FILE)
    assert cp.returncode == 0, cp.stderr
    cp = zonecast("tsig", "create", "--data-dir", d, "k.example.com", "--zone", "example.com")
    assert cp.returncode == 0, cp.stderr
    return d


# Every subcommand that reads or writes a data directory, as argument lists
# with DIR where the directory goes (ZONE: a zone it has, NAME: a key name).
COMMANDS = [
    ["zone", "list", "--data-dir", "DIR"],
    ["zone", "export", "--data-dir", "DIR", "ZONE"],
    ["zone", "delete", "--data-dir", "DIR", "ZONE"],
    ["verify", "--data-dir", "DIR"],
    ["verify", "--data-dir", "DIR", "ZONE"],
    ["token", "create", "--data-dir", "DIR"],
    ["token", "create", "--data-dir", "DIR", "--read-only", "--zone", "ZONE"],
    ["tsig", "create", "--data-dir", "DIR", "NAME", "--zone", "ZONE"],
    ["tsig", "list", "--data-dir", "DIR"],
    ["tsig", "list", "--data-dir", "DIR", "--zone", "ZONE"],
    ["tsig", "delete", "--data-dir", "DIR", "NAME"],
    ["dnssec", "enable", "--data-dir", "DIR", "ZONE"],
    ["dnssec", "disable", "--data-dir", "DIR", "ZONE"],
    ["dnssec", "ds", "--data-dir", "DIR", "ZONE"],
    ["dnssec", "keys", "--data-dir", "DIR", "ZONE"],
    ["dnssec", "rollover", "--data-dir", "DIR", "ZONE", "zsk", "prepublish"],
    # the record commands read the API token from DATA_DIR/demo-token
    ["record", "list", "--data-dir", "DIR", "ZONE", "--api", "127.0.0.1:9"],
]


def fill(cmd, d, zone="example.com", name="k2.example.com"):
    return [{"DIR": d, "ZONE": zone, "NAME": name}.get(a, a) for a in cmd]


def cmd_id(cmd):
    return " ".join(a for a in cmd if a not in ("--data-dir", "DIR"))


def not_there_cases(tmp_path):
    """Paths that are no data directory: (path, what exists there)."""
    empty = tmp_path / "empty-dir"
    empty.mkdir()
    afile = tmp_path / "a-file"
    afile.write_text("not a data directory\n")
    other = tmp_path / "other-dir"
    other.mkdir()
    (other / "edge.mdb").write_bytes(b"")   # half a data directory: no records store
    return [(str(tmp_path / "no-such-dir"), None), (str(tmp_path / "no" / "such" / "dir"), None),
            (str(empty), []), (str(afile), "file"), (str(other), ["edge.mdb"])]


@pytest.mark.parametrize("cmd", COMMANDS, ids=cmd_id)
def test_no_data_directory_there(tmp_path, cmd):
    for path, before in not_there_cases(tmp_path):
        cp = zonecast(*fill(cmd, path))
        assert cp.returncode != 0, (path, cp.stdout)
        assert "no zonecast data directory at %s" % path in cp.stderr, (path, cp.stderr)
        assert "no differences" not in cp.stdout
        if before is None:
            assert not os.path.exists(path), "%s was created" % path
        elif before == "file":
            assert os.path.isfile(path)
        else:
            assert sorted(os.listdir(path)) == before, "%s was written into" % path


@pytest.mark.parametrize("cmd", [c for c in COMMANDS if cmd_id(c) in ("zone list", "verify",
                                                                       "tsig list",
                                                                       "token create")],
                         ids=cmd_id)
def test_no_data_directory_from_the_config_file(tmp_path, cmd):
    """The config file's data-dir is checked the same way (and with neither
    flag nor file, ./zonecast-data in the working directory)."""
    conf = tmp_path / "zonecast.conf"
    path = str(tmp_path / "typo-data")
    conf.write_text("server:\n    data-dir: %s\n" % path)
    args = [a for a in fill(cmd, "X") if a not in ("--data-dir", "X")]
    cp = zonecast(*(args[:2] + ["--config", str(conf)] + args[2:]))
    assert cp.returncode != 0
    assert "no zonecast data directory at %s" % path in cp.stderr, cp.stderr
    assert not os.path.exists(path)
    cwd_default = subprocess.run([servers.zonecast_bin()] + args, capture_output=True, text=True,
                                 timeout=60, cwd=str(tmp_path))
    assert cwd_default.returncode != 0
    assert "no zonecast data directory at zonecast-data" in cwd_default.stderr
    assert not os.path.exists(tmp_path / "zonecast-data")


def test_serve_and_zone_import_create_one(tmp_path):
    d = str(tmp_path / "new" / "data")
    os.makedirs(os.path.dirname(d))
    cp = zonecast("zone", "import", "--data-dir", d, "--quiet", ZONE, ZONE_FILE)
    assert cp.returncode == 0, cp.stderr
    assert os.path.isfile(os.path.join(d, "records.db"))
    cp = zonecast("zone", "list", "--data-dir", d)
    assert cp.returncode == 0 and "example.com." in cp.stdout
    # serve makes a fresh one (and its demo zone)
    d2 = str(tmp_path / "served")
    port = servers.free_port()
    p = subprocess.Popen([servers.zonecast_bin(), "serve", "--data-dir", d2, "--listen",
                          "127.0.0.1:%d" % port, "--api-listen", "none"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        import time
        deadline = time.monotonic() + 10
        while not os.path.isfile(os.path.join(d2, "demo-token")):
            assert p.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        p.terminate()
        p.wait(10)
    cp = zonecast("zone", "list", "--data-dir", d2)
    assert cp.returncode == 0 and "example.test." in cp.stdout, cp.stderr


# ------------------------------------------------------------------ unknown zones

def snapshot(d):
    """What a refused command must leave as it was: zones, keys, tokens."""
    zones = zonecast("zone", "list", "--data-dir", d).stdout
    keys = zonecast("tsig", "list", "--data-dir", d).stdout
    db = sqlite3.connect("file:%s/records.db?mode=ro" % d, uri=True)
    try:
        tokens = db.execute("SELECT count(*) FROM tokens").fetchone()[0]
    finally:
        db.close()
    return zones, keys, tokens


ZONE_COMMANDS = [c for c in COMMANDS if "ZONE" in c and c[0] != "record"]


@pytest.mark.parametrize("cmd", ZONE_COMMANDS, ids=cmd_id)
@pytest.mark.parametrize("zone", ["nosuch.test", "nosuch.test.", "com", "www.example.com",
                                  "example.org"])
def test_unknown_zone(data_dir, cmd, zone):
    """Also a name below a zone (www.example.com) or above it (com): a zone
    name is exact."""
    before = snapshot(data_dir)
    cp = zonecast(*fill(cmd, data_dir, zone=zone))
    assert cp.returncode != 0, cp.stdout
    assert "no zone %s" % zone in cp.stderr, cp.stderr
    assert "no differences" not in cp.stdout
    assert snapshot(data_dir) == before


@pytest.mark.parametrize("cmd", ZONE_COMMANDS, ids=cmd_id)
def test_invalid_zone_name(data_dir, cmd):
    before = snapshot(data_dir)
    cp = zonecast(*fill(cmd, data_dir, zone="a..b"))
    assert cp.returncode != 0
    assert "a..b" in cp.stderr, cp.stderr
    assert snapshot(data_dir) == before


def test_known_zone_still_works(data_dir):
    """The same commands on the zone the directory has succeed (in an order
    that makes each meaningful)."""
    for cmd in (["zone", "export", "--data-dir", "DIR", "ZONE"],
                ["verify", "--data-dir", "DIR", "ZONE"],
                ["token", "create", "--data-dir", "DIR", "--zone", "ZONE"],
                ["tsig", "list", "--data-dir", "DIR", "--zone", "ZONE"],
                ["dnssec", "enable", "--data-dir", "DIR", "ZONE", "--split"],
                ["dnssec", "ds", "--data-dir", "DIR", "ZONE"],
                ["dnssec", "keys", "--data-dir", "DIR", "ZONE"],
                ["dnssec", "rollover", "--data-dir", "DIR", "ZONE", "zsk", "prepublish"],
                ["dnssec", "disable", "--data-dir", "DIR", "ZONE"],
                ["zone", "delete", "--data-dir", "DIR", "--force", "ZONE"]):
        cp = zonecast(*fill(cmd, data_dir))
        assert cp.returncode == 0, (cmd, cp.stderr)
    cp = zonecast("verify", "--data-dir", data_dir)
    assert cp.returncode == 0 and "no differences" in cp.stdout, cp.stdout + cp.stderr


@pytest.mark.parametrize("sub", [["list"], ["add", "www", "A", "192.0.2.1"], ["edit", "1"],
                                 ["rm", "1"]])
def test_record_commands_unknown_zone(zonecast_api, sub):
    """Through the API: an unknown zone is "no zone NAME", exit 1, nothing
    written."""
    srv = zonecast_api
    token = srv.create_token()
    before = srv.client(token).get("/zones", params={"per_page": 1000})
    cp = zonecast("record", sub[0], "nosuch.test", *sub[1:], "--api",
                  "127.0.0.1:%d" % srv.api_port, "--token", token)
    assert cp.returncode == 1, cp.stdout + cp.stderr
    assert "no zone nosuch.test" in cp.stderr, cp.stderr
    assert srv.client(token).get("/zones", params={"per_page": 1000}) == before


def test_tsig_list_names_the_zone(data_dir):
    """`tsig list` names each key's zone (it printed `zone-id=1`)."""
    cp = zonecast("tsig", "list", "--data-dir", data_dir)
    assert cp.returncode == 0, cp.stderr
    assert "\tzone=example.com.\t" in cp.stdout, cp.stdout
    assert "zone-id" not in cp.stdout, cp.stdout
