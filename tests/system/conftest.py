"""pytest fixtures for the zonecast system tests.

Provides free-port allocation, throw-away data directories, and running
servers: `zonecast` (module-scoped, default zones from zones/), `zonecast_factory`
(start extra zonecast instances with chosen zones), `zonecast_api` and
`zonecast_api_factory` (the same with the HTTP API on a free port; both
factories take `options=[(key, value)]` for `serve -o` and `port=`),
`zonecast_dyn` (API, allow-update from 127.0.0.2, allow-transfer from
127.0.0.3: dynamic updates and transfers), `knotd` (the reference,
same zones) and `dns_server`, which runs a test once against each of them so
test_basic.py checks its RFC expectations against knotd too. A zonecast that
is not built (ZONECAST_BIN, default build/zonecast) makes its tests skip. At
teardown every server gets SIGTERM; a sanitizer report ("ERROR:
AddressSanitizer", UBSan's "runtime error:", "LeakSanitizer"), a crash or a
hang fails the test, and so does an error in the log of valgrind when the
servers run under it (ZONECAST_WRAPPER, servers.py). Tests marked
`zonecast_only` are skipped for knotd; `valgrind` marks the subset dev/test
runs under valgrind. `pg_cluster` (session-scoped) starts a throwaway
PostgreSQL cluster with dev/pg and yields its unix socket directory (connect
with host=DIR user=zc); it skips its tests where PostgreSQL is not installed.
"""

import os
import shutil
import subprocess
import tempfile

import pytest

import servers


def pytest_configure(config):
    config.addinivalue_line("markers", "zonecast_only: checks zonecast-specific behaviour; "
                                       "not run against knotd")
    config.addinivalue_line("markers", "knot_deviates(reason): knotd is known not to follow "
                                       "the RFC here; expected to fail against knotd")
    config.addinivalue_line("markers", "valgrind: also run in dev/test's valgrind pass "
                                       "(ZONECAST_WRAPPER=valgrind; slow, so a subset)")


DEV_PG = os.path.join(servers.REPO, "dev", "pg")


