"""What `meson install` installs (docs/install.md, issue 14): the binary,
the systemd unit, sysusers.d and tmpfiles.d entries, the example config and
the man pages; the unit verified by systemd-analyze, the man pages linted
by mandoc, the directories made by systemd's own tools in a scratch root,
readiness reported over $NOTIFY_SOCKET as Type=notify expects, and every
config key documented in zonecast.conf(5) and docs/."""

import os
import re
import shutil
import signal
import socket
import subprocess

import dns.message
import dns.query
import pytest

from servers import REPO, START_TIMEOUT, free_port, zonecast_bin

MANDOC = shutil.which("mandoc")
ANALYZE = shutil.which("systemd-analyze")


def build_dir():
    return os.path.dirname(zonecast_bin())


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A `meson install --destdir` of the build under test: {name: path}."""
    if not os.path.exists(os.path.join(build_dir(), "meson-info")):
        pytest.skip("ZONECAST_BIN is not in a meson build directory")
    dest = str(tmp_path_factory.mktemp("destdir"))
    cp = subprocess.run(["meson", "install", "-C", build_dir(), "--destdir", dest,
                         "--no-rebuild", "--quiet"], capture_output=True, text=True,
                        timeout=300)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    files = {}
    for root, _, names in os.walk(dest):
        for n in names:
            path = os.path.join(root, n)
            files[os.path.relpath(path, dest)] = path
    return dest, files


def find(files, suffix):
    hits = [p for rel, p in files.items() if rel.endswith(suffix)]
    assert len(hits) == 1, (suffix, sorted(files))
    return hits[0]


def test_install_lays_out_every_file(installed):
    _, files = installed
    for suffix in ("bin/zonecast", "lib/systemd/system/zonecast.service",
                   "lib/sysusers.d/zonecast.conf", "lib/tmpfiles.d/zonecast.conf",
                   "etc/zonecast/zonecast.conf", "man/man8/zonecast.8",
                   "man/man5/zonecast.conf.5"):
        find(files, suffix)
    unit = open(find(files, "zonecast.service")).read()
    bindir = os.path.dirname(find(files, "bin/zonecast"))
    prefix_bin = "/" + os.path.relpath(bindir, installed[0])
    assert "ExecStart=%s/zonecast serve --config " % prefix_bin in unit
    for directive in ("Type=notify", "User=zonecast", "AmbientCapabilities=CAP_NET_BIND_SERVICE",
                      "CapabilityBoundingSet=CAP_NET_BIND_SERVICE", "NoNewPrivileges=yes",
                      "ProtectSystem=strict", "StateDirectory=zonecast"):
        assert directive in unit.splitlines(), directive
    # The example config runs as the zonecast user.
    conf = open(find(files, "etc/zonecast/zonecast.conf")).read()
    assert re.search(r"^\s+user: zonecast\b", conf, re.M), conf


@pytest.mark.skipif(MANDOC is None, reason="mandoc is not installed")
def test_man_pages_lint_clean(installed):
    _, files = installed
    for page in ("man8/zonecast.8", "man5/zonecast.conf.5"):
        cp = subprocess.run([MANDOC, "-Tlint", "-W", "warning", find(files, page)],
                            capture_output=True, text=True)
        assert cp.returncode == 0, cp.stdout + cp.stderr
        out = subprocess.run([MANDOC, "-Tutf8", find(files, page)], capture_output=True,
                             text=True)
        plain = re.sub(".\b", "", out.stdout)  # overstrike (bold) removed
        assert out.returncode == 0 and "SEE ALSO" in plain, plain[:500]


@pytest.mark.skipif(ANALYZE is None, reason="systemd-analyze is not installed")
def test_unit_verifies(installed):
    _, files = installed
    cp = subprocess.run([os.path.join(REPO, "dist", "verify-unit"),
                         find(files, "zonecast.service"), find(files, "bin/zonecast"),
                         os.path.join(REPO, "man")], capture_output=True, text=True,
                        timeout=60)
    assert cp.returncode == 0, cp.stdout + cp.stderr


@pytest.mark.skipif(shutil.which("systemd-sysusers") is None or os.geteuid() != 0,
                    reason="needs systemd-sysusers and root")
def test_sysusers_and_tmpfiles_make_the_user_and_directories(installed, tmp_path):
    _, files = installed
    root = str(tmp_path / "root")
    os.makedirs(os.path.join(root, "etc"))
    os.makedirs(os.path.join(root, "var", "lib"))
    os.makedirs(os.path.join(root, "run"))
    cp = subprocess.run(["systemd-sysusers", "--root", root,
                         find(files, "sysusers.d/zonecast.conf")],
                        capture_output=True, text=True)
    assert cp.returncode == 0, cp.stderr
    passwd = open(os.path.join(root, "etc", "passwd")).read()
    entry = [line for line in passwd.splitlines() if line.startswith("zonecast:")]
    assert entry, passwd
    uid = int(entry[0].split(":")[2])
    cp = subprocess.run(["systemd-tmpfiles", "--create", "--root", root,
                         find(files, "tmpfiles.d/zonecast.conf")],
                        capture_output=True, text=True)
    assert cp.returncode == 0, cp.stderr
    for path, mode in (("var/lib/zonecast", 0o700), ("run/zonecast", 0o750)):
        st = os.stat(os.path.join(root, path))
        assert (st.st_uid, st.st_mode & 0o777) == (uid, mode), path


def test_config_keys_are_documented():
    cp = subprocess.run([zonecast_bin(), "check-config", "--keys"], capture_output=True,
                        text=True, timeout=30)
    assert cp.returncode == 0, cp.stderr
    keys = {line.split()[0] for line in cp.stdout.splitlines()}
    assert "metrics-listen" in keys and len(keys) > 50
    page = open(os.path.join(REPO, "man", "zonecast.conf.5")).read()
    docs = (open(os.path.join(REPO, "docs", "configuration.md")).read()
            + open(os.path.join(REPO, "docs", "fleet.md")).read())
    missing_man = sorted(k for k in keys if not re.search(r"\.It Cm %s\b|Cm %s " % (k, k), page))
    missing_docs = sorted(k for k in keys if "`%s`" % k not in docs)
    assert not missing_man, "keys missing from zonecast.conf(5): %s" % missing_man
    assert not missing_docs, "keys missing from docs/: %s" % missing_docs


def test_example_config_parses(tmp_path):
    """etc/zonecast.conf is read without an error (the command then stops at
    its data directory, which does not exist here)."""
    cp = subprocess.run([zonecast_bin(), "zone", "list", "--config",
                         os.path.join(REPO, "etc", "zonecast.conf")],
                        capture_output=True, text=True, timeout=30)
    assert "zonecast.conf:" not in cp.stderr, cp.stderr
    assert "no zonecast data directory at /var/lib/zonecast" in cp.stderr, cp.stderr


def test_readiness_is_notified_to_systemd(tmp_path):
    """Type=notify: READY=1 once DNS answers, RELOADING=1 and READY=1 around
    a reload, STOPPING=1 at SIGTERM, on the datagram socket $NOTIFY_SOCKET
    names."""
    path = str(tmp_path / "notify.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(START_TIMEOUT)
    port = free_port()
    env = dict(os.environ, NOTIFY_SOCKET=path)
    proc = subprocess.Popen([zonecast_bin(), "serve", "--data-dir", str(tmp_path / "data"),
                             "--listen", "127.0.0.1:%d" % port, "--api-listen", "none"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    try:
        ready = sock.recv(4096).decode()
        assert ready.startswith("READY=1\n") and "STATUS=" in ready, ready
        # Ready means serving: the demo zone answers at once.
        r = dns.query.udp(dns.message.make_query("example.test.", "SOA"), "127.0.0.1",
                          port=port, timeout=2)
        assert r.answer, r
        # A reload (SIGHUP): RELOADING=1 with the monotonic time systemd's
        # Type=notify-reload wants, then READY=1 again.
        proc.send_signal(signal.SIGHUP)
        reloading = sock.recv(4096).decode()
        assert re.match(r"RELOADING=1\nMONOTONIC_USEC=\d+$", reloading), reloading
        again = sock.recv(4096).decode()
        assert again.startswith("READY=1\n"), again
        proc.send_signal(signal.SIGTERM)
        stopping = sock.recv(4096).decode()
        assert stopping.startswith("STOPPING=1"), stopping
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        sock.close()


def test_man_page_lists_the_live_keys():
    """zonecast.conf(5)'s RELOAD section names exactly the keys a reload
    applies (`zonecast check-config --keys`)."""
    cp = subprocess.run([zonecast_bin(), "check-config", "--keys"], capture_output=True,
                        text=True, timeout=30)
    assert cp.returncode == 0, cp.stderr
    live = {line.split()[0] for line in cp.stdout.splitlines() if line.split()[1] == "live"}
    page = open(os.path.join(REPO, "man", "zonecast.conf.5")).read()
    section = page[page.index(".Sh RELOAD"):page.index(".Sh FILES")]
    listed = set()
    for line in section.splitlines():
        if line.startswith(".Cm "):
            listed |= {w for w in re.split(r"[ ,.]+", line[4:]) if w}
    assert listed == live, (sorted(live - listed), sorted(listed - live))
