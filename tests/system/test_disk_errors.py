"""A full disk or a read-only data directory gives a clear error and loses
nothing already acknowledged (issue 6).

- Full disk: the data directory is a small tmpfs, a filler file takes most
  of it, API writes (single and batch) and UPDATEs go on until the disk is
  full. The API must answer 507 "data directory: disk full, nothing was
  written", UPDATE SERVFAIL; the server stays up and DNS and the API keep
  answering every acknowledged record (and no acknowledged delete). A kill
  -9 and a restart while full lose nothing; once the filler is gone, writes
  succeed again and `zonecast verify` is clean.
- Edge store on a full disk: edge.mdb alone lives on a tiny tmpfs (a
  symlink), without a space reserve, so the builder itself hits ENOSPC: it
  logs, retries, the writer refuses new writes meanwhile, and once the
  tmpfs grows every acknowledged change is served (no change-log event
  skipped).
- Edge map full: ZONECAST_EDGE_MAP_MB=1, writes and queries at once: the
  map grows many times (with no query inside a transaction while LMDB maps
  the file again) and everything acknowledged is served.
- Read-only: the data directory is an ext4 image mounted errors=remount-ro;
  an ext4 error (trigger_fs_error) turns it read-only under the running
  server. Writes answer 503 "data directory: read-only file system, nothing
  was written" and SERVFAIL, reads and DNS keep working; `zonecast serve` on
  the read-only directory exits 1 with a clear message; after fsck and a
  read-write mount everything acknowledged is there. (A plain `mount -o
  remount,ro` cannot do this under a running server: the kernel refuses
  while files are open for writing.) The same start-up refusal for a tmpfs
  mounted read-only by the operator.

Runs as root (mount); skipped otherwise. Every mount is undone at teardown,
whatever happened.
"""

import os
import re
import shutil
import socket
import struct
import subprocess
import tempfile
import threading
import time

import dns.message
import dns.rcode
import dns.update
import pytest

import servers

ZONE = "disk.test"
UPDATE_OPTS = [("allow-update", "127.0.0.1")]

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounts file systems: needs root")


# ------------------------------------------------------------------ mounts and servers

