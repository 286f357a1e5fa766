"""Propagation semantics under concurrency and crashes.

- Randomized: several client threads write records (create, update in place,
  rename, retype, delete, small batches) into three zones while another
  thread changes zone settings (full builds). Each thread owns its names, so
  it knows what DNS must answer: now and then it takes the propagation receipt
  of its write (wait) and checks DNS at once. A reader watches that SOA serials
  never go back. Afterwards: per zone the versions are exactly one per write,
  `zonecast verify` finds no difference, the API lists exactly the model and
  DNS answers every name the test ever touched as the model says.
- kill -9: writer threads stream acknowledged writes, the server is killed
  mid-stream (twice, once during zone-settings changes), restarted on the same
  data directory; every acknowledged change is listed and served, serials keep
  growing, `zonecast verify` passes.

Seeded (ZONECAST_SEED, default 1) so that a failure can be replayed.
"""

import os
import random
import threading
import time

import dns.name
import dns.rcode
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import requests

SEED = int(os.environ.get("ZONECAST_SEED", "1"))


# ------------------------------------------------------------------ helpers

def rdata(rtype, content):
    return dns.rdata.from_text(dns.rdataclass.IN, rtype, content, origin=dns.name.root,
                               relativize=False)


def ask(srv, name, rtype):
    for _ in range(3):
        try:
            return srv.query(name, rtype, timeout=0.5)
        except Exception:
            continue
    raise AssertionError("no DNS answer for %s %s" % (name, rtype))


def served(m, name, rtype):
    """(rcode, {rdata}, ttl or None) for (name, rtype) in an answer."""
    qn, rt = dns.name.from_text(name), dns.rdatatype.from_text(rtype)
    rds, ttls = set(), set()
    for rrset in m.answer:
        if rrset.name == qn and rrset.rdtype == rt:
            rds |= set(rrset)
            ttls.add(rrset.ttl)
    return m.rcode(), rds, (ttls.pop() if len(ttls) == 1 else (None if not ttls else ttls))


def expected(model, name, rtype):
    """(rcode, {rdata}, ttl) that DNS must give for (name, rtype), from the model:
    {rid: (name, type, content, ttl)}."""
    at_name = [r for r in model.values() if r[0] == name]
    rds = {rdata(t, c) for (n, t, c, ttl) in at_name if t == rtype}
    ttls = {ttl for (n, t, c, ttl) in at_name if t == rtype}
    if not at_name:
        return dns.rcode.NXDOMAIN, set(), None
    return dns.rcode.NOERROR, rds, (ttls.pop() if rds else None)


def soa_serial(srv, zone):
    m = ask(srv, zone, "SOA")
    for rrset in m.answer:
        if rrset.rdtype == dns.rdatatype.SOA:
            return next(iter(rrset)).serial
    return None


def ttl_for(name):
    """One TTL per owner name, so the RRset TTL rule never surprises the model."""
    return 300 + 60 * (sum(name.encode()) % 5)


class Mismatch(AssertionError):
    pass


def compare_dns(srv, model, names, types=("A", "AAAA", "TXT", "MX")):
    """Every (name, type): DNS gives what the model says; returns the problems."""
    problems = []
    for name in sorted(names):
        for rtype in types:
            want = expected(model, name, rtype)
            got = served(ask(srv, name, rtype), name, rtype)
            if got != want:
                problems.append("%s %s: DNS %s %s ttl=%s, expected %s %s ttl=%s" % (
                    name, rtype, dns.rcode.to_text(got[0]), sorted(r.to_text() for r in got[1]),
                    got[2], dns.rcode.to_text(want[0]), sorted(r.to_text() for r in want[1]),
                    want[2]))
    return problems


