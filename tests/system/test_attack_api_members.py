"""Outside tester's API defects (found against the binary before the fixes on
branch api-fixes), each as its class:

1. a member given twice in a JSON object (at any depth, any body) is refused
   with 400 naming it; it used to be resolved to the last one;
2. a member zonecast does not know, in any JSON body (records, batches and
   their entries, zones, zone settings, TSIG keys, secondaries, DNSSEC), is
   refused with 400 naming it, while every member of the record object the
   API returns (and Cloudflare's) is taken, so a GET result can be PUT back;
   a write that names no change (an empty batch, a PATCH of no member that
   writes) makes no zone version;
3. Cloudflare's `data` beside a `content` that says otherwise is refused
   (it used to be silently ignored); `data` alone is read;
4. a batch's answer shows an op's record as that op wrote it when a later op
   of the batch writes the same record again (it showed the final state for
   every op on the id);
5. If-None-Match on a write to an existing record: "*", or a list holding
   its ETag (weak comparison), gets 412 and changes nothing;
6. an empty `name` (and other filters empty where that matches everything)
   on a listing is a 400 naming it, not the apex's records.

Each test fails on the binary before the fixes (e408f4b).
"""

import itertools

import pytest

_seq = itertools.count(1)


@pytest.fixture(scope="module")
def api(zonecast_api):
    return zonecast_api.client()


def new_zone(api):
    name = "m%d.members.test" % next(_seq)
    zid = api.ok("POST", "/zones", json={"name": name})["result"]["id"]
    return zid, name


def records(zid):
    return "/zones/%s/dns_records" % zid


def serial(api, zid):
    return api.get("/zones/%s" % zid)["serial"]


def refused(r, status, starts):
    assert r.status_code == status, (r.status_code, r.text)
    body = r.json()
    assert body["success"] is False, body
    msg = body["errors"][0]["message"]
    assert msg.startswith(starts), (starts, msg)
    return msg


def raw(api, method, path, text):
    return api.call(method, path, data=text.encode(),
                    headers={"Content-Type": "application/json"})


# ------------------------------------------------------------ 1. duplicates

def test_duplicate_members_refused_everywhere(api):
    zid, zone = new_zone(api)
    P = records(zid)
    rid = api.ok("POST", P, json={"type": "A", "name": "d", "content": "192.0.2.1"})["result"]["id"]
    v0 = serial(api, zid)
    cases = [
        ("POST", P, '{"type":"A","name":"d2","content":"192.0.2.1","content":"192.0.2.2"}',
         "content"),
        ("PATCH", P + "/" + rid, '{"ttl":60,"ttl":120}', "ttl"),
        ("PUT", P + "/" + rid, '{"type":"A","name":"d","name":"e","content":"192.0.2.3"}',
         "name"),
        ("POST", P + "/batch", '{"posts":[],"posts":[{"type":"A","name":"x",'
         '"content":"192.0.2.4"}]}', "posts"),
        ("POST", P + "/batch", '{"patches":[{"id":"%s","content":"192.0.2.5",'
         '"content":"192.0.2.6"}]}' % rid, "content"),
        ("PATCH", "/zones/%s" % zid, '{"soa":{"refresh":60,"refresh":90}}', "refresh"),
        ("POST", "/zones/%s/tsig_keys" % zid, '{"name":"k1","name":"k2"}', "name"),
        ("PUT", "/zones/%s/secondaries" % zid,
         '{"notify":[],"notify":["192.0.2.9:53"]}', "notify"),
        ("POST", "/zones", '{"name":"dup1.members.test","name":"dup2.members.test"}', "name"),
        ("POST", P, '{"type":"A","name":"d3","content":"192.0.2.1",'
         '"tags":["a"],"comment":"x","comm\\u0065nt":"y"}', "comment"),
    ]
    for method, path, text, key in cases:
        msg = refused(raw(api, method, path, text), 400, key + ":")
        assert "twice" in msg, msg
    # nothing of it happened
    assert serial(api, zid) == v0
    assert api.get(P + "/" + rid)["content"] == "192.0.2.1"
    assert api.get("/zones", params={"name": "dup2.members.test"}) == []
    assert api.get("/zones/%s/tsig_keys" % zid) == []
    # the same key in two objects is no duplicate
    r = raw(api, "POST", P + "/batch", '{"posts":[{"type":"A","name":"s1","content":'
            '"192.0.2.7"},{"type":"A","name":"s2","content":"192.0.2.7"}]}')
    assert r.status_code == 200, r.text


