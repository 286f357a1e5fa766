"""What the TSIG attack tests (test_attack_tsig_cache*.py) share: a zone
made through the API with its keys (Zone), an UPDATE's answer read without
validating its TSIG (Answer), and one message sent over TCP or UDP (send).
"""

import dns.rcode

import servers
from servers import exchange_from, split_tsig, tsig_mac_valid

WAIT = 10.0 * servers.TIMEOUT_SCALE
NOERROR = dns.rcode.NOERROR


class Zone:
    """A zone made through srv's API (its client `api`), once made served
    by srv or by each of `nodes`."""

    def __init__(self, srv, api, name, nodes=None):
        self.srv, self.api = srv, api
        self.nodes = nodes or (srv,)
        self.name = name
        self.origin = self.name + "."
        self.create()

    def create(self):
        self.id = self.api.ok("POST", "/zones", json={"name": self.name})["result"]["id"]
        for n in self.nodes:
            servers.wait_for("%s served" % self.name, lambda: self.soa_rcode(n) == NOERROR,
                             timeout=WAIT, step=0.01)

    def delete(self):
        self.api.ok("DELETE", "/zones/%s" % self.id)

    def soa_rcode(self, node=None):
        try:
            return (node or self.srv).query(self.origin, "SOA", timeout=0.5).rcode()
        except Exception:   # noqa: BLE001 - not served yet
            return None

    def soa_serial(self):
        m = self.srv.query(self.origin, "SOA", tcp=True, timeout=2.0)
        return m.answer[0][0].serial

    def n(self, label):
        return "%s.%s" % (label, self.origin)

    def records(self):
        return self.api.records(self.id)

    def stored(self):
        """Owner names (no final dot) the store has, read through the API."""
        return {r["name"] for r in self.records()}

    def key(self, name, algorithm=None, grants=None):
        """A key of this zone made through the API: (id, TsigKey)."""
        body = {"name": name}
        if algorithm:
            body["algorithm"] = algorithm
        if grants is not None:
            body["grants"] = grants
        res = self.api.ok("POST", "/zones/%s/tsig_keys" % self.id, json=body)["result"]
        return res["id"], servers.TsigKey(res["name"], res["algorithm"], res["secret"])

    def delete_key(self, kid):
        self.api.ok("DELETE", "/zones/%s/tsig_keys/%s" % (self.id, kid))


class Answer:
    """An answer's rcode, TSIG error and MAC (None without a TSIG RR)."""

    def __init__(self, wire, request_mac=None):
        self.wire = wire
        msg, owner, rd, _ = split_tsig(wire)
        self.msg = msg
        self.id = msg.id
        self.rcode = msg.rcode()
        self.owner = owner
        self.error = rd.error if rd is not None else None
        self.mac = rd.mac if rd is not None else None
        self.request_mac = request_mac

    @property
    def outcome(self):
        return (dns.rcode.to_text(self.rcode), self.error)

    def signed_by(self, key):
        return tsig_mac_valid(self.wire, key.key, self.request_mac)

    def __repr__(self):
        return "Answer(%s, tsig_error=%s, mac=%s)" % (dns.rcode.to_text(self.rcode), self.error,
                                                      "yes" if self.mac else "no")


def send(srv, wire_mac, tcp=True):
    """Sends one (wire, request MAC); its Answer."""
    wire, mac = wire_mac
    r = exchange_from("127.0.0.1", srv.port, wire, tcp=tcp, timeout=WAIT)
    assert r is not None, "no answer (tcp=%s)" % tcp
    return Answer(r, mac)
