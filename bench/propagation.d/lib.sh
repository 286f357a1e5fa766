# bench/propagation.d/lib.sh — helpers for bench/propagation (source it, bash only).
#
# A private copy of what bench/propagation needs from bench/lib.sh (that file
# belongs to bench/query_throughput and may change under it): logging, free
# ports, servers started in their own process group and stopped by an
# EXIT/INT/TERM trap, bounded waits. Only processes started here are ever
# signalled, by their own process-group id.

PROP_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)     # bench/
REPO_DIR=$(cd "$PROP_DIR/.." && pwd)
BENCH_WORK=${BENCH_WORK:-$PROP_DIR/.work}
PY=/usr/bin/python3
ZONECAST_BIN=${ZONECAST_BIN:-$REPO_DIR/build/zonecast}

P_PIDS=()       # started process-group leaders
P_RUN=""        # per-run directory
P_KEEP=${P_KEEP:-0}

log()  { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die()  { log "ERROR: $*"; exit 1; }
now()  { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="${2:-$(now)}" 'BEGIN { printf "%.2f", b - a }'; }
need() { local c; for c in "$@"; do command -v "$c" >/dev/null 2>&1 || return 1; done; }

p_init() {                  # p_init NAME: work dir, run dir, traps
    mkdir -p "$BENCH_WORK"
    [[ -f $BENCH_WORK/.gitignore ]] || printf '*\n' > "$BENCH_WORK/.gitignore"
    P_RUN=$(mktemp -d "$BENCH_WORK/run-$1.XXXXXX")
    trap p_cleanup EXIT
    trap 'log "interrupted"; exit 130' INT TERM
}

p_cleanup() {
    local rc=$? pid
    trap - EXIT INT TERM
    for pid in "${P_PIDS[@]}"; do p_stop "$pid"; done
    P_PIDS=()
    if [[ -n $P_RUN && -d $P_RUN ]]; then
        if [[ $P_KEEP = 1 ]] || ((rc != 0 && rc != 130)); then
            log "logs, configs and raw samples kept in $P_RUN"
        else
            rm -rf "$P_RUN"
        fi
    fi
    exit "$rc"
}

# free_port: a port free on 127.0.0.1 for both UDP and TCP.
free_port() {
    "$PY" - <<'EOF'
import socket, random
for _ in range(200):
    p = random.randint(20000, 60000)
    try:
        for kind in (socket.SOCK_DGRAM, socket.SOCK_STREAM):
            s = socket.socket(socket.AF_INET, kind)
            s.bind(("127.0.0.1", p))
            s.close()
    except OSError:
        continue
    print(p)
    break
else:
    raise SystemExit("no free port")
EOF
}

# p_start LOGFILE CMD...: start CMD in its own session; sets P_LAST_PID.
p_start() {
    local logf=$1; shift
    setsid "$@" >"$logf" 2>&1 </dev/null &
    P_LAST_PID=$!
    P_PIDS+=("$P_LAST_PID")
}

# p_run TIMEOUT_S CMD...: run CMD in its own process group, bounded in time,
# interruptible; returns its exit status (124 on timeout).
p_run() {
    local t=$1; shift
    setsid timeout -k 5 "$t" "$@" </dev/null &
    local pid=$! rc
    P_PIDS+=("$pid")
    wait "$pid"; rc=$?
    local keep=() p
    for p in "${P_PIDS[@]}"; do [[ $p = "$pid" ]] || keep+=("$p"); done
    P_PIDS=("${keep[@]}")
    return "$rc"
}

# p_stop PID: TERM the process group, KILL it after 10 s.
p_stop() {
    local pid=$1 i
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null
        for ((i = 0; i < 100; i++)); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL -- "-$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    fi
    local keep=() p
    for p in "${P_PIDS[@]}"; do [[ $p = "$pid" ]] || keep+=("$p"); done
    P_PIDS=("${keep[@]}")
    return 0
}

# soa_ok PORT ZONE: one probe; true if the server answers the zone's SOA.
soa_ok() {
    local out
    out=$(dig +short +norec +time=1 +tries=1 @127.0.0.1 -p "$1" "$2" SOA 2>/dev/null)
    [[ $out == *" hostmaster."* ]]      # every gen_zone.py SOA names hostmaster.<zone>
}

# wait_soa PORT ZONE TIMEOUT_S PID: wait until the zone answers (or the
# process dies, or the time is up); true on success.
wait_soa() {
    local port=$1 zone=$2 t=$3 pid=$4 start
    start=$(date +%s)
    while (($(date +%s) - start < t)); do
        kill -0 "$pid" 2>/dev/null || return 1
        soa_ok "$port" "$zone" && return 0
        sleep 0.05
    done
    return 1
}

# meta KEY VALUE: record a figure for the report.
meta() { printf '%s=%s\n' "$1" "$2" >> "$P_RUN/results/meta"; }