# ------------------------------------------------------- 2. unknown members

def test_unknown_record_members_refused(api):
    zid, zone = new_zone(api)
    P = records(zid)
    rid = api.ok("POST", P, json={"type": "A", "name": "u", "content": "192.0.2.60"})["result"]["id"]
    v0 = serial(api, zid)
    for method, path, body, named in [
        ("PATCH", P + "/" + rid, {"contnet": "192.0.2.61"}, "contnet"),
        ("PUT", P + "/" + rid, {"type": "A", "name": "u", "contnet": "192.0.2.61"}, "contnet"),
        ("POST", P, {"type": "A", "name": "u2", "content": "192.0.2.62", "tll": 60}, "tll"),
        ("POST", P + "/batch", {"delete": [{"id": rid}]}, "delete"),
        ("POST", P + "/batch", {"patches": [{"id": rid, "contnet": "192.0.2.61"}]},
         "patches[0].contnet"),
        ("POST", P + "/batch", {"deletes": [{"id": rid, "content": "192.0.2.60"}]},
         "deletes[0].content"),
        ("POST", P + "/batch", {"posts": [{"type": "A", "name": "b", "content": "192.0.2.8",
                                           "ttl": 60, "priorty": 1}]}, "posts[0].priorty"),
        ("POST", P, {"type": "A", "name": "u3", "content": "192.0.2.63",
                     "settings": {"ipv4_onyl": False}}, "settings.ipv4_onyl"),
        ("POST", P, {"type": "A", "name": "u3", "content": "192.0.2.63",
                     "settings": {"flatten_cname": True}}, "settings.flatten_cname"),
        ("PUT", P + "/" + rid, {"id": "f" * 32, "type": "A", "name": "u",
                                "content": "192.0.2.64"}, "id"),
    ]:
        refused(api.call(method, path, json=body), 400, named + ":")
    assert serial(api, zid) == v0, "a refused write made a version"
    assert api.get(P + "/" + rid)["content"] == "192.0.2.60"


def test_record_read_can_be_written_back(api):
    """Every member of the record object GET returns, and Cloudflare's
    (locked, settings, data, comment_modified_on, tags_modified_on), is
    taken: a record read is written back as it is."""
    zid, zone = new_zone(api)
    P = records(zid)
    made = api.ok("POST", P, json={"type": "MX", "name": "wb", "content": "mx." + zone,
                                   "priority": 5, "comment": "c", "tags": ["k:v"]})["result"]
    got = api.get(P + "/" + made["id"])
    back = dict(got, ttl=600, locked=False, settings={}, comment_modified_on=got["modified_on"],
                tags_modified_on=got["modified_on"])
    put = api.ok("PUT", P + "/" + made["id"], json=back)["result"]
    assert put["ttl"] == 600 and put["content"] == got["content"] and put["priority"] == 5
    patched = api.ok("PATCH", P + "/" + made["id"], json=dict(put, ttl=700))["result"]
    assert patched["ttl"] == 700
    res = api.ok("POST", P + "/batch", json={"puts": [dict(patched, ttl=800)],
                                             "patches": [dict(patched, comment="d")]})["result"]
    # (one id patched then put: both answered as the batch left it)
    assert res["patches"] == res["puts"] == [api.get(P + "/" + made["id"])]
    assert res["puts"][0]["ttl"] == 800
    # "priority": null, as clients send it for a type without one, is
    # no priority (it was refused: 400)
    a = api.ok("POST", P, json={"type": "A", "name": "wba", "content": "192.0.2.4",
                                "priority": None})["result"]
    a_got = api.get(P + "/" + a["id"])
    put = api.ok("PUT", P + "/" + a["id"], json=dict(a_got, ttl=900, priority=None))["result"]
    assert put["ttl"] == 900 and put["content"] == "192.0.2.4"
    # a copy posted as a new record: its read-only members are not read
    copy = dict(got, name="wb2." + zone)
    new = api.ok("POST", P, json=copy)["result"]
    assert new["id"] != got["id"] and new["name"] == "wb2." + zone


