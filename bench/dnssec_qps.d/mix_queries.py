#!/usr/bin/python3
"""Re-mix a gen_zone.py query file to a given share of non-existent names.

Usage: mix_queries.py IN OUT [--nx-percent P] [--queries Q] [--seed S]

IN is gen_zone.py's OUT.queries (90% existing data, 10% names under 'x<n>'
labels, which gen_zone never creates). OUT gets Q lines (default: as many as
IN), P% of them non-existent (default 20), shuffled. Existing lines are drawn
from IN's existing lines (in their order, cycling if more are needed); extra
non-existent names reuse the parents of IN's ones with fresh 'x<n>' labels, so
they stay outside every wildcard and delegation. Same arguments, same output.
"""
import argparse
import random
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("inp")
    ap.add_argument("out")
    ap.add_argument("--nx-percent", type=float, default=20.0)
    ap.add_argument("--queries", type=int, default=0)
    ap.add_argument("--seed", type=int, default=5)
    a = ap.parse_args()
    if not 0 <= a.nx_percent <= 100:
        ap.error("--nx-percent must be within 0..100")
    exist, nx = [], []
    with open(a.inp) as f:
        for line in f:
            if not line.strip():
                continue
            (nx if line.startswith("x") else exist).append(line if line.endswith("\n") else line + "\n")
    if not exist or not nx:
        sys.exit("%s: need both existing and non-existent ('x...') names" % a.inp)
    total = a.queries or (len(exist) + len(nx))
    n_nx = round(total * a.nx_percent / 100)
    n_ex = total - n_nx
    rng = random.Random(a.seed)
    out = [exist[i % len(exist)] for i in range(n_ex)]
    parents = [(l.split()[0].split(".", 1)[1], l.split()[1]) for l in nx]
    seen = set()
    for i in range(n_nx):
        if i < len(nx):
            line = nx[i]
        else:
            while True:
                p, t = parents[rng.randrange(len(parents))]
                name = "x%d.%s" % (rng.randrange(10**12), p)
                if name not in seen:
                    break
            line = "%s %s\n" % (name, t)
        seen.add(line.split()[0])
        out.append(line)
    rng.shuffle(out)
    with open(a.out, "w") as f:
        f.writelines(out)
    print("%s: %d queries, %d existing, %d non-existent (%.1f%%)"
          % (a.out, total, n_ex, n_nx, 100.0 * n_nx / max(total, 1)), file=sys.stderr)


if __name__ == "__main__":
    main()
