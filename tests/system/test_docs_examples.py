"""The docs' quick starts, run as written (issue 14's docs fixes): the
RFC 2136 quick start of docs/dynamic-updates.md and the curl example of
docs/api.md, against a fresh `zonecast serve` with its demo zone. Only the
ports, the data directory and the binary's path are substituted."""

import os
import re
import shutil
import subprocess
import time

import dns.message
import dns.query
import pytest

from servers import REPO, START_TIMEOUT, free_port, zonecast_bin


def code_block(doc, heading, lang="sh"):
    """The first ```lang block after `heading` in docs/doc."""
    text = open(os.path.join(REPO, "docs", doc)).read()
    at = text.index(heading)
    m = re.compile(r"```%s\n(.*?)```" % lang, re.S).search(text, at)
    assert m, "no ```%s block after %r in %s" % (lang, heading, doc)
    return m.group(1)


@pytest.fixture
def demo(tmp_path):
    """zonecast serve on a fresh data directory (the demo zone and token)."""
    port, api = free_port(), free_port()
    data = str(tmp_path / "zonecast-data")
    log = open(str(tmp_path / "serve.log"), "w")
    proc = subprocess.Popen([zonecast_bin(), "serve", "--data-dir", data, "--listen",
                             "127.0.0.1:%d" % port, "--api-listen", "127.0.0.1:%d" % api],
                            stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            r = dns.query.udp(dns.message.make_query("example.test.", "SOA"), "127.0.0.1",
                              port=port, timeout=0.5)
            if r.answer:
                break
        except Exception:
            pass
        assert time.monotonic() < deadline and proc.poll() is None, open(log.name).read()
        time.sleep(0.05)
    yield {"dir": str(tmp_path), "data": data, "port": port, "api": api}
    proc.terminate()
    assert proc.wait(timeout=10) == 0, open(log.name).read()
    log.close()


def run_script(script, cwd):
    bindir = os.path.dirname(zonecast_bin())
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"])
    cp = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=cwd, env=env,
                        capture_output=True, text=True, timeout=60)
    assert cp.returncode == 0, script + "\n" + cp.stdout + cp.stderr
    return cp.stdout


@pytest.mark.skipif(shutil.which("nsupdate") is None, reason="nsupdate is not installed")
def test_dynamic_updates_quick_start(demo):
    script = code_block("dynamic-updates.md", "## Quick start")
    script = script.replace("DIR", demo["data"]).replace("5300", str(demo["port"]))
    out = run_script(script, demo["dir"])
    assert out.strip().splitlines()[-1] == "192.0.2.10", out


def test_api_curl_example(demo):
    script = code_block("api.md", "## With curl")
    script = (script.replace("8053", str(demo["api"])).replace("5300", str(demo["port"])))
    out = run_script(script, demo["dir"])
    assert out.strip().splitlines()[-1] == "192.0.2.7", out
    # Without the Content-Type (curl -d's form encoding): 415, as the doc says.
    token = open(os.path.join(demo["data"], "demo-token")).read().strip()
    cp = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-H",
                         "Authorization: Bearer " + token, "-X", "POST", "-d", "{}",
                         "http://127.0.0.1:%d/client/v4/zones" % demo["api"]],
                        capture_output=True, text=True, timeout=30)
    assert cp.stdout == "415", cp.stdout