def test_zone_id_in_a_written_record_is_the_paths(api):
    """A PUT or PATCH whose body names another zone's zone_id was taken
    for the path's zone unsaid (an outside tester's); a POST may copy a
    record read from another zone."""
    zid, zone = new_zone(api)
    oid, other = new_zone(api)
    P = records(zid)
    rec = api.ok("POST", P, json={"type": "A", "name": "zi", "content": "192.0.2.1"})["result"]
    v0 = serial(api, zid)
    for method in ("PUT", "PATCH"):
        body = dict(rec, zone_id=oid, content="192.0.2.2")
        refused(api.call(method, P + "/" + rec["id"], json=body), 400, "zone_id")
    r = api.call("POST", P + "/batch", json={"patches": [{"id": rec["id"], "zone_id": oid,
                                                          "ttl": 60}]})
    refused(r, 400, "patches[0].zone_id")
    assert serial(api, zid) == v0
    copy = api.ok("POST", records(oid), json=dict(rec, name="zi." + other))["result"]
    assert copy["zone_id"] == oid


def test_unknown_members_of_other_bodies_refused(api):
    zid, zone = new_zone(api)
    v0 = serial(api, zid)
    for method, path, body, named in [
        ("POST", "/zones", {"name": "new1.members.test", "nmae": "x"}, "nmae"),
        ("POST", "/zones", {"name": "new1.members.test", "jump_start": True}, "jump_start"),
        ("PATCH", "/zones/%s" % zid, {"default_tll": 60}, "default_tll"),
        ("PATCH", "/zones/%s" % zid, {"soa": {"refersh": 60}}, "soa.refersh"),
        ("POST", "/zones/%s/tsig_keys" % zid, {"name": "k", "grant": ["zone"]}, "grant"),
        ("PUT", "/zones/%s/secondaries" % zid, {"notfy": ["192.0.2.2:53"]}, "notfy"),
        ("PATCH", "/zones/%s/secondaries" % zid, {"allow-transfer": ["192.0.2.0/24"]},
         "allow-transfer"),
        ("PATCH", "/zones/%s/dnssec" % zid, {"status": "disabled", "forse": True}, "forse"),
        ("PATCH", "/zones/%s/dnssec" % zid, {"status": "disabled", "split": "no"}, "split"),
    ]:
        refused(api.call(method, path, json=body), 400, named + ":")
    assert serial(api, zid) == v0
    assert api.get("/zones", params={"name": "new1.members.test"}) == []
    assert api.get("/zones/%s/tsig_keys" % zid) == []
    assert api.get("/zones/%s/secondaries" % zid) == {"notify": [], "allow_transfer": []}
    # Cloudflare's own zone members are taken
    z = api.ok("POST", "/zones", json={"name": "new2.members.test", "jump_start": False,
                                       "type": "full", "account": {"id": "x"}})["result"]
    assert z["name"] == "new2.members.test"


