"""PostgreSQL helpers for the system tests that run their own cluster
(test_pg_serve.py, test_pg_nodes.py, test_attack_pg.py: they stop and
start it, or kill its server): a throwaway cluster from dev/pg, psql, and a
fresh database. conftest.py's `pg_cluster` is the session's shared one."""

import contextlib
import os
import shutil
import subprocess
import tempfile

import pytest

import servers

DEV_PG = os.path.join(servers.REPO, "dev", "pg")


def bindir():
    """Where PostgreSQL's binaries are, or None when it is not installed."""
    cp = subprocess.run([DEV_PG, "bindir"], capture_output=True, text=True)
    return cp.stdout.strip() if cp.returncode == 0 else None


@contextlib.contextmanager
def own_cluster(prefix):
    """A cluster on a unix socket under /tmp (the path must stay short), for
    one test or module; skips when PostgreSQL is not installed."""
    if bindir() is None:
        pytest.skip("PostgreSQL is not installed")
    pgdir = tempfile.mkdtemp(prefix=prefix, dir="/tmp")
    subprocess.run([DEV_PG, "start", pgdir], check=True, capture_output=True)
    try:
        yield pgdir
    finally:
        subprocess.run([DEV_PG, "stop", pgdir], check=False, capture_output=True)
        shutil.rmtree(pgdir, ignore_errors=True)


def psql(host, sql, db="postgres", check=True):
    """Runs sql with psql (unaligned, tuples only); its stdout."""
    return subprocess.run([os.path.join(bindir(), "psql"), "-X", "-q", "-A", "-t",
                           "-h", host, "-U", "zc", "-d", db, "-c", sql],
                          capture_output=True, text=True, check=check).stdout


def database(host, name):
    """Creates database name; its URI."""
    psql(host, "CREATE DATABASE %s" % name)
    return "postgresql://zc@/%s?host=%s" % (name, host)


_serial = iter(range(1, 10 ** 6))


def fresh_database(host, prefix):
    """Creates a database named prefix + a number no other test of this
    process took; (its name, its URI)."""
    name = "%s%d_%d" % (prefix, os.getpid(), next(_serial))
    return name, database(host, name)


def node(path, uri=None, options=(), env=None):
    """A zonecast serve at path (its data directory path/data) with the
    API and allow-update from 127.0.0.1 on free ports, on the PostgreSQL
    store uri (None: on SQLite), with options (config keys as
    "key=value") and env (extra environment, such as a test hook); not
    started. A data directory bound to the session's store
    (ZONECAST_TEST_RECORDS=postgresql) is unbound first: the node's store
    is uri, or its own SQLite file."""
    store = ["records-store=%s" % uri] if uri is not None else []
    srv = servers.ZonecastServer(str(path), api=True, env=env,
                                 options=["allow-update=127.0.0.1"] + store + list(options))
    srv.zones = {}
    bound = os.path.join(srv.data_dir, "records-store")
    if os.path.exists(bound):
        os.unlink(bound)
    srv.port = servers.free_port()
    srv.api_port = servers.free_port()
    return srv


def serve_node(tmp_path, name, uri, options=(), env=None):
    """node() at tmp_path/name, started."""
    return node(tmp_path / name, uri, options, env).serve()


def version_index_problems(host, dbname, zone, events_required=False):
    """The IXFR index (zone_versions) of zone against its change log: every
    version with events indexed at its first event, and the versions a
    gap-free run; with events_required, a zone without events is one too.
    The problems found, as lines ([]: none)."""
    sql = ("WITH z AS (SELECT id FROM zones WHERE name = '%s.'),"
           " firsts AS (SELECT version, min(seq) AS seq FROM changes WHERE"
           " zone_id = (SELECT id FROM z) GROUP BY version)"
           " SELECT 'unindexed ' || f.version || ' ' || f.seq || ' ' || coalesce(zv.seq::text, '-')"
           " FROM firsts f LEFT JOIN zone_versions zv ON zv.zone_id = (SELECT id FROM z)"
           " AND zv.version = f.version WHERE zv.seq IS DISTINCT FROM f.seq"
           " UNION ALL SELECT 'gap ' || v FROM generate_series((SELECT min(version) FROM"
           " firsts), (SELECT max(version) FROM firsts)) v WHERE v NOT IN"
           " (SELECT version FROM firsts)" % zone)
    if events_required:
        sql += " UNION ALL SELECT 'no events' WHERE NOT EXISTS (SELECT 1 FROM firsts)"
    return [x for x in psql(host, sql, db=dbname).split("\n") if x]