class Mounts:
    """Mounts made by one test; undone (and servers stopped) at teardown."""

    def __init__(self, base):
        self.base = base
        self.points = []
        self.servers = []

    def run(self, *argv):
        cp = subprocess.run(list(argv), capture_output=True, text=True, timeout=60)
        if cp.returncode != 0:
            pytest.fail("%s failed (%d): %s%s" % (" ".join(argv), cp.returncode, cp.stdout,
                                                  cp.stderr), pytrace=False)
        return cp

    def tmpfs(self, path, size):
        os.makedirs(path, exist_ok=True)
        self.run("mount", "-t", "tmpfs", "-o", "size=%s,mode=0700" % size, "tmpfs", path)
        self.points.append(path)

    def ext4(self, path, image, size_mb):
        """An ext4 image that an error turns read-only (errors=remount-ro)."""
        with open(image, "wb") as f:
            f.truncate(size_mb << 20)
        self.run("mkfs.ext4", "-q", "-F", image)
        os.makedirs(path, exist_ok=True)
        self.run("mount", "-o", "loop,errors=remount-ro", image, path)
        self.points.append(path)

    def umount(self, path):
        if subprocess.run(["umount", path], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", path], capture_output=True)
        self.points.remove(path)

    def server(self, workdir, env=None, **kw):
        srv = DiskServer(workdir, env or {}, api=True, zones={}, options=UPDATE_OPTS, **kw)
        self.servers.append(srv)
        return srv

    def teardown(self):
        problems = []
        for srv in self.servers:
            if srv.proc is not None:
                p = srv.stop()
                if p:
                    problems.append("%s: %s\n%s" % (srv.workdir, "; ".join(p), srv.log()[-3000:]))
        for path in reversed(list(self.points)):
            self.umount(path)
        return problems


class DiskServer(servers.ZonecastServer):
    """ZonecastServer with extra environment (map and reserve sizes)."""

    def __init__(self, workdir, extra_env, **kw):
        super().__init__(workdir, **kw)
        self.extra_env = extra_env

    def env(self):
        env = super().env()
        env.update(self.extra_env)
        return env

    def start(self):
        """Serves an empty data directory (no demo zone, no zone file)."""
        self.port = servers.free_port()
        self.api_port = servers.free_port()
        return self.serve()

    def serve(self):
        """`zonecast serve` on the data directory; waits for the API."""
        argv = [servers.zonecast_bin(), "serve", "--data-dir", self.data_dir,
                "--listen", "127.0.0.1:%d" % self.port, "--workers", "2", "--no-demo",
                "--api-listen", "127.0.0.1:%d" % self.api_port]
        for opt in self.options:
            argv += ["-o", opt]
        self._spawn(argv, env=self.env())
        self.wait_api()
        return self


@pytest.fixture
def mounts(tmp_path):
    if not servers.serve_has_option("--api-listen"):
        pytest.skip("needs the real zonecast")
    m = Mounts(str(tmp_path))
    yield m
    problems = m.teardown()
    if problems:
        pytest.fail("\n\n".join(problems), pytrace=False)


# ------------------------------------------------------------------ writers and checks

class Acked:
    """What the server acknowledged: name -> TXT text or None (deleted)."""

    def __init__(self, srv, token, zid):
        self.srv, self.token, self.zid = srv, token, zid
        self.model = {}
        self.ids = {}
        self.n = 0
        self.refused = {"api": [], "update": []}

    def name(self):
        self.n += 1
        return "n%d.%s" % (self.n, ZONE)

    def text(self, size):
        """TXT content of about size bytes, in strings of 200."""
        body = ("%d-" % self.n).ljust(size, "x")
        return " ".join('"%s"' % body[i:i + 200] for i in range(0, len(body), 200))

    def api(self):
        return servers.ApiClient(self.srv.api_url, self.token)

    def post(self, size=200, batch=0):
        """One API write; returns the Response (acks recorded)."""
        path = "/zones/%s/dns_records" % self.zid
        if batch:
            recs = {self.name(): self.text(size) for _ in range(batch)}
            r = self.api().call("POST", path + "/batch", json={"posts": [
                {"name": n, "type": "TXT", "content": t} for n, t in recs.items()]})
        else:
            name = self.name()
            recs = {name: self.text(size)}
            r = self.api().call("POST", path, json={"name": name, "type": "TXT",
                                                    "content": recs[name]})
        if 200 <= r.status_code < 300:
            self.model.update(recs)
            if not batch:
                self.ids[name] = r.json()["result"]["id"]
        else:
            self.refused["api"].append(r)
        return r

    def delete(self, name):
        r = self.api().call("DELETE", "/zones/%s/dns_records/%s" % (self.zid, self.ids[name]))
        if 200 <= r.status_code < 300:
            self.model[name] = None
            del self.ids[name]
        else:
            self.refused["api"].append(r)
        return r

    def update(self, size=200):
        """One UPDATE adding a TXT; returns the rcode (acks recorded)."""
        name = self.name()
        text = self.text(size)
        u = dns.update.UpdateMessage(ZONE + ".")
        u.add(name + ".", 300, "TXT", text)
        r = update_exchange(self.srv.port, u)
        if r.rcode() == dns.rcode.NOERROR:
            self.model[name] = text
        else:
            self.refused["update"].append(r.rcode())
        return r.rcode()

    def update_delete(self, name):
        u = dns.update.UpdateMessage(ZONE + ".")
        u.delete(name + ".")
        r = update_exchange(self.srv.port, u)
        if r.rcode() == dns.rcode.NOERROR:
            self.model[name] = None
        return r.rcode()

    def problems(self):
        """Every acknowledged change, in the records store and in DNS."""
        listed = {}
        for r in self.api().records(self.zid, type="TXT"):
            listed[r["name"]] = r["content"]
        out = []
        for name, text in sorted(self.model.items()):
            got = listed.get(name)
            if (got is None) != (text is None) or (text and flat(got) != flat(text)):
                out.append("store: %s acknowledged %s, listed %s" % (
                    name, "deleted" if text is None else text[:20], got and got[:20]))
        got, lost = servers.query_many(self.srv.port, [n + "." for n in self.model], "TXT")
        out += ["DNS: no answer for %s" % n for n in lost[:5]]
        for name, text in sorted(self.model.items()):
            ans = got.get(name + ".")
            if ans is None:
                continue
            want = (dns.rcode.NXDOMAIN, set()) if text is None else \
                (dns.rcode.NOERROR, {flat(text)})
            if (ans[0], {flat(t) for t in ans[1]}) != want:
                out.append("DNS: %s answers %s %s, acknowledged %s" % (
                    name, dns.rcode.to_text(ans[0]), [t[:20] for t in ans[1]],
                    "deleted" if text is None else text[:20]))
        return out

    def assert_all_there(self, when):
        deadline = time.monotonic() + 10
        problems = self.problems()
        while problems and time.monotonic() < deadline:
            time.sleep(0.2)
            problems = self.problems()
        assert not problems, "%s: %d problems:\n%s" % (when, len(problems),
                                                      "\n".join(problems[:20]))


def flat(txt):
    """The characters of a TXT's strings, however they are split and quoted."""
    return "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', txt))


def update_exchange(port, u):
    wire = u.to_wire()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(struct.pack("!H", len(wire)) + wire)
        (n,) = struct.unpack("!H", servers.recv_exact(s, 2))
        r = dns.message.from_wire(servers.recv_exact(s, n))
    assert r.id == u.id
    return r


def start_zone(srv):
    token = srv.create_token()
    api = servers.ApiClient(srv.api_url, token)
    zid = api.ok("POST", "/zones", json={"name": ZONE})["result"]["id"]
    deadline = time.monotonic() + 10
    while not srv.answers_soa(ZONE + ".") and time.monotonic() < deadline:
        time.sleep(0.05)
    return Acked(srv, token, zid)


def assert_nothing_quarantined(srv):
    """A store-wide failure (disk full, map full, read-only) must not
    quarantine zones (docs/architecture.md "Quarantine")."""
    assert "quarantined" not in srv.log(), srv.log()[-3000:]
    out = srv.run_cli("zone", "list", "--data-dir", srv.data_dir).stdout
    assert "QUARANTINED" not in out, out


def show_log(srv, title):
    """Prints the server's warnings and errors (pytest -s shows them)."""
    lines = [l for l in srv.log().splitlines() if " error: " in l or " warning: " in l]
    print("--- %s: %d warnings and errors" % (title, len(lines)))
    for line in lines[:30]:
        print(line)


def assert_disk_full_error(r):
    assert r.status_code == 507, (r.status_code, r.text)
    body = r.json()
    assert body["success"] is False
    assert body["errors"][0]["message"] == "data directory: disk full, nothing was written", body


def assert_read_only_error(r):
    assert r.status_code == 503, (r.status_code, r.text)
    body = r.json()
    assert body["success"] is False
    assert body["errors"][0]["message"] == \
        "data directory: read-only file system, nothing was written", body


def fill(path, leave):
    """A filler file taking all but `leave` bytes of path's file system."""
    filler = os.path.join(path, "filler")
    st = os.statvfs(path)
    size = st.f_bavail * st.f_frsize - leave
    with open(filler, "wb") as f:
        chunk = b"\0" * (1 << 20)
        while size > 0:
            f.write(chunk[:min(size, len(chunk))])
            size -= len(chunk)
    return filler


def write_until_full(acked, need=3, limit=4000):
    """API writes (single and batch) and UPDATEs until each was refused
    `need` times; returns the number of writes tried."""
    for i in range(limit):
        if len(acked.refused["api"]) >= need and len(acked.refused["update"]) >= need:
            return i
        kind = i % 4
        if kind == 0:
            acked.post(size=900)
        elif kind == 1:
            acked.post(size=900, batch=5)
        elif kind == 2:
            acked.update(size=900)
        else:
            live = [n for n, t in acked.model.items() if t is not None and n in acked.ids]
            if live and i % 16 == 3:
                acked.delete(live[0])      # a delete also needs room
            else:
                acked.update(size=900)
    pytest.fail("the disk never filled: %r" % acked.refused)


# ------------------------------------------------------------------ tests

def test_full_disk_refuses_clearly_and_loses_nothing(mounts):
    t0 = time.monotonic()
    work = tempfile.mkdtemp(prefix="full-", dir=mounts.base)
    srv = mounts.server(work)
    mounts.tmpfs(srv.data_dir, "32m")
    srv.start()
    acked = start_zone(srv)
    for _ in range(20):
        assert 200 <= acked.post().status_code < 300
        assert acked.update() == dns.rcode.NOERROR
    filler = fill(srv.data_dir, 3 << 20)
    tried = write_until_full(acked)
    for r in acked.refused["api"]:
        assert_disk_full_error(r)
    assert set(acked.refused["update"]) == {dns.rcode.SERVFAIL}, acked.refused["update"]
    assert srv.proc.poll() is None, "the server died on a full disk:\n" + srv.log()[-3000:]
    log = srv.log()
    assert "No space left on device" in log, log[-3000:]
    acked.assert_all_there("disk full")
    # a crash while full, and a restart on the full disk
    srv.kill9()
    srv.restart()
    acked.assert_all_there("restarted on the full disk")
    r = acked.post(size=900, batch=20)
    assert r.status_code == 507 or 200 <= r.status_code < 300, r.text
    # room again: writes go through (the builder clears its stall within a pass)
    os.unlink(filler)
    deadline = time.monotonic() + 10
    while not 200 <= acked.post().status_code < 300:
        assert time.monotonic() < deadline, acked.refused["api"][-1].text
        time.sleep(0.2)
    assert acked.update() == dns.rcode.NOERROR
    some = [n for n, t in acked.model.items() if t is not None][:3]
    for name in some:
        assert acked.update_delete(name) == dns.rcode.NOERROR
    acked.assert_all_there("after space was freed")
    assert_nothing_quarantined(srv)
    cp = srv.verify()
    assert cp.returncode == 0 and "no differences" in cp.stdout, cp.stdout + cp.stderr
    show_log(srv, "full disk")
    print("full disk: %d writes tried, %d names acknowledged, refused %d API / %d UPDATE; "
          "%.1fs" % (tried, len(acked.model), len(acked.refused["api"]),
                     len(acked.refused["update"]), time.monotonic() - t0))


def test_edge_store_disk_full_stalls_builder_and_skips_nothing(mounts):
    """The builder itself hits ENOSPC (edge.mdb alone on a full tmpfs, no
    reserve): it logs and retries, writes are refused meanwhile, and every
    acknowledged change is served once there is room."""
    work = tempfile.mkdtemp(prefix="edge-", dir=mounts.base)
    srv = mounts.server(work, env={"ZONECAST_EDGE_RESERVE_MB": "0"})
    edge_dir = os.path.join(work, "edge")
    mounts.tmpfs(edge_dir, "2m")
    os.symlink(os.path.join(edge_dir, "edge.mdb"), os.path.join(srv.data_dir, "edge.mdb"))
    srv.start()
    acked = start_zone(srv)
    stalled = None
    for i in range(3000):
        r = acked.post(size=2000, batch=10) if i % 2 else None
        rc = acked.update(size=2000) if not i % 2 else None
        if (r is not None and r.status_code == 507) or rc == dns.rcode.SERVFAIL:
            stalled = i
            break
    assert stalled is not None, "the edge store never filled"
    for r in acked.refused["api"]:
        assert_disk_full_error(r)
    deadline = time.monotonic() + 10
    while "builder: cannot apply the change log" not in srv.log():
        assert time.monotonic() < deadline, srv.log()[-3000:]
        time.sleep(0.1)
    assert "No space left on device" in srv.log()
    assert srv.proc.poll() is None
    # while stalled, more writes are refused, not acknowledged unserved
    r = acked.post(size=100)
    assert_disk_full_error(r)
    assert acked.update(size=100) == dns.rcode.SERVFAIL
    mounts.run("mount", "-o", "remount,size=64m", edge_dir)
    deadline = time.monotonic() + 10
    while not 200 <= acked.post().status_code < 300:
        assert time.monotonic() < deadline, acked.refused["api"][-1].text
        time.sleep(0.2)
    acked.assert_all_there("edge store has room again")
    assert "builder: applying the change log again" in srv.log(), srv.log()[-3000:]
    assert_nothing_quarantined(srv)
    show_log(srv, "edge store full")
    cp = srv.verify()
    assert cp.returncode == 0 and "no differences" in cp.stdout, cp.stdout + cp.stderr


def test_edge_map_full_grows_under_queries(mounts):
    """ZONECAST_EDGE_MAP_MB=1: the map is full many times over while DNS
    workers query; LMDB remaps the file with no transaction open."""
    work = tempfile.mkdtemp(prefix="map-", dir=mounts.base)
    srv = mounts.server(work, env={"ZONECAST_EDGE_MAP_MB": "1"})
    srv.start()
    acked = start_zone(srv)
    stop = threading.Event()

    def query():
        while not stop.is_set():
            servers.query_many(srv.port, ["n%d.%s." % (i, ZONE) for i in range(64)], "TXT",
                               attempts=1)

    threads = [threading.Thread(target=query, daemon=True) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        for i in range(120):
            r = acked.post(size=1500, batch=25)
            assert 200 <= r.status_code < 300, r.text
            if i % 10 == 0:
                assert acked.update(size=1500) == dns.rcode.NOERROR, srv.log()[-3000:]
            assert srv.proc.poll() is None, srv.log()[-3000:]
    finally:
        stop.set()
        for t in threads:
            t.join(10)
    grown = srv.log().count("edge store: map full, grown to")
    assert grown >= 3, srv.log()[-3000:]
    acked.assert_all_there("after %d map growths" % grown)
    assert_nothing_quarantined(srv)
    show_log(srv, "edge map full")
    cp = srv.verify()
    assert cp.returncode == 0 and "no differences" in cp.stdout, cp.stdout + cp.stderr


def test_read_only_data_directory(mounts):
    if not shutil.which("mkfs.ext4") or not os.path.exists("/dev/loop-control"):
        pytest.fail("needs mkfs.ext4 and loop devices (e2fsprogs, /dev/loop-control)")
    work = tempfile.mkdtemp(prefix="ro-", dir=mounts.base)
    image = os.path.join(work, "data.img")
    srv = mounts.server(work)
    mounts.ext4(srv.data_dir, image, 64)
    srv.start()
    acked = start_zone(srv)
    for i in range(30):
        assert 200 <= acked.post(batch=3 if i % 3 == 0 else 0).status_code < 300
        assert acked.update() == dns.rcode.NOERROR
    for name in [n for n in acked.ids][:5]:
        assert 200 <= acked.delete(name).status_code < 300
    acked.assert_all_there("before the file system turned read-only")
    # an ext4 error: the kernel remounts the file system read-only under us
    dev = os.path.basename(os.path.realpath(subprocess.run(
        ["findmnt", "-n", "-o", "SOURCE", srv.data_dir], capture_output=True, text=True,
        check=True).stdout.strip()))
    with open("/sys/fs/ext4/%s/trigger_fs_error" % dev, "w") as f:
        f.write("zonecast test: read-only data directory")
    with pytest.raises(OSError):
        open(os.path.join(srv.data_dir, "probe"), "w")
    for i in range(3):
        assert_read_only_error(acked.post(batch=3 if i else 0))
        assert acked.update() == dns.rcode.SERVFAIL
    assert srv.proc.poll() is None, srv.log()[-3000:]
    assert "Read-only file system" in srv.log() or "readonly database" in srv.log(), \
        srv.log()[-3000:]
    acked.assert_all_there("read-only, running")
    show_log(srv, "read-only")
    problems = srv.stop()
    assert not problems, "%s\n%s" % (problems, srv.log()[-3000:])
    # starting on the read-only directory: a clear error, exit status 1
    cp = subprocess.run([servers.zonecast_bin(), "serve", "--data-dir", srv.data_dir,
                         "--listen", "127.0.0.1:%d" % servers.free_port(), "--api-listen",
                         "none", "--no-demo"], capture_output=True, text=True, timeout=30,
                        env=srv.env())
    assert cp.returncode == 1, (cp.returncode, cp.stderr)
    assert "data directory %s is not writable (Read-only file system)" % srv.data_dir \
        in cp.stderr, cp.stderr
    # repaired and mounted read-write again: nothing acknowledged is lost
    mounts.umount(srv.data_dir)
    subprocess.run(["e2fsck", "-fy", image], capture_output=True, timeout=60)
    mounts.run("mount", "-o", "loop,errors=remount-ro", image, srv.data_dir)
    mounts.points.append(srv.data_dir)
    srv.restart()
    acked.assert_all_there("after fsck and a read-write mount")
    assert 200 <= acked.post().status_code < 300
    assert acked.update() == dns.rcode.NOERROR
    cp = srv.verify()
    assert cp.returncode == 0 and "no differences" in cp.stdout, cp.stdout + cp.stderr


def test_serve_refuses_a_read_only_mount(mounts):
    """A data directory mounted read-only (not an error, the operator's
    mount): serve exits 1 and says why; the data is untouched."""
    work = tempfile.mkdtemp(prefix="rofs-", dir=mounts.base)
    srv = mounts.server(work)
    mounts.tmpfs(srv.data_dir, "32m")
    srv.start()
    acked = start_zone(srv)
    for _ in range(5):
        assert 200 <= acked.post().status_code < 300
    assert not srv.stop()
    mounts.run("mount", "-o", "remount,ro", srv.data_dir)
    cp = subprocess.run([servers.zonecast_bin(), "serve", "--data-dir", srv.data_dir,
                         "--listen", "127.0.0.1:%d" % servers.free_port(), "--api-listen",
                         "none", "--no-demo"], capture_output=True, text=True, timeout=30,
                        env=srv.env())
    assert cp.returncode == 1, (cp.returncode, cp.stderr)
    assert "data directory %s is not writable (Read-only file system)" % srv.data_dir \
        in cp.stderr, cp.stderr
    mounts.run("mount", "-o", "remount,rw", srv.data_dir)
    srv.restart()
    acked.assert_all_there("read-write again")
