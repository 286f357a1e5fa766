"""Least privilege (issue 6): `zonecast serve -o user=USER` binds as root,
then hands the data directory to USER and runs as USER; data files are
created readable by their owner only."""

import os
import pwd
import shutil
import stat
import subprocess
import tempfile
import time

import dns.message
import dns.query
import dns.rcode
import dns.update
import pytest

import servers

ZONE_TEXT = "$ORIGIN priv.test.\n$TTL 300\n@ SOA ns1 h 1 2 3 4 5\n@ NS ns1\nns1 A 192.0.2.1\n"


def status_ids(pid):
    ids = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(("Uid:", "Gid:")):
                key, *vals = line.split()
                ids[key] = {int(v) for v in vals}
    return ids


def test_serve_drops_to_user_and_keeps_working():
    if os.geteuid() != 0:
        pytest.skip("needs root (CI runs as root)")
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no user nobody")
    if not os.access(servers.zonecast_bin(), os.X_OK):
        pytest.skip("zonecast not built")
    # not under pytest's 0700 tmp dir: the user must reach the data dir
    top = tempfile.mkdtemp(prefix="zonecast-priv-")
    os.chmod(top, 0o755)
    data, zfile = os.path.join(top, "data"), os.path.join(top, "z.db")
    with open(zfile, "w") as f:
        f.write(ZONE_TEXT)
    port, aport = servers.free_port(), servers.free_port()
    proc = None
    try:
        subprocess.run([servers.zonecast_bin(), "zone", "import", "--data-dir", data,
                        "priv.test", zfile], check=True, capture_output=True)
        log = open(os.path.join(top, "log"), "wb")
        proc = subprocess.Popen([servers.zonecast_bin(), "serve", "--data-dir", data,
                                 "--listen", "127.0.0.1:%d" % port,
                                 "--api-listen", "127.0.0.1:%d" % aport, "--no-demo",
                                 "-o", "user=nobody", "-o", "allow-update=127.0.0.1"],
                                stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while True:
            assert proc.poll() is None, open(os.path.join(top, "log")).read()
            ids = status_ids(proc.pid)
            if ids["Uid:"] == {nobody.pw_uid}:
                break
            assert time.monotonic() < deadline, "still uid %s" % ids
            time.sleep(0.05)
        assert ids["Gid:"] == {nobody.pw_gid}, ids
        # still writes (new SQLite connections open as the user) and answers
        u = dns.update.UpdateMessage("priv.test.")
        u.add("x.priv.test.", 300, "A", "192.0.2.9")
        r = dns.query.tcp(u, "127.0.0.1", port=port, timeout=5)
        assert r.rcode() == dns.rcode.NOERROR, dns.rcode.to_text(r.rcode())
        deadline = time.monotonic() + 5
        while True:
            q = dns.message.make_query("x.priv.test.", "A")
            a = dns.query.udp(q, "127.0.0.1", port=port, timeout=1)
            if a.answer:
                break
            assert time.monotonic() < deadline, "the update is not served"
            time.sleep(0.02)
        # root's import goes through the server (which runs as nobody) with
        # the file root opened: nobody could not open it by its path
        secret_dir = tempfile.mkdtemp(prefix="zonecast-root-only-")
        secret = os.path.join(secret_dir, "root-only.zone")
        with open(secret, "w") as f:
            f.write(ZONE_TEXT.replace("priv.test.", "root.test."))
        os.chmod(secret, 0o600)
        try:
            cp = subprocess.run([servers.zonecast_bin(), "zone", "import", "--data-dir", data,
                                 "root.test", secret], capture_output=True, text=True,
                                timeout=60)
        finally:
            shutil.rmtree(secret_dir, ignore_errors=True)
        assert cp.returncode == 0, cp.stderr
        a = dns.query.udp(dns.message.make_query("ns1.root.test.", "A"), "127.0.0.1",
                          port=port, timeout=2)
        assert a.answer, "the import through the server is not served"
        assert "audit: control accepted command=zone-import subject=root.test " in open(os.path.join(top, "log")).read()
        for name in os.listdir(data):
            st = os.stat(os.path.join(data, name))
            assert st.st_uid == nobody.pw_uid, "%s owned by uid %d" % (name, st.st_uid)
            assert not st.st_mode & (stat.S_IRWXG | stat.S_IRWXO), \
                "%s has mode %o" % (name, stat.S_IMODE(st.st_mode))
    finally:
        if proc is not None and proc.poll() is None:
            proc.terminate()
            proc.wait(10)
        shutil.rmtree(top, ignore_errors=True)