def test_write_naming_no_change_makes_no_version(api):
    zid, zone = new_zone(api)
    P = records(zid)
    rec = api.ok("POST", P, json={"type": "A", "name": "n", "content": "192.0.2.1"})["result"]
    v0 = serial(api, zid)
    body = api.ok("POST", P + "/batch", json={})
    assert body["result"] == {"deletes": [], "patches": [], "puts": [], "posts": []}
    assert body["zone_version"] == v0
    body = api.ok("PATCH", P + "/" + rec["id"], json={})
    assert body["zone_version"] == v0 and body["result"] == api.get(P + "/" + rec["id"])
    assert body["result"]["modified_on"] == rec["modified_on"]
    body = api.ok("PATCH", P + "/" + rec["id"], json={"id": rec["id"], "proxied": False,
                                                     "modified_on": "x"})
    assert body["zone_version"] == v0
    body = api.ok("POST", P + "/batch", json={"patches": [{"id": rec["id"]}]})
    assert body["zone_version"] == v0 and body["result"]["patches"][0] == rec
    body = api.ok("PATCH", "/zones/%s" % zid, json={})
    assert body["zone_version"] == v0 and serial(api, zid) == v0
    # a no-change PATCH still checks the record and the conditions
    refused(api.call("PATCH", P + "/" + "e" * 32, json={}), 404, "")
    refused(api.call("PATCH", P + "/" + rec["id"], json={}, headers={"If-Match": '"x"'}),
            412, "If-Match")
    # a change makes one
    body = api.ok("PATCH", P + "/" + rec["id"], json={"ttl": 60})
    assert body["zone_version"] == v0 + 1


# ------------------------------------------------------------ 3. data

def test_data_beside_content_must_agree(api):
    zid, zone = new_zone(api)
    P = records(zid)
    v0 = serial(api, zid)
    refused(api.call("POST", P, json={
        "type": "SRV", "name": "_z._tcp", "content": "2 3 t.example.test", "priority": 1,
        "data": {"priority": 9, "weight": 9, "port": 9, "target": "other.example.test"}}),
        400, "priority:")
    refused(api.call("POST", P, json={
        "type": "SRV", "name": "_z._tcp", "content": "2 3 t.example.test", "priority": 1,
        "data": {"priority": 1, "weight": 9, "port": 9, "target": "other.example.test"}}),
        400, "data:")
    refused(api.call("POST", P, json={
        "type": "SRV", "name": "_z._tcp", "content": "2 3 t.example.test",
        "data": {"weight": 2, "port": 3, "target": "t.example.test"}}),
        400, "data.priority:")
    refused(api.call("POST", P, json={
        "type": "SRV", "name": "_z._tcp", "priority": 1,
        "data": {"priority": 9, "weight": 9, "port": 9, "target": "o.example.test"}}),
        400, "priority:")
    refused(api.call("POST", P, json={
        "type": "CAA", "name": "c", "content": '0 issue "ca.example"',
        "data": {"flags": 0, "tag": "issue", "value": "other.example"}}), 400, "data:")
    refused(api.call("POST", P, json={
        "type": "A", "name": "a", "content": "192.0.2.1", "data": {"x": 1}}), 400, "data:")
    refused(api.call("POST", P, json={
        "type": "SRV", "name": "_y._tcp", "data": {"weight": 1, "port": 2, "target": "t.test",
                                                   "priority": 3, "service": "_y"}}),
        400, "data: service, proto and name")
    assert serial(api, zid) == v0
    # agreeing: taken; data alone: read
    r = api.ok("POST", P, json={
        "type": "SRV", "name": "_z._tcp", "content": "2 3 T.example.test", "priority": 1,
        "data": {"priority": 1, "weight": 2, "port": 3, "target": "t.example.test"}})["result"]
    assert (r["priority"], r["content"]) == (1, "2 3 T.example.test")
    r = api.ok("POST", P, json={"type": "SRV", "name": "_w._tcp", "priority": 7,
                                "data": {"weight": 8, "port": 9, "target": "w.example.test"}})
    assert (r["result"]["priority"], r["result"]["content"]) == (7, "8 9 w.example.test")
    r = api.ok("POST", P, json={"type": "CAA", "name": "c",
                                "data": {"flags": 0, "tag": "issue", "value": 'ca;"x"'}})
    assert r["result"]["content"] == '0 issue "ca;\\"x\\""'
    # a PATCH's data replaces the stored content; beside a content, must agree
    rid = r["result"]["id"]
    r = api.ok("PATCH", P + "/" + rid, json={"data": {"flags": 128, "tag": "issue",
                                                      "value": "b.example"}})
    assert r["result"]["content"] == '128 issue "b.example"'
    refused(api.call("PATCH", P + "/" + rid, json={
        "content": '0 issue "b.example"', "data": {"flags": 128, "tag": "issue",
                                                   "value": "b.example"}}), 400, "data:")


