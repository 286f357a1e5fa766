"""Least privilege (issue 6): `zonecast serve -o user=USER` binds as root,
then hands the data directory to USER and runs as USER; data files are
created readable by their owner only."""

import os
import pwd
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time

import dns.edns
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


def _root_secret(path, text="root's secret\n"):
    """A file of root's, mode 0600, that the tests' user must not reach."""
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o600)
    return path


def _serve_as_nobody(top, data, extra=()):
    """Starts serve -o user=nobody on data; returns (proc, log path, port)."""
    port, aport = servers.free_port(), servers.free_port()
    logpath = os.path.join(top, "log-%d" % port)
    log = open(logpath, "wb")
    proc = subprocess.Popen([servers.zonecast_bin(), "serve", "--data-dir", data,
                             "--listen", "127.0.0.1:%d" % port,
                             "--api-listen", "127.0.0.1:%d" % aport,
                             "-o", "user=nobody", *extra],
                            stdout=log, stderr=subprocess.STDOUT)
    return proc, logpath, port


def _settle(proc, port, timeout=10, control=None):
    """Waits until serve answers DNS (and, given its path, has made its
    control socket: DNS answers first, and a CLI command in between finds
    no socket) or exits; True when it answers."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            dns.query.udp(dns.message.make_query("example.test.", "SOA"), "127.0.0.1",
                          port=port, timeout=0.3)
            if control is None:
                return True
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
                c.connect(control)
            return True
        except Exception:
            pass
        time.sleep(0.05)
    return False


def _stop(proc):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("planted", ["demo-token", "edge.mdb-lock", "serve.lock",
                                     "zonecast.pid.tmp", "zonecast.pid", "records.db-wal",
                                     "log", "logdir"])
def test_links_the_user_planted_give_root_nothing(planted):
    """The service user owns the data directory: a symbolic link it put
    there to a file of root's ("demo-token -> /etc/shadow") was followed by
    root at the next start: chown()ed to the user (who then read it),
    truncated, or written. Root now opens nothing there by its name (the
    stores are opened as the user) and follows no link of the user's: the
    file of root's keeps its owner, mode and content, whatever the start
    does."""
    if os.geteuid() != 0:
        pytest.skip("needs root (CI runs as root)")
    nobody = pwd.getpwnam("nobody")
    top = tempfile.mkdtemp(prefix="zonecast-links-")
    os.chmod(top, 0o755)
    data = os.path.join(top, "data")
    secret_dir = os.path.join(top, "root-only")
    os.mkdir(secret_dir, 0o700)
    victim = _root_secret(os.path.join(secret_dir, "victim"))
    proc = None
    try:
        # a first start as root with user=nobody: the directory is nobody's
        proc, logpath, port = _serve_as_nobody(top, data)
        assert _settle(proc, port), open(logpath).read()
        _stop(proc)
        assert os.stat(data).st_uid == nobody.pw_uid
        extra = ()
        if planted == "log":
            # a log file in a directory of the user's
            logdir = os.path.join(top, "logs")
            os.mkdir(logdir)
            os.chown(logdir, nobody.pw_uid, nobody.pw_gid)
            link = os.path.join(logdir, "zonecast.log")
            extra = ("-o", "log-target=" + link)
        elif planted == "logdir":
            # the log file's directory, in the user's, swapped for a link
            # to a directory of root's holding a file of that name
            victim = _root_secret(os.path.join(secret_dir, "zonecast.log"))
            link = os.path.join(data, "log")
            extra = ("-o", "log-target=" + os.path.join(link, "zonecast.log"))
            subprocess.run(["runuser", "-u", "nobody", "--", "ln", "-s", secret_dir, link],
                           check=True)
        else:
            link = os.path.join(data, planted)
        # what the user does (as nobody: the link is nobody's)
        if planted != "logdir":
            subprocess.run(["runuser", "-u", "nobody", "--", "sh", "-c",
                            'rm -f "$1"; ln -s "$2" "$1"', "sh", link, victim], check=True)
        assert os.lstat(link).st_uid == nobody.pw_uid
        proc, logpath, port = _serve_as_nobody(top, data, extra)
        _settle(proc, port)
        _stop(proc)
        st = os.stat(victim)
        assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (0, 0, 0o600), \
            (planted, st, open(logpath).read()[-2000:])
        assert open(victim).read() == "root's secret\n", planted
        assert subprocess.run(["runuser", "-u", "nobody", "--", "cat", victim],
                              capture_output=True).returncode != 0
    finally:
        if proc is not None:
            _stop(proc)
        shutil.rmtree(top, ignore_errors=True)


def test_a_fifo_as_log_file_is_refused_not_waited_on(tmp_path):
    """A log target that is a FIFO: the open waited for a reader, so serve
    hung at start, and a reload to it held reload, status, the zonecast
    command's writes and SIGTERM. Only a regular file (or a device) is
    taken: check-config, start and reload refuse it, nothing changes."""
    fifo = str(tmp_path / "log.fifo")
    os.mkfifo(fifo)
    cp = subprocess.run([servers.zonecast_bin(), "check-config", "-o", "log-target=" + fifo],
                        capture_output=True, text=True, timeout=10)
    assert cp.returncode != 0 and "not a regular file" in cp.stdout + cp.stderr, cp
    port = servers.free_port()
    t0 = time.monotonic()
    cp = subprocess.run([servers.zonecast_bin(), "serve", "--data-dir", str(tmp_path / "d"),
                         "--listen", "127.0.0.1:%d" % port, "--api-listen", "none",
                         "-o", "log-target=" + fifo],
                        capture_output=True, text=True, timeout=20)
    assert cp.returncode != 0 and "not a regular file" in cp.stderr, cp
    assert time.monotonic() - t0 < 10
    # a reload to it is refused; status, reload and SIGTERM are heard
    conf = tmp_path / "z.conf"
    base = "server:\n  data-dir: %s\n  listen: 127.0.0.1:%d\n  api-listen: none\n" % (
        tmp_path / "d2", port)
    conf.write_text(base)
    proc = subprocess.Popen([servers.zonecast_bin(), "serve", "-c", str(conf)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert _settle(proc, port, control=str(tmp_path / "d2" / "control.sock")), \
            proc.stderr.read() if proc.poll() is not None else ""
        conf.write_text(base + "  log-target: %s\n" % fifo)
        cp = subprocess.run([servers.zonecast_bin(), "reload", "-c", str(conf)],
                            capture_output=True, text=True, timeout=10)
        assert cp.returncode != 0 and "not a regular file" in cp.stdout + cp.stderr, cp
        cp = subprocess.run([servers.zonecast_bin(), "status", "-c", str(conf)],
                            capture_output=True, text=True, timeout=10)
        assert cp.returncode == 0, cp
        proc.terminate()
        proc.wait(10)
    finally:
        _stop(proc)


@pytest.mark.parametrize("planted", ["serve.lock", "edge.mdb", "edge.mdb-lock"])
def test_root_commands_follow_no_link_of_the_users(planted, tmp_path):
    """An operator's command run as root with no server running opens the
    stores itself, in the user's directory: a link of the user's there is
    refused, not truncated or locked through."""
    if os.geteuid() != 0:
        pytest.skip("needs root (CI runs as root)")
    top = tempfile.mkdtemp(prefix="zonecast-cmdlinks-")
    os.chmod(top, 0o755)
    data = os.path.join(top, "data")
    zfile = os.path.join(top, "z.db")
    with open(zfile, "w") as f:
        f.write(ZONE_TEXT)
    victim = _root_secret(os.path.join(top, "victim"))
    try:
        cmd = [servers.zonecast_bin(), "zone", "import", "--data-dir", data, "priv.test", zfile]
        subprocess.run(cmd, check=True, capture_output=True)
        nobody = pwd.getpwnam("nobody")
        for root, dirs, files in os.walk(data):
            for n in dirs + files + ["."]:
                os.lchown(os.path.join(root, n), nobody.pw_uid, nobody.pw_gid)
        link = os.path.join(data, planted)
        subprocess.run(["runuser", "-u", "nobody", "--", "sh", "-c",
                        'rm -f "$1"; ln -s "$2" "$1"', "sh", link, victim], check=True)
        cp = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        assert cp.returncode != 0, cp
        assert "symbolic link" in cp.stderr, cp.stderr
        st = os.stat(victim)
        assert (st.st_uid, stat.S_IMODE(st.st_mode), st.st_size) == (0, 0o600, 14), st
        assert open(victim).read() == "root's secret\n"
    finally:
        shutil.rmtree(top, ignore_errors=True)


RACER = r'''
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
d, name, victim, secs = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
os.chdir(d)
for n in (name, ".racer-s"):
    try:
        os.unlink(n)
    except FileNotFoundError:
        pass
open(name, "w").close()
os.symlink(victim, ".racer-s")
AT_FDCWD, RENAME_EXCHANGE, SYS_renameat2 = -100, 2, 316
end = time.monotonic() + secs
while time.monotonic() < end:
    for _ in range(2000):
        libc.syscall(SYS_renameat2, AT_FDCWD, b".racer-s", AT_FDCWD, name.encode(),
                     RENAME_EXCHANGE)
'''


@pytest.mark.parametrize("target", ["give", "edge"])
def test_a_link_swapped_in_and_out_gives_root_nothing(target):
    """The user swaps a name in its directory between a file of its own
    and a link to root's file, as fast as it can (renameat2 EXCHANGE),
    while root starts serve (which gives the data directory's files
    away) or runs a command that opens the edge store. A check of the
    name before an open that follows links lost the race within two
    starts; the opens follow no link of the user's now (O_NOFOLLOW first,
    the edge store opened as the directory's owner)."""
    if os.geteuid() != 0 or os.uname().machine != "x86_64":
        pytest.skip("needs root (CI runs as root) and x86_64's renameat2 number")
    top = tempfile.mkdtemp(prefix="zonecast-race-")
    os.chmod(top, 0o755)
    data = os.path.join(top, "data")
    secret = os.path.join(top, "secret")
    os.mkdir(secret, 0o755)     # nobody may name the file, not read it
    victim = _root_secret(os.path.join(secret, "victim"))
    racer = None
    try:
        proc, logpath, port = _serve_as_nobody(top, data)
        assert _settle(proc, port), open(logpath).read()
        _stop(proc)
        name = "demo-token" if target == "give" else "edge.mdb-lock"
        racer = subprocess.Popen(["runuser", "-u", "nobody", "--", "/usr/bin/python3", "-c",
                                  RACER, data, name, victim, "30"])
        time.sleep(0.3)
        for _ in range(8 if target == "give" else 40):
            if target == "give":
                proc, logpath, port = _serve_as_nobody(top, data)
                time.sleep(0.3)
                _stop(proc)
            else:
                subprocess.run([servers.zonecast_bin(), "zone", "list", "--data-dir", data],
                               capture_output=True, timeout=10)
            st = os.stat(victim)
            assert (st.st_uid, stat.S_IMODE(st.st_mode), st.st_size) == (0, 0o600, 14), st
        assert open(victim).read() == "root's secret\n"
    finally:
        if racer is not None:
            racer.kill()
            racer.wait()
        shutil.rmtree(top, ignore_errors=True)