@pytest.fixture(scope="session", autouse=True)
def records_backend():
    """ZONECAST_TEST_RECORDS=postgresql runs the suite's zonecast servers on
    PostgreSQL records stores (servers.py binds each data directory to a
    database of its own) on one throwaway cluster for the session; else
    (sqlite, the default) nothing to start. dev/test runs the records, API
    and UPDATE suites both ways."""
    if servers.RECORDS_BACKEND != "postgresql":
        yield servers.RECORDS_BACKEND
        return
    if subprocess.run([DEV_PG, "bindir"], capture_output=True).returncode != 0:
        pytest.exit("ZONECAST_TEST_RECORDS=postgresql but PostgreSQL is not installed", 2)
    pgdir = tempfile.mkdtemp(prefix="zonecast-pgr.", dir="/tmp")
    started = subprocess.run([DEV_PG, "start", pgdir], capture_output=True, text=True)
    if started.returncode != 0:
        shutil.rmtree(pgdir, ignore_errors=True)
        pytest.exit("dev/pg start failed: " + started.stderr, 2)
    os.environ["ZONECAST_TEST_PGHOST"] = pgdir
    try:
        yield servers.RECORDS_BACKEND
    finally:
        subprocess.run([DEV_PG, "stop", pgdir], check=False)
        shutil.rmtree(pgdir, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_cluster():
    """A PostgreSQL cluster for the session (dev/pg, fsync on): its socket
    directory. Under /tmp, not pytest's temporary directory: as root the
    server runs as postgres, which must reach the directory, and the
    socket's path must stay short."""
    if subprocess.run([DEV_PG, "bindir"], capture_output=True).returncode != 0:
        pytest.skip("PostgreSQL is not installed (dev/deps test installs postgresql-15)")
    pgdir = tempfile.mkdtemp(prefix="zonecast-pg.", dir="/tmp")
    started = subprocess.run([DEV_PG, "start", pgdir], capture_output=True, text=True)
    if started.returncode != 0:
        shutil.rmtree(pgdir, ignore_errors=True)
        pytest.fail("dev/pg start failed: " + started.stderr, pytrace=False)
    try:
        yield pgdir
    finally:
        subprocess.run([DEV_PG, "stop", pgdir], check=False)
        shutil.rmtree(pgdir, ignore_errors=True)


@pytest.fixture
def free_port():
    return servers.free_port()


@pytest.fixture
def data_dir(tmp_path):
    d = tmp_path / "data"
    d.mkdir()
    return str(d)


def _require_zonecast():
    path = servers.zonecast_bin()
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        pytest.skip("zonecast binary not found at %s (set ZONECAST_BIN)" % path)


def _require_knotd():
    if not os.access(servers.knotd_bin(), os.X_OK):
        pytest.skip("knotd not installed")


class _Running:
    """Starts servers and checks them at teardown."""

    def __init__(self, tmp_factory):
        self.tmp_factory = tmp_factory
        self.started = []

    def start(self, cls, **kw):
        workdir = tempfile.mkdtemp(prefix=cls.kind + "-", dir=self.tmp_factory.getbasetemp())
        srv = cls(workdir, **kw)
        self.started.append(srv)
        srv.start()
        return srv

    def stop_all(self):
        failures = []
        for srv in self.started:
            problems = srv.stop()
            if problems:
                failures.append("%s (%s): %s\n--- server log (last 4000 chars) ---\n%s"
                                % (srv.kind, srv.workdir, "; ".join(problems), srv.log()[-4000:]))
        self.started = []
        if failures:
            pytest.fail("\n\n".join(failures), pytrace=False)


@pytest.fixture(scope="module")
def zonecast(tmp_path_factory):
    """zonecast serving the default zones (2 workers)."""
    _require_zonecast()
    run = _Running(tmp_path_factory)
    srv = run.start(servers.ZonecastServer)
    yield srv
    run.stop_all()


@pytest.fixture
def zonecast_factory(tmp_path_factory):
    """Call with zones={name: file} (default: the standard set) to start a zonecast."""
    _require_zonecast()
    run = _Running(tmp_path_factory)

    def start(zones=None, workers=2, **kw):
        return run.start(servers.ZonecastServer, zones=zones, workers=workers, **kw)

    yield start
    run.stop_all()


@pytest.fixture(scope="module")
def zonecast_api(tmp_path_factory):
    """zonecast with its HTTP API on a free port (`.api_url`, `.create_token()`,
    `.client()`), serving the default zones; tests make zones of their own."""
    _require_zonecast()
    run = _Running(tmp_path_factory)
    srv = run.start(servers.ZonecastServer, api=True)
    yield srv
    run.stop_all()


@pytest.fixture
def zonecast_api_factory(tmp_path_factory):
    """Call with zones={name: file} (default: the standard set) to start a
    zonecast with its API; for tests that kill or restart the server."""
    _require_zonecast()
    run = _Running(tmp_path_factory)

    def start(zones=None, workers=2, **kw):
        """kw go to ZonecastServer: options=[(key, value)...] (serve -o), port=N."""
        return run.start(servers.ZonecastServer, zones=zones, workers=workers, api=True, **kw)

    yield start
    run.stop_all()


# Source addresses of the dynamic-update server (`zonecast_dyn`): the server
# listens on 127.0.0.1; unsigned UPDATEs are allowed only from UPDATE_SOURCE
# and unsigned transfers only from XFR_SOURCE, so a client on 127.0.0.1 is
# "anybody else".
UPDATE_SOURCE = "127.0.0.2"
XFR_SOURCE = "127.0.0.3"


@pytest.fixture(scope="module")
def zonecast_dyn(tmp_path_factory):
    """zonecast with its API and `-o allow-update=127.0.0.2 -o
    allow-transfer=127.0.0.3` (docs/dynamic-updates.md), serving the default
    zones; tests make zones (and TSIG keys) of their own."""
    _require_zonecast()
    run = _Running(tmp_path_factory)
    srv = run.start(servers.ZonecastServer, api=True,
                    options=[("allow-update", UPDATE_SOURCE), ("allow-transfer", XFR_SOURCE)])
    yield srv
    run.stop_all()


@pytest.fixture(scope="module")
def knotd(tmp_path_factory):
    """knotd (the reference) serving the default zones."""
    _require_knotd()
    run = _Running(tmp_path_factory)
    srv = run.start(servers.KnotServer)
    yield srv
    run.stop_all()


@pytest.fixture
def knotd_factory(tmp_path_factory):
    """Call with zones={name: file} to start an extra knotd."""
    _require_knotd()
    run = _Running(tmp_path_factory)

    def start(zones=None, **kw):
        return run.start(servers.KnotServer, zones=zones, **kw)

    yield start
    run.stop_all()


@pytest.fixture(scope="module", params=["zonecast", "knotd"])
def dns_server(request):
    """The same test against zonecast and against the reference."""
    return request.getfixturevalue(request.param)


@pytest.fixture(autouse=True)
def _check_servers_after_each_test(request):
    """Attribute a sanitizer report or a crash to the test during which it happened."""
    yield
    for srv in list(request.node.funcargs.values()):
        if isinstance(srv, servers.DnsServer) and srv.proc is not None:
            problems = srv.check()
            if problems:
                pytest.fail("%s: %s\n--- server log (last 4000 chars) ---\n%s"
                            % (srv.kind, "; ".join(problems), srv.log()[-4000:]), pytrace=False)


@pytest.fixture(autouse=True)
def _apply_markers(request):
    """zonecast_only -> skip on knotd; knot_deviates -> strict xfail on knotd."""
    callspec = getattr(request.node, "callspec", None)
    if callspec is None or callspec.params.get("dns_server") != "knotd":
        return
    if request.node.get_closest_marker("zonecast_only"):
        pytest.skip("zonecast-specific behaviour")
    m = request.node.get_closest_marker("knot_deviates")
    if m:
        request.node.add_marker(pytest.mark.xfail(reason="knotd: " + m.args[0], strict=True))
