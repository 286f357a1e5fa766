# bench/propagation.d/lib.sh — what bench/propagation adds to bench/lib.sh
# (source it, bash only): logging, ports, servers in their own process
# groups stopped by a trap, and bounded waits all come from bench/lib.sh.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

# meta KEY VALUE: record a figure for the report.
meta() { printf '%s=%s\n' "$1" "$2" >> "$BENCH_RUN/results/meta"; }