def test_srv_data_may_name_its_owner(api):
    """Cloudflare's older SRV data names the owner too (service, proto,
    name), and octoDNS sends it: it was refused as unknown members. The
    three make the owner; a name beside them must be the same one."""
    zid, zone = new_zone(api)
    P = records(zid)
    srv = {"priority": 10, "weight": 20, "port": 5060, "target": "sip.example.test"}
    # octoDNS: name the FQDN, data.name the zone (or a subdomain, relative)
    r = api.ok("POST", P, json={"type": "SRV", "name": "_sip._tcp." + zone, "ttl": 300,
                                "data": dict(srv, service="_sip", proto="_tcp", name=zone)})
    assert (r["result"]["name"], r["result"]["content"], r["result"]["priority"]) == \
        ("_sip._tcp." + zone, "20 5060 sip.example.test", 10)
    r = api.ok("POST", P, json={"type": "SRV",
                                "data": dict(srv, service="_xmpp", proto="_udp", name="sub")})
    assert r["result"]["name"] == "_xmpp._udp.sub." + zone
    r = api.ok("POST", P, json={"type": "SRV",
                                "data": dict(srv, service="_a", proto="_tcp", name="@")})
    assert r["result"]["name"] == "_a._tcp." + zone
    rid = r["result"]["id"]
    v0 = serial(api, zid)
    for body, starts in (
            ({"name": "_other._tcp", "data": dict(srv, service="_sip", proto="_tcp",
                                                  name=zone)}, "name: disagrees"),
            ({"data": dict(srv, service="_sip", proto="_tcp")}, "data: service, proto"),
            ({"data": dict(srv, service="a.b", proto="_tcp", name="@")}, "data.service:"),
            ({"data": dict(srv, service="", proto="_tcp", name="@")}, "data.service:"),
            ({"data": dict(srv, service="_s", proto=6, name="@")}, "data.proto:"),
            ({"data": dict(srv, service="_s", proto="_tcp", name="elsewhere.example.")},
             "data.name:"),
            ({"data": dict(srv, service="_s", proto="_tcp", name="")}, "data.name:"),
    ):
        refused(api.call("POST", P, json=dict(body, type="SRV")), 400, starts)
    assert serial(api, zid) == v0
    # a PATCH may move the record by its data
    r = api.ok("PATCH", P + "/" + rid, json={"data": dict(srv, service="_b", proto="_tcp",
                                                          name=zone)})
    assert r["result"]["name"] == "_b._tcp." + zone