def test_root_commands_make_no_database_through_a_link(tmp_path):
    """SQLite resolves a link at the database's own name before its
    O_NOFOLLOW applies: `records.db -> an empty file of root's` made a
    root command write a whole database into it (or create one where the
    link pointed). Root opens the stores as the directory's owner now."""
    if os.geteuid() != 0:
        pytest.skip("needs root (CI runs as root)")
    top = tempfile.mkdtemp(prefix="zonecast-sqlite-link-")
    os.chmod(top, 0o755)
    data = os.path.join(top, "data")
    zfile = os.path.join(top, "z.db")
    with open(zfile, "w") as f:
        f.write(ZONE_TEXT)
    rootonly = os.path.join(top, "rootonly")
    os.mkdir(rootonly, 0o700)
    try:
        cmd = [servers.zonecast_bin(), "zone", "import", "--data-dir", data, "priv.test", zfile]
        subprocess.run(cmd, check=True, capture_output=True)
        nobody = pwd.getpwnam("nobody")
        for root, dirs, files in os.walk(data):
            for n in dirs + files + ["."]:
                os.lchown(os.path.join(root, n), nobody.pw_uid, nobody.pw_gid)
        for target in ("empty", "absent"):
            victim = os.path.join(rootonly, target)
            if target == "empty":
                open(victim, "w").close()
                os.chmod(victim, 0o600)
            subprocess.run(["runuser", "-u", "nobody", "--", "sh", "-c",
                            'rm -f "$1" "$1-wal" "$1-shm"; ln -s "$2" "$1"', "sh",
                            os.path.join(data, "records.db"), victim], check=True)
            subprocess.run(cmd, capture_output=True, timeout=30)
            if target == "empty":
                st = os.stat(victim)
                assert (st.st_uid, st.st_size) == (0, 0), st
            assert sorted(os.listdir(rootonly)) == (["empty"]), os.listdir(rootonly)
    finally:
        shutil.rmtree(top, ignore_errors=True)


