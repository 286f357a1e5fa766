"""SIGKILL during mixed writers, 20 times: API requests and RFC 2136 UPDATEs
into one zone (issue 6: "under a steady stream of API writes and UPDATEs,
kill zonecast with SIGKILL at random moments and restart it").

Two API threads (single POSTs, batches, PATCH, PUT with renames, DELETE) and
two UPDATE threads (adds, replaces, deletes, two-name adds; dnspython over
TCP) write into the same zone, so their changes share group commits. Each
thread owns its names and keeps a model of what it was told: an API write
counts when answered 2xx, an UPDATE when answered NOERROR; a name holds one
A record or nothing. At a random moment the server is killed with SIGKILL
and restarted on the same data directory. The request each thread had in
flight may or may not have committed; after the restart the records store
decides which, and it must be one of the two. Then:

- the records store (the API's listing) holds exactly every thread's model:
  acknowledged adds and changes are there, acknowledged deletes are gone;
- DNS answers every name the model knows as the model says (NXDOMAIN for
  deleted ones), straight after the restart (the builder caught up from the
  change log before answering);
- the SOA serial covers every acknowledged write (one version each, and at
  least the highest zone_version the API returned), and the API and DNS
  agree on it;
- `zonecast verify` finds no difference between the stores.

Seeded (ZONECAST_SEED) so that a failure can be replayed.
"""

import os
import random
import socket
import struct
import threading
import time

import dns.message
import dns.rcode
import dns.rdatatype
import dns.update
import requests

import servers

ZONE = "mixed.crash.test"
ROUNDS = 20
SEED = int(os.environ.get("ZONECAST_SEED", "20261203"))


# ------------------------------------------------------------------ actors

class Actor:
    """One writer's model, kept across rounds: name -> A content or None
    (deleted), and the write in flight at the kill (name -> state it sets)."""

    def __init__(self, tag, number, rng):
        self.tag, self.number, self.rng = tag, number, rng
        self.model = {}
        self.pending = {}
        self.acked = 0
        self.round_acked = 0
        self.counter = 0
        self.errors = []

    def new_name(self):
        self.counter += 1
        return "%s-%d.%s" % (self.tag, self.counter, ZONE)

    def content(self):
        self.counter += 1
        c = self.counter
        return "10.%d.%d.%d" % (self.number, c // 250 % 250, c % 250 + 1)

    def live(self):
        return sorted(n for n, c in self.model.items() if c is not None)

    def ack(self, changes):
        self.model.update(changes)
        self.pending = {}
        self.acked += 1
        self.round_acked += 1


class ApiActor(Actor):
    """Writes through the HTTP API; knows record ids by name."""

    def __init__(self, tag, number, rng, client, zid):
        super().__init__(tag, number, rng)
        self.client, self.zid = client, zid
        self.ids = {}
        self.max_version = 0

    def request(self, method, path, body, changes):
        """True when acknowledged; False when the server went away."""
        self.pending = changes
        try:
            r = self.client.call(method, "/zones/%s/dns_records%s" % (self.zid, path),
                                 json=body, timeout=10)
        except requests.RequestException:
            return None                 # killed: the write is in flight
        if not 200 <= r.status_code < 300:
            self.errors.append("%s %s %r -> HTTP %d %s" % (method, path, body, r.status_code,
                                                        r.text[:300]))
            return None
        b = r.json()
        self.max_version = max(self.max_version, b["zone_version"])
        self.ack(changes)
        return b

    def post(self):
        name, content = self.new_name(), self.content()
        b = self.request("POST", "", {"name": name, "type": "A", "content": content},
                         {name: content})
        if b is not None:
            self.ids[name] = b["result"]["id"]
        return b

    def batch(self):
        live = [n for n in self.live() if n in self.ids]
        posts = [(self.new_name(), self.content()) for _ in range(3)]
        body = {"posts": [{"name": n, "type": "A", "content": c} for n, c in posts]}
        changes = dict(posts)
        if len(live) >= 2:
            gone, patched = self.rng.sample(live, 2)
            body["deletes"] = [{"id": self.ids[gone]}]
            changes[gone] = None
            changes[patched] = self.content()
            body["patches"] = [{"id": self.ids[patched], "content": changes[patched]}]
        # batch results carry no ids: learnt from the listing after a restart
        return self.request("POST", "/batch", body, changes)

    def change(self):
        live = [n for n in self.live() if n in self.ids]
        if not live:
            return self.post()
        name = self.rng.choice(live)
        rid, roll = self.ids[name], self.rng.random()
        if roll < 0.35:                                     # PATCH the content
            content = self.content()
            return self.request("PATCH", "/" + rid, {"content": content}, {name: content})
        if roll < 0.65:                                     # PUT: rename, new content
            new, content = self.new_name(), self.content()
            b = self.request("PUT", "/" + rid, {"name": new, "type": "A", "content": content},
                             {name: None, new: content})
            if b is not None:
                self.ids[new] = self.ids.pop(name)
            return b
        b = self.request("DELETE", "/" + rid, None, {name: None})
        if b is not None:
            del self.ids[name]
        return b

    def step(self):
        roll = self.rng.random()
        if roll < 0.4:
            return self.post()
        if roll < 0.55:
            return self.batch()
        return self.change()


class UpdateActor(Actor):
    """Sends RFC 2136 UPDATEs over one TCP connection."""

    def __init__(self, tag, number, rng, port):
        super().__init__(tag, number, rng)
        self.port = port
        self.sock = None

    def message(self):
        """(UpdateMessage, changes) for the next step."""
        u = dns.update.UpdateMessage(ZONE + ".")
        live, roll = self.live(), self.rng.random()
        if live and roll < 0.2:                             # delete the name
            name = self.rng.choice(live)
            u.delete(name + ".")
            return u, {name: None}
        if live and roll < 0.4:                             # replace the A RRset
            name, content = self.rng.choice(live), self.content()
            u.delete(name + ".", "A")
            u.add(name + ".", 300, "A", content)
            return u, {name: content}
        names = [self.new_name() for _ in range(2 if roll > 0.9 else 1)]
        changes = {}
        for name in names:
            changes[name] = self.content()
            u.add(name + ".", 300, "A", changes[name])
        return u, changes

    def exchange(self, u):
        """The response, or None when the server went away."""
        wire = u.to_wire()
        self.sock.sendall(struct.pack("!H", len(wire)) + wire)
        head = self.sock.recv(2, socket.MSG_WAITALL)
        if len(head) < 2:
            return None
        (n,) = struct.unpack("!H", head)
        body = self.sock.recv(n, socket.MSG_WAITALL)
        return dns.message.from_wire(body) if len(body) == n else None

    def step(self):
        u, changes = self.message()
        self.pending = changes
        try:
            r = self.exchange(u)
        except (OSError, ConnectionError):
            return None
        if r is None:
            return None
        if r.id != u.id or r.rcode() != dns.rcode.NOERROR:
            self.errors.append("UPDATE %r: id %d/%d rcode %s" % (
                changes, r.id, u.id, dns.rcode.to_text(r.rcode())))
            return None
        self.ack(changes)
        return r

    def connect(self):
        try:
            self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=10)
            return True
        except OSError:
            return False