def test_records_carry_their_data(api):
    """Records of the types with a Cloudflare data form came back with
    content only: clients that read data (the TypeScript SDK's types carry
    it) saw it missing and a change to apply every run. Each read has its
    data now, and the data alone writes the same record."""
    zid, zone = new_zone(api)
    P = records(zid)
    cases = [
        ({"type": "SRV", "name": "_s._tcp", "content": "10 5060 sip.x.test", "priority": 5},
         {"priority": 5, "weight": 10, "port": 5060, "target": "sip.x.test"}),
        ({"type": "CAA", "name": "c", "content": '0 iodef "mailto:a\\"b@c"'},
         {"flags": 0, "tag": "iodef", "value": 'mailto:a"b@c'}),
        ({"type": "URI", "name": "_u._tcp", "content": '1 "https://x/"', "priority": 10},
         {"priority": 10, "weight": 1, "target": "https://x/"}),
        ({"type": "NAPTR", "name": "n", "content": '100 10 "S" "SIP+D2U" "!^.*$!sip:x@y!" .'},
         {"order": 100, "preference": 10, "flags": "S", "service": "SIP+D2U",
          "regex": "!^.*$!sip:x@y!", "replacement": "."}),
        ({"type": "DS", "name": "sub", "content": "60485 5 1 " + "2b" * 20},
         {"key_tag": 60485, "algorithm": 5, "digest_type": 1, "digest": "2B" * 20}),
        ({"type": "HTTPS", "name": "h", "content": "1 svc.x.test"},
         {"priority": 1, "target": "svc.x.test", "value": ""}),
        # LOC's data (Cloudflare's lat_/long_ fields) was refused
        ({"type": "LOC", "name": "l", "content": "52 22 23.5 N 4 53 32 E -2.5m 1m 10000m 10m"},
         {"lat_degrees": 52, "lat_minutes": 22, "lat_seconds": 23.5, "lat_direction": "N",
          "long_degrees": 4, "long_minutes": 53, "long_seconds": 32, "long_direction": "E",
          "altitude": -2.5, "size": 1, "precision_horz": 10000, "precision_vert": 10}),
    ]
    for body, data in cases:
        rec = api.ok("POST", P, json=body)["result"]
        assert rec.get("data") == data, (body, rec)
        got = api.get(P + "/" + rec["id"])
        assert got["data"] == data, got
        listed = [r for r in api.get(P, params={"type": body["type"]}) if r["id"] == rec["id"]]
        assert listed and listed[0]["data"] == data, listed
        again = {"type": body["type"], "name": body["name"] + "-d", "data": got["data"]}
        if "priority" in got:
            again["priority"] = got["priority"]
        made = api.ok("POST", P, json=again)["result"]
        assert made["content"] == got["content"], (made, got)
    # an MX without a priority names what is missing (it said "content:
    # invalid number")
    refused(api.call("POST", P, json={"type": "MX", "name": "mx", "content": "mail.x.test"}),
            400, "priority: required for MX")
    assert api.ok("POST", P, json={"type": "MX", "name": "mx", "content": "10 mail.x.test"})
    for body in ({"type": "SRV", "name": "_s2._tcp", "content": "1 2 x.test"},
                 {"type": "URI", "name": "_u2._tcp", "content": '1 "https://x"'}):
        refused(api.call("POST", P, json=body), 400, "priority: required for")
    # a priority there and bad content: the content's error
    for body in ({"type": "MX", "name": "mx", "content": "10 mail..x.test"},
                 {"type": "SRV", "name": "_s3._tcp", "content": "1 2 99999 t.x.test"},
                 {"type": "SRV", "name": "_s4._tcp",
                  "data": {"priority": 1, "weight": 2, "port": 3, "target": "bad..x"}}):
        msg = refused(api.call("POST", P, json=body), 400, "")
        assert not msg.startswith("priority"), (body, msg)
    # HTTPS and SVCB hold their priority in their content: a top-level one
    # that disagrees went unsaid
    for body in ({"type": "HTTPS", "name": "hp", "content": "1 svc.x.test", "priority": 5},
                 {"type": "HTTPS", "name": "hp", "priority": 5,
                  "data": {"priority": 1, "target": "svc.x.test", "value": ""}},
                 {"type": "SVCB", "name": "sp", "content": "2 svc.x.test", "priority": 3}):
        refused(api.call("POST", P, json=body), 400, "priority: disagrees")
    assert api.ok("POST", P, json={"type": "HTTPS", "name": "hp", "content": "1 svc.x.test",
                                   "priority": 1})
    # types without a data form have none
    rec = api.ok("POST", P, json={"type": "A", "name": "a", "content": "192.0.2.1"})["result"]
    assert "data" not in rec


# ------------------------------------------------------ 4. batch answers

