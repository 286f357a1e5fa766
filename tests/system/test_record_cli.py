"""`zonecast record` by name and type: rm NAME TYPE [CONTENT], replace NAME
TYPE CONTENT..., and batch FILE (lines, or the API's JSON body), each one
all-or-nothing request that gives the zone one version, checked through
what DNS serves (as pdnsutil's replace-rrset and knotc's zone-set/unset
would be)."""

import json
import subprocess

import dns.name
import dns.rcode
import pytest

import servers
from test_api import (expect_answer, expect_nodata, expect_nxdomain, expect_serial, new_zone,
                      post_record, rdatas, serial)


@pytest.fixture(scope="module")
def srv(zonecast_api):
    return zonecast_api


@pytest.fixture(scope="module")
def api(srv):
    return srv.client()


def record(srv, api, *args, stdin=None):
    """`zonecast record ARGS... --api ... --token ...`; the CompletedProcess."""
    argv = [servers.zonecast_bin(), "record"] + list(args) + [
        "--api", "127.0.0.1:%d" % srv.api_port, "--token", api.token]
    return subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=60)


def version_of(cp):
    """The zone version the command reported (stderr: "zone version N")."""
    lines = [l for l in cp.stderr.splitlines() if l.startswith("zone version ")]
    assert len(lines) == 1, cp.stderr
    return int(lines[0].split()[-1])


def test_rm_by_name_and_type(srv, api):
    zid, zone = new_zone(api, "clirm")
    for ip in ("192.0.2.1", "192.0.2.2"):
        post_record(api, zid, name="www." + zone, type="A", content=ip)
    post_record(api, zid, name="www." + zone, type="AAAA", content="2001:db8::1")
    post_record(api, zid, name=zone, type="MX", content="mx1." + zone, priority=10)
    _, v0 = post_record(api, zid, name=zone, type="MX", content="mx2." + zone, priority=20)
    expect_serial(srv, zone, v0)
    cp = record(srv, api, "rm", zone, "www", "A")
    assert cp.returncode == 0, cp.stderr
    assert version_of(cp) == v0 + 1        # two records, one version
    assert sorted(l.split()[-1] for l in cp.stdout.splitlines()) == ["192.0.2.1", "192.0.2.2"]
    assert all(l.startswith("- ") for l in cp.stdout.splitlines())
    expect_nodata(srv, "www." + zone, "A")
    expect_answer(srv, "www." + zone, "AAAA", rdatas("AAAA", "2001:db8::1"))
    # one record by its content, MX with its priority as a zone file writes it
    cp = record(srv, api, "rm", zone, "@", "MX", "20 mx2.%s." % zone)
    assert cp.returncode == 0, cp.stderr
    v = version_of(cp)
    expect_serial(srv, zone, v)
    expect_answer(srv, zone, "MX", rdatas("MX", "10 mx1.%s." % zone))
    # nothing there: exit 1, nothing written
    for args in (("nothing", "A"), ("www", "A"), ("@", "MX", "20 mx1.%s." % zone)):
        cp = record(srv, api, "rm", zone, *args)
        assert cp.returncode == 1 and "no " in cp.stderr, cp.stderr
    assert serial(srv, zone) == v


def test_replace_makes_the_rrset_exactly_that(srv, api):
    zid, zone = new_zone(api, "clirep")
    post_record(api, zid, name="www." + zone, type="A", content="192.0.2.1")
    _, v0 = post_record(api, zid, name="www." + zone, type="A", content="192.0.2.2")
    expect_serial(srv, zone, v0)
    cp = record(srv, api, "replace", zone, "www." + zone, "A", "192.0.2.2", "192.0.2.3",
                "--ttl", "120")
    assert cp.returncode == 0, cp.stderr
    assert version_of(cp) == v0 + 1
    expect_answer(srv, "www." + zone, "A", rdatas("A", "192.0.2.2", "192.0.2.3"), ttl=120)
    # a new RRset; TXT with ';' as it is
    cp = record(srv, api, "replace", zone, "_dmarc", "TXT", "v=DMARC1; p=quarantine")
    assert cp.returncode == 0, cp.stderr
    expect_answer(srv, "_dmarc." + zone, "TXT", rdatas("TXT", '"v=DMARC1; p=quarantine"'))
    # a bad content: exit 1, the old RRset stays
    v = version_of(cp)
    expect_serial(srv, zone, v)
    cp = record(srv, api, "replace", zone, "www", "A", "192.0.2.9", "not-an-address")
    assert cp.returncode == 1 and "content" in cp.stderr
    assert serial(srv, zone) == v
    expect_answer(srv, "www." + zone, "A", rdatas("A", "192.0.2.2", "192.0.2.3"))