def listed_model(api, zid, zone):
    """The API's records of the zone, apex SOA/NS left out: {rid: (name, type, content, ttl)}."""
    out = {}
    for r in api.records(zid):
        if r["name"] == zone and r["type"] in ("SOA", "NS"):
            continue
        content = r["content"]
        if r["type"] == "MX":
            content = "%d %s" % (r["priority"], content)
        out[r["id"]] = (r["name"] + ".", r["type"], rdata(r["type"], content).to_text(), r["ttl"])
    return out


def norm_model(model):
    return {rid: (n, t, rdata(t, c).to_text(), ttl) for rid, (n, t, c, ttl) in model.items()}


def wait_live(api, zid, version, timeout=10):
    r = api.get("/zones/%s/propagation" % zid, params={"version": version, "wait": timeout})
    assert r["live"] is True, "version %d not live: %r" % (version, r)
    return r


# ------------------------------------------------------------------ randomized concurrency

class Writer(threading.Thread):
    """Random record writes on names only this thread uses; checks read-your-writes."""

    def __init__(self, tid, srv, api, zones, ops, rng):
        super().__init__(name="writer-%d" % tid)
        self.tid, self.srv, self.api, self.zones, self.ops, self.rng = tid, srv, api, zones, ops, rng
        self.models = {zid: {} for zid, _ in zones}     # zid -> {rid: (name, type, content, ttl)}
        self.names = {zid: set() for zid, _ in zones}   # every name ever written
        self.versions = {zid: [] for zid, _ in zones}   # zone_version of every acknowledged write
        self.errors = []
        self.checks = 0
        self.counter = 0

    def content(self, rtype):
        self.counter += 1
        c = self.counter
        if rtype == "A":
            return "10.%d.%d.%d" % (self.tid, c // 250 % 250, c % 250 + 1), None
        if rtype == "AAAA":
            return "2001:db8:%x::%x" % (self.tid + 1, c), None
        if rtype == "MX":
            return "mx%d.example" % c, self.rng.randrange(0, 100)
        return '"w%d c%d"' % (self.tid, c), None

    def new_record(self, zone):
        name = "t%d-%d.%s." % (self.tid, self.rng.randrange(12), zone)
        rtype = self.rng.choice(("A", "A", "AAAA", "TXT", "MX"))
        content, prio = self.content(rtype)
        body = {"name": name[:-1], "type": rtype, "content": content, "ttl": ttl_for(name)}
        if prio is not None:
            body["priority"] = prio
        model_content = content if prio is None else "%d %s" % (prio, content)
        return body, (name, rtype, model_content, ttl_for(name))

    def write(self, zid, method, path, body):
        r = self.api.call(method, "/zones/%s%s" % (zid, path), json=body)
        if r.status_code != 200:
            raise Mismatch("%s %s %r -> %d %s" % (method, path, body, r.status_code, r.text[:500]))
        b = r.json()
        self.versions[zid].append(b["zone_version"])
        return b

    def step(self):
        zid, zone = self.rng.choice(self.zones)
        model = self.models[zid]
        roll = self.rng.random()
        touched = set()
        if not model or roll < 0.35:                          # create
            body, rec = self.new_record(zone)
            b = self.write(zid, "POST", "/dns_records", body)
            model[b["result"]["id"]] = rec
            touched.add(rec[0])
        elif roll < 0.55:                                     # update in place (content, same type)
            rid = self.rng.choice(sorted(model))
            name, rtype, _, ttl = model[rid]
            content, prio = self.content(rtype)
            body = {"content": content}
            if prio is not None:
                body["priority"] = prio
            self.write(zid, "PATCH", "/dns_records/" + rid, body)
            model[rid] = (name, rtype, content if prio is None else "%d %s" % (prio, content), ttl)
            touched.add(name)
        elif roll < 0.75:                                     # rename and/or retype (PUT)
            rid = self.rng.choice(sorted(model))
            touched.add(model[rid][0])
            body, rec = self.new_record(zone)
            self.write(zid, "PUT", "/dns_records/" + rid, body)
            model[rid] = rec
            touched.add(rec[0])
        elif roll < 0.92:                                     # delete
            rid = self.rng.choice(sorted(model))
            touched.add(model[rid][0])
            self.write(zid, "DELETE", "/dns_records/" + rid, None)
            del model[rid]
        else:                                                 # batch: delete one, post two
            rid = self.rng.choice(sorted(model))
            touched.add(model[rid][0])
            (b1, r1), (b2, r2) = self.new_record(zone), self.new_record(zone)
            self.write(zid, "POST", "/dns_records/batch",
                       {"deletes": [{"id": rid}], "posts": [b1, b2]})
            del model[rid]
            for r in (r1, r2):
                found = [x for x in self.api.records(zid, name=r[0][:-1], type=r[1])
                         if x["id"] not in model and rdata(x["type"], x["content"] if x["type"] != "MX"
                                                           else "%d %s" % (x["priority"], x["content"]))
                         == rdata(r[1], r[2])]
                if len(found) != 1:
                    raise Mismatch("after batch version %d: looking up %r found %r; all at name: %r"
                                   % (self.versions[zid][-1], r, found,
                                      self.api.records(zid, name=r[0][:-1])))
                model[found[0]["id"]] = r
                touched.add(r[0])
        self.names[zid] |= touched
        # read-your-writes through the receipt, for some writes
        if self.rng.random() < 0.25:
            wait_live(self.api, zid, self.versions[zid][-1])
            problems = compare_dns(self.srv, model, touched)
            self.checks += 1
            if problems:
                raise Mismatch("right after a live receipt for version %d:\n%s"
                               % (self.versions[zid][-1], "\n".join(problems)))

    def run(self):
        try:
            for _ in range(self.ops):
                self.step()
        except Exception as e:   # reported by the test
            self.errors.append("%s: %r" % (self.name, e))


class Settings(threading.Thread):
    """Zone settings changes (full builds) until told to stop."""

    def __init__(self, api, zones, rng, stop):
        super().__init__(name="settings")
        self.api, self.zones, self.rng, self.stop_ev = api, zones, rng, stop
        self.versions = {zid: [] for zid, _ in zones}
        self.last = {}
        self.errors = []
        self.count = 0

    def run(self):
        try:
            while not self.stop_ev.is_set():
                zid, _ = self.rng.choice(self.zones)
                s = {"refresh": self.rng.randrange(600, 9000), "retry": self.rng.randrange(60, 600),
                     "expire": self.rng.randrange(700000, 2000000),
                     "minimum": self.rng.randrange(30, 600), "ttl": self.rng.randrange(60, 3600)}
                body = {"soa": s, "default_ttl": self.rng.randrange(60, 7200)}
                r = self.api.call("PATCH", "/zones/%s" % zid, json=body)
                if r.status_code != 200:
                    raise Mismatch("PATCH zone %r -> %d %s" % (body, r.status_code, r.text))
                self.versions[zid].append(r.json()["zone_version"])
                self.last[zid] = s
                self.count += 1
                time.sleep(self.rng.uniform(0.005, 0.03))
        except Exception as e:
            self.errors.append("settings: %r" % e)


class SerialWatch(threading.Thread):
    """Asks every zone's SOA in a loop; a serial must never go back."""

    def __init__(self, srv, zones, stop):
        super().__init__(name="serial-watch")
        self.srv, self.zones, self.stop_ev = srv, zones, stop
        self.errors, self.samples = [], 0

    def run(self):
        last = {}
        try:
            while not self.stop_ev.is_set():
                for _, zone in self.zones:
                    s = soa_serial(self.srv, zone)
                    if s is None:
                        continue
                    if s < last.get(zone, 0):
                        self.errors.append("%s: serial went back from %d to %d"
                                           % (zone, last[zone], s))
                    last[zone] = max(s, last.get(zone, 0))
                    self.samples += 1
        except Exception as e:
            self.errors.append("serial watch: %r" % e)


def test_randomized_concurrent_writes_and_full_builds(zonecast_api_factory):
    rng = random.Random(SEED)
    srv = zonecast_api_factory()
    api = srv.client()
    zones = []
    for i in range(3):
        name = "rand%d.prop.test" % i
        zones.append((api.ok("POST", "/zones", json={"name": name})["result"]["id"], name))
    for zid, zone in zones:            # bigger zones make full builds take a little time
        api.ok("POST", "/zones/%s/dns_records/import" % zid,
               data="".join("bulk%d 600 IN A 192.0.2.%d\n" % (i, i % 250 + 1) for i in range(5000)))
    base_versions = {zid: api.get("/zones/%s" % zid)["serial"] for zid, _ in zones}
    bulk = {zid: listed_model(api, zid, zone) for zid, zone in zones}

    stop = threading.Event()
    writers = [Writer(t, srv, srv.client(api.token), zones, 200, random.Random(rng.random()))
               for t in range(6)]
    settings = Settings(srv.client(api.token), zones, random.Random(rng.random()), stop)
    watch = SerialWatch(srv, zones, stop)
    t0 = time.monotonic()
    for t in writers + [settings, watch]:
        t.start()
    for t in writers:
        t.join(120)
    stop.set()
    settings.join(30)
    watch.join(30)
    elapsed = time.monotonic() - t0
    errors = [e for t in writers + [settings, watch] for e in t.errors]
    print("randomized: %d record writes, %d settings changes, %d receipt checks, "
          "%d serial samples in %.1fs" % (sum(len(v) for w in writers for v in w.versions.values()),
                                          settings.count, sum(w.checks for w in writers),
                                          watch.samples, elapsed))
    assert not errors, "\n".join(errors)
    assert settings.count >= 5, "too few settings changes interleaved (%d)" % settings.count
    assert sum(w.checks for w in writers) >= 20 and watch.samples > 0

    for zid, zone in zones:
        # one version per acknowledged write, no two writes share one, none skipped
        versions = sorted([v for w in writers for v in w.versions[zid]] + settings.versions[zid])
        assert len(versions) == len(set(versions)), "%s: duplicate versions" % zone
        assert versions == list(range(base_versions[zid] + 1, base_versions[zid] + 1 + len(versions))), \
            "%s: versions are not one per write" % zone
        last = versions[-1]
        assert api.get("/zones/%s" % zid)["serial"] == last
        wait_live(api, zid, last)
        assert soa_serial(srv, zone) == last
    cp = srv.verify()
    assert cp.returncode == 0 and "no differences" in cp.stdout, \
        "zonecast verify (%d):\n%s%s" % (cp.returncode, cp.stdout, cp.stderr)

    problems = []
    for zid, zone in zones:
        model = dict(bulk[zid])
        names = set()
        for w in writers:
            model.update(w.models[zid])
            names |= w.names[zid]
        listed = listed_model(api, zid, zone)
        if listed != norm_model(model):
            extra = set(listed.items()) - set(norm_model(model).items())
            missing = set(norm_model(model).items()) - set(listed.items())
            problems.append("%s: API lists %d records, model %d; extra %s; missing %s"
                            % (zone, len(listed), len(model), sorted(extra)[:10],
                               sorted(missing)[:10]))
        problems += compare_dns(srv, model, names)
        sample = random.Random(SEED).sample(sorted(n for n, *_ in bulk[zid].values()), 20)
        problems += compare_dns(srv, model, sample, types=("A",))
        # the last settings change is what DNS serves
        if zid in settings.last:
            s = settings.last[zid]
            m = ask(srv, zone, "SOA")
            (rrset,) = [r for r in m.answer if r.rdtype == dns.rdatatype.SOA]
            soa = next(iter(rrset))
            if (soa.refresh, soa.retry, soa.expire, soa.minimum, rrset.ttl) != \
                    (s["refresh"], s["retry"], s["expire"], s["minimum"], s["ttl"]):
                problems.append("%s: SOA %s ttl %d, last PATCH %r" % (zone, soa, rrset.ttl, s))
    assert not problems, "\n".join(problems[:50])
    assert elapsed < 40, "the randomized run took %.1fs" % elapsed


# ------------------------------------------------------------------ kill -9

class Streamer(threading.Thread):
    """Writes until the server goes away; remembers what was acknowledged."""

    def __init__(self, tid, api, zid, zone, rng, settings=False):
        super().__init__(name="streamer-%d" % tid)
        self.tid, self.api, self.zid, self.zone, self.rng = tid, api, zid, zone, rng
        self.settings = settings
        self.model = {}             # acknowledged: rid -> (name, type, content, ttl)
        self.pending = None         # the one request in flight when the server died
        self.max_version = 0
        self.acked = 0
        self.last_soa = None
        self.errors = []
        self.n = 0

    def run(self):
        try:
            while True:
                self.n += 1
                if self.settings:
                    s = {"refresh": 1000 + self.n, "retry": 100 + self.n % 50}
                    req = ("PATCH", "/zones/%s" % self.zid, {"soa": s}, ("soa", s))
                elif self.model and self.rng.random() < 0.3:
                    rid = self.rng.choice(sorted(self.model))
                    name, rtype, _, ttl = self.model[rid]
                    content = "10.%d.%d.%d" % (self.tid, self.n // 250 % 250, self.n % 250)
                    req = ("PATCH", "/zones/%s/dns_records/%s" % (self.zid, rid),
                           {"content": content}, ("update", rid, (name, "A", content, ttl)))
                else:
                    name = "k%d-%d.%s." % (self.tid, self.n, self.zone)
                    content = "10.%d.%d.%d" % (self.tid, self.n // 250 % 250, self.n % 250)
                    req = ("POST", "/zones/%s/dns_records" % self.zid,
                           {"name": name[:-1], "type": "A", "content": content, "ttl": 300},
                           ("create", (name, "A", content, 300)))
                self.pending = req
                try:
                    r = self.api.call(req[0], req[1], json=req[2], timeout=5)
                except requests.RequestException:
                    return                      # the server is gone: req may or may not be in
                if r.status_code != 200:
                    self.errors.append("%s %s -> %d %s" % (req[0], req[1], r.status_code, r.text))
                    return
                b = r.json()
                kind = req[3]
                if kind[0] == "create":
                    self.model[b["result"]["id"]] = kind[1]
                elif kind[0] == "update":
                    self.model[kind[1]] = kind[2]
                else:
                    self.last_soa = kind[1]
                self.pending = None
                self.max_version = max(self.max_version, b["zone_version"])
                self.acked += 1
        except Exception as e:
            self.errors.append("%s: %r" % (self.name, e))


def test_kill9_mid_stream_keeps_every_acknowledged_write(zonecast_api_factory):
    rng = random.Random(SEED + 9)
    srv = zonecast_api_factory()
    token = srv.create_token()
    api = srv.client(token)
    zones = []
    for i in range(2):
        name = "kill%d.prop.test" % i
        zones.append((api.ok("POST", "/zones", json={"name": name})["result"]["id"], name))
    models = {zid: {} for zid, _ in zones}
    last_soa = {}
    max_version = {zid: 0 for zid, _ in zones}
    for round_ in range(3):
        streamers = []
        for t in range(4):
            zid, zone = zones[t % 2]
            streamers.append(Streamer(round_ * 10 + t, srv.client(token), zid, zone,
                                      random.Random(rng.random())))
        if round_ >= 1:                    # later kills land among full builds
            streamers.append(Streamer(99, srv.client(token), zones[0][0], zones[0][1],
                                      random.Random(rng.random()), settings=True))
        for s in streamers:
            s.start()
        deadline = time.monotonic() + 5
        while sum(s.acked for s in streamers) < 150 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(rng.uniform(0, 0.05))
        srv.kill9()
        for s in streamers:
            s.join(10)
            assert not s.is_alive()
        errors = [e for s in streamers for e in s.errors]
        assert not errors, "\n".join(errors)
        acked = sum(s.acked for s in streamers)
        print("kill round %d: %d writes acknowledged, %d in flight" % (
            round_, acked, sum(1 for s in streamers if s.pending)))
        assert acked >= 50, "only %d writes acknowledged before the kill" % acked
        for s in streamers:
            max_version[s.zid] = max(max_version[s.zid], s.max_version)
            if s.settings:
                if s.last_soa:
                    last_soa[s.zid] = (s.last_soa, s.pending)
                continue
            models[s.zid].update(s.model)
        srv.restart()
        api = srv.client(token)
        problems = []
        for zid, zone in zones:
            z = api.get("/zones/%s" % zid)
            assert z["serial"] >= max_version[zid], "%s: serial %d < acknowledged version %d" % (
                zone, z["serial"], max_version[zid])
            wait_live(api, zid, z["serial"])
            listed = listed_model(api, zid, zone)
            want = norm_model(models[zid])
            # in flight at the kill: may or may not have been committed
            maybe_updates, maybe_creates = {}, []
            for s in streamers:
                if s.zid == zid and s.pending and not s.settings:
                    kind = s.pending[3]
                    if kind[0] == "create":
                        maybe_creates.append(kind[1])
                    else:
                        maybe_updates[kind[1]] = kind[2]
            for rid, rec in want.items():
                got = listed.get(rid)
                if got == rec:
                    continue
                if rid in maybe_updates and got == norm_model({rid: maybe_updates[rid]})[rid]:
                    models[zid][rid] = maybe_updates[rid]    # committed, not acknowledged
                    continue
                problems.append("%s: acknowledged %s %r, listed %r" % (zone, rid, rec, got))
            for rid in set(listed) - set(want):
                rec = listed[rid]
                pend = [m for m in maybe_creates if norm_model({"x": m})["x"] == rec]
                if pend:
                    models[zid][rid] = pend[0]               # committed, not acknowledged
                else:
                    problems.append("%s: listed but never written: %s %r" % (zone, rid, rec))
            names = {rec[0] for rec in models[zid].values()}
            problems += compare_dns(srv, models[zid], names, types=("A",))
            if zid in last_soa:
                (s_ack, pending) = last_soa[zid]
                m = ask(srv, zone, "SOA")
                soa = next(iter([r for r in m.answer if r.rdtype == dns.rdatatype.SOA][0]))
                got = (soa.refresh, soa.retry)
                ok = [(s_ack["refresh"], s_ack["retry"])]
                if pending:
                    ok.append((pending[2]["soa"]["refresh"], pending[2]["soa"]["retry"]))
                if got not in ok:
                    problems.append("%s: SOA refresh/retry %r, acknowledged %r" % (zone, got, ok))
        assert not problems, "round %d:\n%s" % (round_, "\n".join(problems[:40]))
        cp = srv.verify()
        assert cp.returncode == 0 and "no differences" in cp.stdout, \
            "zonecast verify after restart (%d):\n%s%s" % (cp.returncode, cp.stdout, cp.stderr)
        # serials keep growing after the restart
        for zid, zone in zones:
            b = api.ok("POST", "/zones/%s/dns_records" % zid,
                       json={"name": "after%d.%s" % (round_, zone), "type": "TXT", "content": '"x"'})
            assert b["zone_version"] > max_version[zid]
            max_version[zid] = b["zone_version"]
            # written without a TTL: "automatic", read back as 1 (docs/api.md)
            models[zid][b["result"]["id"]] = ("after%d.%s." % (round_, zone), "TXT", '"x"', 1)
            wait_live(api, zid, b["zone_version"])
            assert soa_serial(srv, zone) == b["zone_version"]