def test_batch_answer_for_an_id_written_twice_is_the_record_as_stored(api):
    """An outside tester read "as they were written" as each op's own
    write. A batch is one version: the state between two of its ops was
    never served, so every op on an id is answered with the record as the
    batch left it, as stored (docs/api.md; test_attack_batch_answer)."""
    zid, zone = new_zone(api)
    P = records(zid)
    rid = api.ok("POST", P, json={"type": "A", "name": "br", "content": "192.0.2.1"})["result"]["id"]
    res = api.ok("POST", P + "/batch", json={
        "patches": [{"id": rid, "content": "192.0.2.8"}],
        "puts": [{"id": rid, "type": "A", "name": "br", "content": "192.0.2.9"}]})["result"]
    stored = api.get(P + "/" + rid)
    assert res["patches"] == [stored] and res["puts"] == [stored], res
    assert stored["content"] == "192.0.2.9"
    res = api.ok("POST", P + "/batch", json={"patches": [{"id": rid, "ttl": 60},
                                                         {"id": rid, "ttl": 120}]})["result"]
    assert [x["ttl"] for x in res["patches"]] == [120, 120]
    assert api.get(P + "/" + rid) == res["patches"][1]


# ------------------------------------------------------ 5. If-None-Match

def test_if_none_match_on_writes(api):
    zid, zone = new_zone(api)
    P = records(zid)
    rid = api.ok("POST", P, json={"type": "A", "name": "inm", "content": "192.0.2.1"})["result"]["id"]
    r = api.call("GET", P + "/" + rid)
    etag = r.headers["ETag"]
    v0 = serial(api, zid)
    for method, body, value in [
        ("PATCH", {"ttl": 700}, "*"),
        ("PUT", {"type": "A", "name": "inm", "content": "192.0.2.2"}, "*"),
        ("DELETE", None, "*"),
        ("PATCH", {"ttl": 700}, etag),
        ("PATCH", {"ttl": 700}, 'W/' + etag),
        ("PATCH", {"ttl": 700}, '"other", ' + etag),
    ]:
        refused(api.call(method, P + "/" + rid, json=body, headers={"If-None-Match": value}),
                412, "If-None-Match")
    refused(api.call("POST", P + "/batch", json={"patches": [{"id": rid, "ttl": 9}]},
                     headers={"If-None-Match": "*"}), 412, "patches[0]: If-None-Match")
    refused(api.call("PATCH", P + "/" + rid, json={"ttl": 9},
                     headers={"If-None-Match": "nope"}), 400, "If-None-Match")
    assert serial(api, zid) == v0
    assert api.get(P + "/" + rid)["ttl"] != 700
    # a tag that is not the record's: the write goes ahead
    r = api.ok("PATCH", P + "/" + rid, json={"ttl": 700}, headers={"If-None-Match": '"other"'})
    assert r["result"]["ttl"] == 700
    # a new record does not exist yet: "*" lets it be made
    api.ok("POST", P, json={"type": "A", "name": "inm2", "content": "192.0.2.3"},
           headers={"If-None-Match": "*"})


# ------------------------------------------------------ 6. empty filters

def test_empty_filters_refused(api):
    zid, zone = new_zone(api)
    P = records(zid)
    api.ok("POST", P, json={"type": "A", "name": "f", "content": "192.0.2.1", "comment": ""})
    for params, named in [({"name": ""}, "name:"), ({"name.exact": ""}, "name.exact:"),
                          ({"name.contains": ""}, "name.contains:"),
                          ({"name.startswith": ""}, "name.startswith:"),
                          ({"content.contains": ""}, "content.contains:"),
                          ({"comment.endswith": ""}, "comment.endswith:"),
                          ({"search": ""}, "search:")]:
        refused(api.call("GET", P, params=params), 400, named)
    refused(api.call("GET", "/zones", params={"name": ""}), 400, "name:")
    # "@" is the apex
    assert {x["type"] for x in api.get(P, params={"name": "@"})} >= {"SOA", "NS"}
