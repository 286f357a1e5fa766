# bench/lib.sh — shared helpers for the zonecast benchmarks (source it, bash only).
#
# Every server started through bench_start is recorded and stopped by
# bench_cleanup, which bench_init installs as an EXIT/INT/TERM trap; servers run
# in their own process group (setsid) so that forked children (nsd) go too.
# Only processes started here are ever signalled, by their own id / group id.

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd "$BENCH_DIR/.." && pwd)
BENCH_WORK=${BENCH_WORK:-$BENCH_DIR/.work}
PY=/usr/bin/python3
ZONECAST_BIN=${ZONECAST_BIN:-$REPO_DIR/build/zonecast}

BENCH_PIDS=()          # started server pids (each one a process-group leader)
BENCH_RUN=""           # per-run temporary directory
BENCH_KEEP=${BENCH_KEEP:-0}

log()  { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die()  { log "ERROR: $*"; exit 1; }
now()  { date +%s.%N; }
# elapsed START [END] -> seconds with 2 decimals
elapsed() { awk -v a="$1" -v b="${2:-$(now)}" 'BEGIN { printf "%.2f", b - a }'; }

bench_work_dir() {           # bench/.work made, git-ignored
    mkdir -p "$BENCH_WORK"
    [[ -f $BENCH_WORK/.gitignore ]] || printf '*\n' > "$BENCH_WORK/.gitignore"
}

bench_init() {               # bench_init NAME: work dir, run dir, traps
    bench_work_dir
    BENCH_RUN=$(mktemp -d "$BENCH_WORK/run-$1.XXXXXX")
    trap bench_cleanup EXIT
    trap 'log "interrupted"; exit 130' INT TERM
}

bench_cleanup() {
    local rc=$? pid i
    trap - EXIT INT TERM
    for pid in "${BENCH_PIDS[@]}"; do bench_stop "$pid"; done
    BENCH_PIDS=()
    # A PostgreSQL cluster a bench started (dev/pg): stopped and removed.
    if [[ -n ${PGDIR:-} && -d $PGDIR ]]; then
        "$REPO_DIR/dev/pg" stop "$PGDIR" >/dev/null 2>&1
        rm -rf "$PGDIR"
    fi
    if [[ -n $BENCH_RUN && -d $BENCH_RUN ]]; then
        if [[ $BENCH_KEEP = 1 ]] || ((rc != 0 && rc != 130)); then
            log "logs and configs kept in $BENCH_RUN"
        else
            rm -rf "$BENCH_RUN"
        fi
    fi
    exit "$rc"
}

# bench_client NAME [LIBS...]: the load generator bench/NAME.c compiled with
# cc -O2 (LIBS last on the command line) into $BENCH_WORK/NAME, again whenever
# the source is newer; prints the binary's path. Fails when cc does.
# (Also run by the Python benches: bash -c '. bench/lib.sh && bench_client X'.)
bench_client() {
    local name=$1 bin=$BENCH_WORK/$1; shift
    bench_work_dir
    if [[ ! -x $bin || $BENCH_DIR/$name.c -nt $bin ]]; then
        cc -O2 -Wall -pthread -o "$bin.tmp.$$" "$BENCH_DIR/$name.c" "$@" >&2 || { rm -f "$bin.tmp.$$"; return 1; }
        mv "$bin.tmp.$$" "$bin"
    fi
    echo "$bin"
}

# need CMD... : true when every command exists
need() { local c; for c in "$@"; do command -v "$c" >/dev/null 2>&1 || return 1; done; }

# free_port: print a port that is free on 127.0.0.1 for both UDP and TCP.
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

# bench_start LOGFILE CPUS CMD... : start CMD in its own session (process group),
# optionally pinned to CPUS (taskset list, "" = no pinning); sets BENCH_LAST_PID.
# (Not "echo pid": a $(...) subshell would lose the BENCH_PIDS record.)
bench_start() {
    local logf=$1 cpus=$2; shift 2
    if [[ -n $cpus ]]; then
        setsid taskset -c "$cpus" "$@" >"$logf" 2>&1 </dev/null &
    else
        setsid "$@" >"$logf" 2>&1 </dev/null &
    fi
    BENCH_LAST_PID=$!
    BENCH_PIDS+=("$BENCH_LAST_PID")
}

# bench_run CMD...: run CMD in its own process group in the background and wait
# for it; returns its exit status. Unlike a foreground command, the wait is cut
# short by INT/TERM, and the cleanup trap stops the whole group (e.g. a
# "timeout /usr/bin/time dnsperf" chain).
bench_run() {
    setsid "$@" </dev/null &
    local pid=$! rc
    BENCH_PIDS+=("$pid")
    wait "$pid"; rc=$?
    local keep=() p
    for p in "${BENCH_PIDS[@]}"; do [[ $p = "$pid" ]] || keep+=("$p"); done
    BENCH_PIDS=("${keep[@]}")
    return "$rc"
}

# bench_stop PID: TERM the process group, KILL it after 10 s.
bench_stop() {
    local pid=$1 i
    kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null
    for ((i = 0; i < 100; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL -- "-$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    local keep=() p
    for p in "${BENCH_PIDS[@]}"; do [[ $p = "$pid" ]] || keep+=("$p"); done
    BENCH_PIDS=("${keep[@]}")
    return 0
}

# soa_ok PORT ZONE: one probe; true if the server answers the zone's SOA.
soa_ok() {
    local out
    out=$(dig +short +norec +time=1 +tries=1 @127.0.0.1 -p "$1" "$2" SOA 2>/dev/null)
    # dig +short prints ";; communications error..." on stdout on timeouts:
    # accept only a real SOA rdata line (mname rname serial refresh retry expire min).
    [[ $out =~ ^[^\;[:space:]]+\ [^[:space:]]+\ [0-9]+\ [0-9]+\ [0-9]+\ [0-9]+\ [0-9]+$ ]]
}

# wait_for_answer PORT ZONE TIMEOUT [PID]: poll until the SOA is answered.
# Fails on timeout or when PID dies. A probe sent while the server is still
# loading stays queued in the socket and is answered as soon as the server
# serves, so the time measured is precise even with dig's 1 s timeout.
wait_for_answer() {
    local port=$1 zone=$2 timeout=$3 pid=${4:-} t0
    t0=$(date +%s)
    while (( $(date +%s) - t0 < timeout )); do
        soa_ok "$port" "$zone" && return 0
        if [[ -n $pid ]] && ! kill -0 "$pid" 2>/dev/null; then
            log "process $pid exited before answering"
            return 1
        fi
        sleep 0.05
    done
    log "no SOA answer on port $port within ${timeout}s"
    return 1
}

# proc_tree PID: PID and all its descendants.
proc_tree() {
    local todo=("$1") p c out=()
    while ((${#todo[@]})); do
        p=${todo[0]}; todo=("${todo[@]:1}")
        [[ -d /proc/$p ]] || continue
        out+=("$p")
        for c in $(cat /proc/"$p"/task/*/children 2>/dev/null); do todo+=("$c"); done
    done
    echo "${out[@]}"
}

# pin_tree PID CPUS: set the CPU affinity of every thread of every process of
# the tree. Needed because some servers pin their own threads at start
# (knotd 3.2 binds UDP worker i to CPU i, whatever taskset said), which on a
# 2-core box puts knotd's worker on dnsperf's core. Prints threads that do not
# comply afterwards, if any.
pin_tree() {
    local p t bad=""
    for p in $(proc_tree "$1"); do
        taskset -a -p -c "$2" "$p" >/dev/null 2>&1
        for t in /proc/"$p"/task/*; do
            [[ $(awk '/^Cpus_allowed_list:/ {print $2}' "$t/status" 2>/dev/null) = "$2" ]] || bad+=" ${t##*/}"
        done
    done
    [[ -z $bad ]] || log "pin_tree: threads not on cpus $2:$bad"
}

# cpu_ticks PID: user+system clock ticks of the whole tree below PID.
# (/proc/PID/stat: fields after the last ')' because comm may contain spaces,
# e.g. "(nsd: server 1)".)
cpu_ticks() {
    local p s=0 rest fld
    for p in $(proc_tree "$1"); do
        rest=$(cat /proc/"$p"/stat 2>/dev/null) || continue
        rest=${rest##*) }
        read -ra fld <<<"$rest"
        s=$((s + fld[11] + fld[12]))
    done
    echo "$s"
}

# mem_kb PID: "RSS_SUM HWM_MAX PSS_SUM" in kB over the process tree.
#   RSS_SUM  sum of VmRSS (counts memory shared by forked children twice),
#   HWM_MAX  the largest VmHWM (peak RSS) of any process of the tree,
#   PSS_SUM  sum of Pss from smaps_rollup (shared pages split: the fair total).
mem_kb() {
    local p rss=0 hwm=0 pss=0 v
    for p in $(proc_tree "$1"); do
        v=$(awk '/^VmRSS:/ {print $2}' /proc/"$p"/status 2>/dev/null); rss=$((rss + ${v:-0}))
        v=$(awk '/^VmHWM:/ {print $2}' /proc/"$p"/status 2>/dev/null); ((${v:-0} > hwm)) && hwm=$v
        v=$(awk '/^Pss:/ {print $2}' /proc/"$p"/smaps_rollup 2>/dev/null); pss=$((pss + ${v:-0}))
    done
    echo "$rss $hwm $pss"
}

# answers_digest PORT QUERYFILE: one line per query "qname qtype|status|aa|sorted answer RRs"
# (dig batch mode, so it costs one process for the whole file).
answers_digest() {
    dig @127.0.0.1 -p "$1" +norec +time=2 +tries=1 +noall +question +answer +comments \
        -f "$2" 2>/dev/null | "$PY" -c '
import sys
out, q, st, aa, ans = [], None, "?", "-", []
def flush():
    if q is not None:
        out.append("%s|%s|%s|%s" % (q, st, aa, ";".join(sorted(ans))))
for line in sys.stdin:
    line = line.rstrip("\n")
    if line.startswith(";; Got answer:"):
        flush(); q, st, aa, ans = None, "?", "-", []
    elif "->>HEADER<<-" in line:
        st = line.split("status: ")[1].split(",")[0]
    elif line.startswith(";; flags:"):
        aa = "aa" if " aa" in line.split(";")[2] else "-"
    elif line.startswith(";") and not line.startswith(";;") and len(line.split()) >= 3:
        f = line[1:].split(); q = "%s %s" % (f[0].lower(), f[-1])
    elif line and not line.startswith(";"):
        f = line.split(); f[0] = f[0].lower(); ans.append(" ".join(f))
flush()
print("\n".join(out))
'
}

# dnsperf_field FILE NAME: extract figures from a dnsperf report.
dnsperf_qps()  { awk '/Queries per second:/ {printf "%.0f", $4}' "$1"; }
dnsperf_lost() { awk '/Queries lost:/ {gsub(/[()%]/, "", $4); print $4}' "$1"; }
dnsperf_rcodes() { sed -n 's/^ *Response codes: *//p' "$1" | sed 's/ [0-9]* (\([0-9.]*%\))/ \1/g'; }
dnsperf_respsize() { sed -n 's/.*Average packet size:.*response \([0-9]*\).*/\1/p' "$1"; }

# median of the arguments (integers or decimals)
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END { if (NR == 0) exit;
    if (NR % 2) print a[(NR + 1) / 2]; else printf "%.10g\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

# /usr/bin/time -v output: wall seconds and peak RSS (kB)
timev_wall() { awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, t, ":"); s = 0;
    for (i = 1; i <= n; i++) s = s * 60 + t[i]; printf "%.2f", s }' "$1"; }
timev_maxrss() { awk -F': ' '/Maximum resident set size/ {print $2}' "$1"; }

# ensure_zone N: generate (once, cached) the N-record zone + queries; prints path.
ensure_zone() {
    local n=$1 f="$BENCH_WORK/zone-$1.${BENCH_ORIGIN}db"
    if [[ ! -s $f || ! -s $f.queries || $BENCH_DIR/gen_zone.py -nt $f ]]; then
        log "generating $n-record zone in $f"
        "$PY" "$BENCH_DIR/gen_zone.py" "$n" "$f.tmp" --origin "$BENCH_ORIGIN" >&2 || die "gen_zone failed"
        mv "$f.tmp.queries" "$f.queries" && mv "$f.tmp" "$f"
    fi
    echo "$f"
}
BENCH_ORIGIN=${BENCH_ORIGIN:-bench.test.}
