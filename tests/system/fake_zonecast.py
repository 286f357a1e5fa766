#!/usr/bin/python3
"""knotd-backed stand-in for the zonecast CLI, used only to validate this harness.

Implements just the two commands the system tests call, with zonecast's
arguments: `zone import --data-dir DIR ZONE FILE` (checks the file with
dnspython, copies it into DIR/zones and, if a server is running on DIR, makes
it load the zone with `knotc reload`) and `serve --data-dir DIR --listen
127.0.0.1:PORT --workers N --no-demo` (writes DIR/knot.conf and execs knotd).
Run the suite against it with
  ZONECAST_BIN=tests/system/fake_zonecast.py /usr/bin/python3 -m pytest tests/system
Every zonecast-parametrized test should then pass (knot_deviates ones fail as
they do for knotd), which shows the fixtures and expectations work end to end.
"""

import argparse
import os
import shutil
import subprocess
import sys

import dns.name
import dns.rdatatype
import dns.zone


def conf_text(data_dir, listen, workers, nsid=None):
    zones_dir = os.path.join(data_dir, "zones")
    lines = ["server:", "    rundir: %s/run" % data_dir, "    user: root:root",
             "    listen: %s" % listen.replace(":", "@"), "    udp-workers: %d" % workers,
             "    tcp-workers: %d" % workers, '    identity: ""', '    version: ""',
             "log:", "  - target: stderr", "    any: info",
             "database:", "    storage: %s/db" % data_dir,
             "template:", "  - id: default", "    storage: %s" % zones_dir,
             "    zonefile-sync: -1", "    journal-content: none", "zone:"]
    if nsid:
        lines.insert(lines.index("log:"), '    nsid: "%s"' % nsid)
    for f in sorted(os.listdir(zones_dir)):
        lines += ["  - domain: %s" % f[:-len("zone")], "    file: %s/%s" % (zones_dir, f)]
    return "\n".join(lines) + "\n"


def check_zone(zone, path):
    origin = dns.name.from_text(zone)
    z = dns.zone.from_file(path, origin=origin, relativize=False, check_origin=True)
    with open(path) as f:  # dns.zone silently drops out-of-zone names: crude owner check
        for line in f:
            owner = line.split(";")[0].split()[0] if line[:1] not in " \t\n;$@(" else ""
            if owner.endswith(".") and not dns.name.from_text(owner).is_subdomain(origin):
                raise ValueError("%s is outside the zone %s" % (owner, zone))
    for name, node in z.nodes.items():
        types = {r.rdtype for r in node.rdatasets}
        if dns.rdatatype.CNAME in types and types - {dns.rdatatype.CNAME, dns.rdatatype.RRSIG,
                                                     dns.rdatatype.NSEC}:
            raise ValueError("%s: CNAME and other data" % name)


def cmd_import(args):
    zone = dns.name.from_text(args.zone).to_text()
    try:
        check_zone(zone, args.file)
    except Exception as e:  # noqa: BLE001 -- every parse problem is a user error
        print("error: %s: %s" % (args.file, e), file=sys.stderr)
        return 1
    zones_dir = os.path.join(args.data_dir, "zones")
    os.makedirs(zones_dir, exist_ok=True)
    shutil.copyfile(args.file, os.path.join(zones_dir, zone + "zone"))
    conf = os.path.join(args.data_dir, "knot.conf")
    sock = os.path.join(args.data_dir, "run", "knot.sock")
    if os.path.exists(sock) and os.path.exists(conf):
        with open(conf) as f:
            old = f.read()
        listen = [l.split()[1] for l in old.splitlines() if "listen:" in l][0]
        workers = int([l.split()[1] for l in old.splitlines() if "udp-workers:" in l][0])
        nsid = [l.split('"')[1] for l in old.splitlines() if "nsid:" in l]
        with open(conf, "w") as f:
            f.write(conf_text(args.data_dir, listen.replace("@", ":"), workers,
                              nsid[0] if nsid else None))
        subprocess.run(["knotc", "-s", sock, "reload"], check=True, capture_output=True)
    return 0


def cmd_serve(args):
    for sub in ("run", "db", "zones"):
        os.makedirs(os.path.join(args.data_dir, sub), exist_ok=True)
    conf = os.path.join(args.data_dir, "knot.conf")
    with open(conf, "w") as f:
        f.write(conf_text(args.data_dir, args.listen, args.workers, args.nsid))
    os.execvp("knotd", ["knotd", "-c", conf])


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    zone = sub.add_parser("zone").add_subparsers(dest="zcmd", required=True)
    imp = zone.add_parser("import")
    imp.add_argument("--data-dir", required=True)
    imp.add_argument("zone")
    imp.add_argument("file")
    srv = sub.add_parser("serve")
    srv.add_argument("--data-dir", required=True)
    srv.add_argument("--listen", required=True)
    srv.add_argument("--workers", type=int, default=1)
    srv.add_argument("--no-demo", action="store_true")
    srv.add_argument("--nsid")
    args = ap.parse_args()
    return cmd_import(args) if args.cmd == "zone" else cmd_serve(args)


if __name__ == "__main__":
    sys.exit(main())
