#!/usr/bin/python3
"""Pick the records that bench/propagation changes, from a gen_zone.py zone.

Usage: targets.py ZONEFILE COUNT OUT [--seed S]

Writes COUNT lines "owner. address" (deterministic for the same arguments):
owners named n<i>... (plain hosts: never below a delegation or a wildcard,
never a CNAME) that hold exactly one A record, spread over the whole zone,
each used once (fewer lines when the zone has fewer such owners).
"""
import random
import re
import sys

HOST = re.compile(r"^n[0-9]+\.")


def main():
    args = sys.argv[1:]
    seed = 7
    if "--seed" in args:
        i = args.index("--seed")
        seed = int(args[i + 1])
        del args[i:i + 2]
    if len(args) != 3:
        raise SystemExit(__doc__)
    zonefile, count, out = args[0], int(args[1]), args[2]
    a_count, first = {}, {}
    with open(zonefile) as f:
        for line in f:
            if not line or line[0] != "n" or not HOST.match(line):
                continue
            p = line.split()
            if len(p) >= 5 and p[3] == "A":
                a_count[p[0]] = a_count.get(p[0], 0) + 1
                first.setdefault(p[0], p[4])
    single = sorted(o for o, c in a_count.items() if c == 1)
    rng = random.Random(seed)
    pick = rng.sample(single, min(count, len(single)))
    with open(out, "w") as f:
        for o in pick:
            f.write("%s %s\n" % (o, first[o]))
    print("%s: %d targets out of %d single-A hosts" % (out, len(pick), len(single)),
          file=sys.stderr)


if __name__ == "__main__":
    main()