BATCH = """\
# one request, one version
add   new           300 A    192.0.2.50
add   new               TXT  v=spf1 -all
replace @              MX   10 mx1.{zone}.
replace @              MX   20 mx2.{zone}.
delete old              A
delete keep             A    192.0.2.2
"""


def test_batch_file_is_one_request(srv, api, tmp_path):
    zid, zone = new_zone(api, "clibatch")
    post_record(api, zid, name="old." + zone, type="A", content="192.0.2.1")
    post_record(api, zid, name="keep." + zone, type="A", content="192.0.2.2")
    post_record(api, zid, name="keep." + zone, type="A", content="192.0.2.3")
    _, v0 = post_record(api, zid, name=zone, type="MX", content="mx0." + zone, priority=5)
    expect_serial(srv, zone, v0)
    path = tmp_path / "changes.txt"
    path.write_text(BATCH.format(zone=zone))
    cp = record(srv, api, "batch", zone, str(path))
    assert cp.returncode == 0, cp.stderr
    assert version_of(cp) == v0 + 1
    out = cp.stdout.splitlines()
    assert sum(l.startswith("- ") for l in out) == 3 and sum(l.startswith("+ ") for l in out) == 4
    expect_serial(srv, zone, v0 + 1)
    expect_answer(srv, "new." + zone, "A", rdatas("A", "192.0.2.50"), ttl=300)
    expect_answer(srv, "new." + zone, "TXT", rdatas("TXT", '"v=spf1 -all"'))
    expect_answer(srv, zone, "MX", rdatas("MX", "10 mx1.%s." % zone, "20 mx2.%s." % zone))
    expect_nxdomain(srv, "old." + zone)
    expect_answer(srv, "keep." + zone, "A", rdatas("A", "192.0.2.3"))
    # the same from stdin, as JSON (the API's batch body)
    body = {"posts": [{"name": "json." + zone, "type": "A", "content": "192.0.2.60"}]}
    cp = record(srv, api, "batch", zone, "-", stdin=json.dumps(body))
    assert cp.returncode == 0, cp.stderr
    assert version_of(cp) == v0 + 2
    expect_answer(srv, "json." + zone, "A", rdatas("A", "192.0.2.60"))


@pytest.mark.parametrize("text,code,say", [
    ("add a A 192.0.2.1\nadd b A 999.0.0.1\n", 1, "content"),
    ("add a A 192.0.2.1\ndelete nothing A\n", 1, "no A record at nothing"),
    ("add a A 192.0.2.1\nadd b CNAME x.example.\nadd b A 192.0.2.2\n", 1, "CNAME"),
    ("add a A 192.0.2.1\nfrobnicate b A 192.0.2.2\n", 2, "line 2"),
    ("add a A\n", 2, "line 1"),
    ("delete a 300 A\n", 2, "line 1"),
    ("# nothing\n\n", 2, "no changes"),
    ("{\"posts\": [", 2, "line"),
    ("add a A 192.0.2.1\nadd g\\ A 192.0.2.2\n", 2, "line 2"),   # a lone final backslash
])
def test_batch_is_all_or_nothing(srv, api, tmp_path, text, code, say):
    zid, zone = new_zone(api, "cliaon")
    _, v0 = post_record(api, zid, name="x." + zone, type="A", content="192.0.2.9")
    expect_serial(srv, zone, v0)
    path = tmp_path / "bad.txt"
    path.write_text(text)
    cp = record(srv, api, "batch", zone, str(path))
    assert cp.returncode == code, (cp.returncode, cp.stdout, cp.stderr)
    assert say in cp.stderr, cp.stderr
    assert not cp.stdout
    assert serial(srv, zone) == v0
    expect_nxdomain(srv, "a." + zone)
    expect_answer(srv, "x." + zone, "A", rdatas("A", "192.0.2.9"))