def stream(actor):
    """Thread body: steps until one is not acknowledged (the kill)."""
    try:
        if isinstance(actor, UpdateActor) and not actor.connect():
            return
        while actor.step() is not None:
            pass
    except Exception as e:          # reported by the test
        actor.errors.append("%s: %r" % (actor.tag, e))
    finally:
        if isinstance(actor, UpdateActor) and actor.sock is not None:
            actor.sock.close()
            actor.sock = None


# ------------------------------------------------------------------ checks

def listing(client, zid):
    """name -> (content, id) of every A record in the records store."""
    out = {}
    for r in client.records(zid, type="A"):
        assert r["name"] not in out, "two A records at %s" % r["name"]
        out[r["name"]] = (r["content"], r["id"])
    return out


def settle_pending(actor, listed):
    """The write in flight at the kill: committed or not, never half or
    other; the model takes what the store says. Returns problems."""
    problems = []
    states = {n: listed.get(n, (None,))[0] for n in actor.pending}
    before = {n: actor.model.get(n) for n in actor.pending}
    if states != before and states != actor.pending:
        problems.append("%s: in-flight write %r half applied: store has %r, before %r"
                        % (actor.tag, actor.pending, states, before))
    if states == actor.pending and states != before:
        actor.model.update(states)
    actor.pending = {}
    return problems


def store_problems(actor, listed):
    problems = []
    for name, content in sorted(actor.model.items()):
        got = listed.get(name, (None,))[0]
        if got != content:
            what = "deleted" if content is None else content
            problems.append("%s: acknowledged %s %s, records store has %s"
                            % (actor.tag, name, what, got))
    return problems