def test_log_dir_the_user_cannot_write(tmp_path):
    """With `user`, a log file in a directory only root may write to: root
    creates it at start and gives it to the user, but once logrotate moves
    it no reload (run as the user) can create it again. check-config and
    serve warn; such a reload keeps the open file (the moved one) and
    applies the rest. Every reload was refused ("cannot be created"), so no
    change could be applied any more (outside tester 19)."""
    if os.geteuid() != 0:
        pytest.skip("needs root (CI runs as root)")
    try:
        pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no user nobody")
    top = tempfile.mkdtemp(prefix="zonecast-logdir-")
    os.chmod(top, 0o755)
    logs = os.path.join(top, "logs")
    os.mkdir(logs, 0o755)                  # root's
    log = os.path.join(logs, "z.log")
    port = servers.free_port()
    conf = os.path.join(top, "c.conf")

    def write_conf(nsid):
        with open(conf, "w") as f:
            f.write("server:\n    data-dir: %s\n    listen: 127.0.0.1:%d\n"
                    "    api-listen: none\n    workers: 1\n    user: nobody\n"
                    "    log-target: %s\n    nsid: %s\n    rrl-rate: 0\n"
                    % (os.path.join(top, "data"), port, log, nsid))
    write_conf("first")
    proc = None
    try:
        cp = subprocess.run([servers.zonecast_bin(), "check-config", "-c", conf],
                            capture_output=True, text=True, timeout=30)
        assert cp.returncode == 0, cp.stderr
        assert "warning: log-target: user nobody cannot create files in %s" % logs \
            in cp.stderr, cp.stderr
        proc = subprocess.Popen([servers.zonecast_bin(), "serve", "-c", conf],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while not (os.path.exists(log) and "serving" in open(log).read()):
            assert proc.poll() is None and time.monotonic() < deadline, "no start"
            time.sleep(0.05)
        assert "user nobody cannot create files in %s" % logs in open(log).read()
        os.rename(log, log + ".1")
        write_conf("second")
        proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 10
        while "reload" not in open(log + ".1").read().split("SIGHUP")[-1]:
            assert time.monotonic() < deadline, open(log + ".1").read()
            time.sleep(0.05)
        time.sleep(0.2)
        text = open(log + ".1").read().split("SIGHUP")[-1]
        assert "reload refused" not in text, text
        assert "applied nsid" in text and "still writing to the file it had open" in text, text
        q = dns.message.make_query("example.com.", "SOA")
        q.use_edns(options=[dns.edns.GenericOption(3, b"")])
        r = dns.query.udp(q, "127.0.0.1", port=port, timeout=2)
        assert [o.to_wire() for o in r.options if o.otype == 3] == [b"second"]
    finally:
        if proc is not None and proc.poll() is None:
            proc.terminate()
            proc.wait(10)
        shutil.rmtree(top, ignore_errors=True)