def test_batch_names_with_escaped_blanks(srv, api, tmp_path):
    """A master-file escape keeps a blank in a name ("b\\ c"): the line was
    split there ("type: unknown or unsupported record type")."""
    zid, zone = new_zone(api, "cliesc")
    path = tmp_path / "esc.txt"
    path.write_text("add b\\ c 300 A 192.0.2.1\nadd d\\\tx TXT hi\n")
    cp = record(srv, api, "batch", zone, str(path))
    assert cp.returncode == 0, cp.stderr
    expect_answer(srv, "b\\ c." + zone + ".", "A", rdatas("A", "192.0.2.1"), ttl=300)
    names = sorted(r["name"] for r in api.records(zid) if r["type"] in ("A", "TXT"))
    assert names == ["b\\032c." + zone, "d\\009x." + zone], names
    # add, replace and rm NAME TYPE take the same escapes
    for args in (("add", zone, "e\\ x", "A", "192.0.2.5"),
                 ("replace", zone, "e\\ x", "A", "192.0.2.6"),
                 ("rm", zone, "b\\ c", "A")):
        cp = record(srv, api, *args)
        assert cp.returncode == 0, (args, cp.stderr)
    expect_answer(srv, "e\\ x." + zone + ".", "A", rdatas("A", "192.0.2.6"))
    assert sorted(r["name"] for r in api.records(zid, type="A")) == ["e\\032x." + zone]


def test_zone_named_with_url_characters_is_that_zone(srv, api):
    """The zone's name went into `GET /zones?name=` as typed: "x%41.z"
    named "xA.z", so the command wrote into zone xa.z; "&" cut it."""
    zid, zone = new_zone(api, "cliurl")
    decoy = api.ok("POST", "/zones", json={"name": "xa." + zone})["result"]
    for odd in ("x%41." + zone, "p&q." + zone, "r+s." + zone, "t#u." + zone):
        oz = api.ok("POST", "/zones", json={"name": odd})["result"]
        assert dns.name.from_text(oz["name"]) == dns.name.from_text(odd)
        cp = record(srv, api, "add", odd, "www", "A", "192.0.2.7")
        assert cp.returncode == 0, (odd, cp.stderr)
        assert [r["name"] for r in api.records(oz["id"], type="A")] == ["www." + oz["name"]]
    assert api.records(decoy["id"], type="A") == []


def test_edit_and_rm_take_only_an_id(srv, api):
    """The id goes into the request's path: "../" or "?" in it reached
    other resources of the API. Only the id's form is sent."""
    zid, zone = new_zone(api, "cliid")
    rec, _ = post_record(api, zid, name="keep." + zone, type="A", content="192.0.2.1")
    for bad in ("../../zones/" + zid, rec["id"] + "?x=1", rec["id"][1:], "www", ""):
        for sub in ("edit", "rm"):
            cp = record(srv, api, sub, zone, bad)
            assert cp.returncode == 2 and "not a record id" in cp.stderr, (sub, bad, cp.stderr)
    assert [r["id"] for r in api.records(zid, type="A")] == [rec["id"]]
    cp = record(srv, api, "rm", zone, rec["id"])
    assert cp.returncode == 0, cp.stderr
    assert api.records(zid, type="A") == []