def dns_problems(actors, port):
    names = sorted({n for a in actors for n in a.model})
    got, lost = servers.query_many(port, [n + "." for n in names])
    got = {n[:-1]: v for n, v in got.items()}
    problems = ["DNS: no answer for %s" % n for n in lost[:5]]
    for a in actors:
        for name, content in sorted(a.model.items()):
            if name not in got:
                continue
            want = (dns.rcode.NXDOMAIN, set()) if content is None else \
                (dns.rcode.NOERROR, {content})
            if got[name] != want:
                problems.append("%s: DNS answers %s %s %s, acknowledged %s" % (
                    a.tag, name, dns.rcode.to_text(got[name][0]), sorted(got[name][1]),
                    "deleted" if content is None else content))
    return problems


def soa_serial(srv, timeout=10.0):
    """The served serial; waits for the zone to be served at all (a zone
    the API acknowledged is built a moment later)."""
    deadline = time.monotonic() + timeout
    while True:
        r = srv.query(ZONE + ".", "SOA", timeout=2.0)
        if r.answer:
            return r.answer[0][0].serial
        assert time.monotonic() < deadline, "zone %s not served" % ZONE
        time.sleep(0.02)


# ------------------------------------------------------------------ test

def run_round(srv, rng, actors):
    """Streams until each actor has an acknowledged write, a random while
    more, then SIGKILL; returns the seconds streamed."""
    for a in actors:
        a.round_acked = 0
    threads = [threading.Thread(target=stream, args=(a,), daemon=True) for a in actors]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    deadline = t0 + 20
    while (min(a.round_acked for a in actors) < 1 and time.monotonic() < deadline
           and all(t.is_alive() for t in threads)):
        time.sleep(0.005)
    time.sleep(rng.uniform(0.0, 0.3))
    srv.kill9()
    for t in threads:
        t.join(15)
        assert not t.is_alive(), "a writer did not notice the kill"
    errors = [e for a in actors for e in a.errors]
    assert not errors, "\n".join(errors)
    assert min(a.round_acked for a in actors) >= 1, \
        "an actor had nothing acknowledged: %r" % [(a.tag, a.round_acked) for a in actors]
    return time.monotonic() - t0


def check_after_restart(srv, client, zid, actors, start_serial, round_):
    listed = listing(client, zid)
    problems = []
    for a in actors:
        problems += settle_pending(a, listed)
        problems += store_problems(a, listed)
        if isinstance(a, ApiActor):     # batch posts: ids from the store
            a.ids = {n: listed[n][1] for n in a.live()}
    problems += dns_problems(actors, srv.port)
    serial = soa_serial(srv)
    acked = sum(a.acked for a in actors)
    top = max(a.max_version for a in actors if isinstance(a, ApiActor))
    if (serial - start_serial) % 2**32 < acked:
        problems.append("serial %d - %d < %d acknowledged writes" % (serial, start_serial, acked))
    if (serial - top) % 2**32 >= 2**31:
        problems.append("serial %d older than acknowledged zone_version %d" % (serial, top))
    z = client.get("/zones/%s" % zid)
    if z["serial"] != serial:
        problems.append("records store serial %d, DNS serves %d" % (z["serial"], serial))
    assert not problems, "round %d:\n%s" % (round_, "\n".join(problems[:40]))
    cp = srv.verify()
    assert cp.returncode == 0 and "no differences" in cp.stdout, \
        "round %d: zonecast verify (%d):\n%s%s" % (round_, cp.returncode, cp.stdout, cp.stderr)
    return serial


def test_sigkill_during_api_writes_and_updates(zonecast_api_factory):
    rng = random.Random(SEED)
    t_start = time.monotonic()
    srv = zonecast_api_factory(options=[("allow-update", "127.0.0.1")])
    token = srv.create_token()
    client = srv.client(token)
    zid = client.ok("POST", "/zones", json={"name": ZONE})["result"]["id"]
    start_serial = soa_serial(srv)
    actors = [ApiActor("api%d" % i, i, random.Random(rng.random()), srv.client(token), zid)
              for i in range(2)]
    actors += [UpdateActor("upd%d" % i, 10 + i, random.Random(rng.random()), srv.port)
               for i in range(2)]
    streamed = 0.0
    for round_ in range(ROUNDS):
        streamed += run_round(srv, rng, actors)
        srv.restart()
        for a in actors:
            if isinstance(a, ApiActor):
                a.client = srv.client(token)
        serial = check_after_restart(srv, client, zid, actors, start_serial, round_)
        client = srv.client(token)
    deletes = sum(1 for a in actors for c in a.model.values() if c is None)
    print("%d kills in %.1fs (%.1fs streaming); acknowledged: %s; %d names, %d deleted; "
          "serial %d -> %d" % (ROUNDS, time.monotonic() - t_start, streamed,
                               ", ".join("%s %d" % (a.tag, a.acked) for a in actors),
                               sum(len(a.model) for a in actors), deletes, start_serial, serial))