def test_list_takes_a_list_of_types_rm_and_replace_one(srv, api, tmp_path):
    """`record list --type A,AAAA` lists records of either type, as the
    API's type filter takes a list; rm, replace and a batch file's lines
    name one RRset, so a list of types there is refused and nothing
    changes (the API would have listed, and removed, both RRsets)."""
    zid, zone = new_zone(api, "clitypes")
    post_record(api, zid, name="www." + zone, type="A", content="192.0.2.1")
    post_record(api, zid, name="www." + zone, type="AAAA", content="2001:db8::1")
    _, v = post_record(api, zid, name="www." + zone, type="TXT", content="x")
    cp = record(srv, api, "list", zone, "--name", "www." + zone, "--type", "A,AAAA")
    assert cp.returncode == 0, cp.stderr
    assert sorted(l.split()[3] for l in cp.stdout.splitlines()) == ["A", "AAAA"]
    batch = tmp_path / "types.batch"
    batch.write_text("delete www A,AAAA\n")
    for args in (("rm", zone, "www", "A,AAAA"), ("replace", zone, "www", "A,AAAA", "192.0.2.2"),
                 ("batch", zone, str(batch))):
        cp = record(srv, api, *args)
        assert cp.returncode == 1 and "one type" in cp.stderr, (args, cp.stderr)
    assert api.get("/zones/%s" % zid)["serial"] == v
    assert len(api.records(zid, name="www." + zone)) == 3


def test_unicode_names_are_punycode_through_the_command_too(srv, api, tmp_path):
    """The API stores a Unicode name in Punycode; the command sent every
    octet past ASCII as \\DDD, so `record add ZONE grün` stored raw UTF-8
    octets (no resolver asks for them) beside the API's xn--grn-ioa, and
    `record rm ZONE grün A` then found nothing. A zone named in Unicode
    through `zone import` is the API's zone too."""
    zid, zone = new_zone(api, "cliidn")
    cp = record(srv, api, "add", zone, "gr\u00fcn", "A", "192.0.2.61")
    assert cp.returncode == 0, cp.stderr
    got = api.get("/zones/%s/dns_records" % zid, params={"type": "A"})
    assert [r["name"] for r in got] == ["xn--grn-ioa." + zone], got
    expect_answer(srv, "xn--grn-ioa." + zone, "A", rdatas("A", "192.0.2.61"))
    cp = record(srv, api, "list", zone, "--name", "gr\u00fcn")
    assert cp.returncode == 0 and "192.0.2.61" in cp.stdout, (cp.stdout, cp.stderr)
    cp = record(srv, api, "rm", zone, "GR\u00dcN", "A")
    assert cp.returncode == 0, cp.stderr
    expect_nxdomain(srv, "xn--grn-ioa." + zone, "A")
    # escapes stay octets
    cp = record(srv, api, "add", zone, "\\195\\188", "A", "192.0.2.62")
    assert cp.returncode == 0, cp.stderr
    got = api.get("/zones/%s/dns_records" % zid, params={"type": "A"})
    assert [r["name"] for r in got] == ["\\195\\188." + zone], got
    # a zone imported under a Unicode name is the one the API finds
    zfile = tmp_path / "z.zone"
    zfile.write_text("@ 300 IN SOA ns1 h 1 2 3 4 5\n@ 300 IN NS ns1\nns1 300 IN A 192.0.2.1\n")
    name = "b\u00fccher-cli.test"
    cp = subprocess.run([servers.zonecast_bin(), "zone", "import", "--data-dir", srv.data_dir,
                         name, str(zfile)], capture_output=True, text=True, timeout=120)
    assert cp.returncode == 0, cp.stderr
    listed = api.get("/zones", params={"name": name})
    assert [z["name"] for z in listed] == ["xn--bcher-cli-q9a.test"], listed
    for spelling in (name, name.upper(), "xn--bcher-cli-q9a.test"):
        cp = subprocess.run([servers.zonecast_bin(), "zone", "status", "--data-dir",
                             srv.data_dir, spelling], capture_output=True, text=True, timeout=60)
        assert cp.returncode == 0 and "xn--bcher-cli-q9a.test" in cp.stdout, (spelling, cp)
