# bench/update_batches.d/servers.sh — start zonecast, named and knotd on a
# fresh serial-1 zone with a TSIG key (source it after bench/lib.sh; bash only).
#
# Every start_* function takes a fresh directory, starts the server through
# bench_start (own process group, stopped by the cleanup trap), waits (bounded)
# for it to answer the zone's SOA and sets:
#   SRV_PID   pid (process-group leader) to pass to bench_stop
#   SRV_PORT  its DNS port on 127.0.0.1
#   SRV_KEY   the key file (BIND syntax) that may update the zone
#   SRV_ERR   on failure (return 1), why (one line)
# WANT_PORT, when set, is the DNS port to use instead of a new free one.

UPD_ZONE=${UPD_ZONE:-upd.test.}
# In a git worktree without a build (e.g. a bench branch), use the main
# worktree's build/zonecast unless ZONECAST_BIN was given.
if [[ ! -x $ZONECAST_BIN && $ZONECAST_BIN = "$REPO_DIR/build/zonecast" ]]; then
    _main_wt=$(git -C "$REPO_DIR" worktree list --porcelain 2>/dev/null | awk '/^worktree / {print $2; exit}')
    [[ -n $_main_wt && -x $_main_wt/build/zonecast ]] && ZONECAST_BIN=$_main_wt/build/zonecast
    unset _main_wt
fi
UPD_KEY_NAME=${UPD_KEY_NAME:-upd-key}
WORKERS=${WORKERS:-1}
START_TIMEOUT=${START_TIMEOUT:-60}

# mk_zone FILE: the fresh zone, serial 1 (SOA, NS, the NS's address)
mk_zone() {
    cat > "$1" <<ZONE
\$TTL 3600
$UPD_ZONE IN SOA ns1.$UPD_ZONE hostmaster.$UPD_ZONE 1 3600 600 604800 300
$UPD_ZONE IN NS ns1.$UPD_ZONE
ns1.$UPD_ZONE IN A 192.0.2.1
ZONE
}

# mk_key FILE: a new hmac-sha256 key named $UPD_KEY_NAME, BIND syntax
mk_key() {
    local secret
    secret=$(head -c 32 /dev/urandom | base64)
    printf 'key "%s" {\n\talgorithm hmac-sha256;\n\tsecret "%s";\n};\n' "$UPD_KEY_NAME" "$secret" > "$1"
}
key_secret() { sed -n 's/.*secret "\(.*\)".*/\1/p' "$1"; }

# zonecast_supports_update: true when the binary has the 'tsig' command
zonecast_supports_update() {
    [[ -x $ZONECAST_BIN ]] || { SRV_ERR="binary $ZONECAST_BIN missing"; return 1; }
    local out
    out=$(timeout 10 "$ZONECAST_BIN" tsig list --data-dir "$BENCH_RUN/probe-dd" 2>&1)
    if [[ $out == *"unknown command"* ]]; then
        SRV_ERR="zonecast $(zc_commit) has no 'tsig' command: RFC 2136 UPDATE not implemented yet"
        return 1
    fi
    return 0
}
# zonecast's commit: set ZC_COMMIT before copying the binary away from its tree
zc_commit() {
    [[ -n ${ZC_COMMIT:-} ]] || ZC_COMMIT=$(git -C "$(dirname "$ZONECAST_BIN")/.." rev-parse --short HEAD 2>/dev/null || echo '?')
    echo "$ZC_COMMIT"
}

# start_zonecast DIR [SERVE-ARGS...]: data dir DIR/dd, zone import, tsig create, serve
start_zonecast() {
    local d=$1; shift
    SRV_ERR=""
    mkdir -p "$d"
    mk_zone "$d/zone.db"
    if ! timeout -k 5 120 "$ZONECAST_BIN" zone import --data-dir "$d/dd" "${UPD_ZONE%.}" "$d/zone.db" > "$d/import.log" 2>&1; then
        SRV_ERR="zone import failed: $(tail -1 "$d/import.log")"; return 1
    fi
    if ! timeout -k 5 30 "$ZONECAST_BIN" tsig create --data-dir "$d/dd" "$UPD_KEY_NAME" --zone "${UPD_ZONE%.}" > "$d/key.conf" 2> "$d/tsig.log" ||
       [[ -z $(key_secret "$d/key.conf") ]]; then
        SRV_ERR="tsig create failed: $(tail -1 "$d/tsig.log")"; return 1
    fi
    SRV_KEY=$d/key.conf
    SRV_PORT=${WANT_PORT:-$(free_port)}
    local aport; aport=$(free_port)
    bench_start "$d/zonecast.log" "" "$ZONECAST_BIN" serve --data-dir "$d/dd" --listen "127.0.0.1:$SRV_PORT" \
        --api-listen "127.0.0.1:$aport" --workers "$WORKERS" --no-demo -o rrl-rate=0 -o tcp-max-clients-per-ip=0 "$@"
    SRV_PID=$BENCH_LAST_PID
    if ! wait_for_answer "$SRV_PORT" "$UPD_ZONE" "$START_TIMEOUT" "$SRV_PID"; then
        SRV_ERR="serve did not answer: $(grep -v '^$' "$d/zonecast.log" | tail -1)"; bench_stop "$SRV_PID"; return 1
    fi
}

# bind_conf DIR PORT: named.conf head for an instance in DIR
bind_conf_head() {
    cat <<CONF
options {
    directory "$1";
    listen-on port $2 { 127.0.0.1; };
    listen-on-v6 { none; };
    pid-file "$1/named.pid";
    session-keyfile "$1/session.key";
    managed-keys-directory "$1";
    recursion no;
    dnssec-validation no;
    notify no;
    allow-transfer { none; };
};
controls { };
// -g logs to stderr: every update would be one line there; keep the log for errors
logging { category update { null; }; category update-security { null; }; };
CONF
}

# start_bind DIR [ZONE-OPTIONS]: a primary with the key and update-policy;
# extra zone options (e.g. notify) as one string
start_bind() {
    local d=$1 zopts=${2:-}
    SRV_ERR=""
    mkdir -p "$d"
    mk_zone "$d/zone.db"
    mk_key "$d/key.conf"
    SRV_KEY=$d/key.conf
    SRV_PORT=${WANT_PORT:-$(free_port)}
    {
        bind_conf_head "$d" "$SRV_PORT"
        printf 'include "%s";\n' "$d/key.conf"
        printf 'zone "%s" { type primary; file "%s"; journal "%s";\n    update-policy { grant %s zonesub ANY; };\n    %s\n};\n' \
            "${UPD_ZONE%.}" "$d/zone.db" "$d/zone.db.jnl" "$UPD_KEY_NAME" "$zopts"
    } > "$d/named.conf"
    named-checkconf "$d/named.conf" > "$d/checkconf.log" 2>&1 || { SRV_ERR="named-checkconf: $(head -1 "$d/checkconf.log")"; return 1; }
    # -n: worker threads, as zonecast's --workers
    bench_start "$d/named.log" "" named -g -n "$WORKERS" -c "$d/named.conf"
    SRV_PID=$BENCH_LAST_PID
    if ! wait_for_answer "$SRV_PORT" "$UPD_ZONE" "$START_TIMEOUT" "$SRV_PID"; then
        SRV_ERR="named did not answer: $(tail -1 "$d/named.log")"; bench_stop "$SRV_PID"; return 1
    fi
}

# start_bind_secondary DIR PRIMARY_PORT: a secondary of $UPD_ZONE (AXFR/IXFR
# from 127.0.0.1#PRIMARY_PORT, NOTIFYs from it accepted); waits until it has
# loaded the zone
start_bind_secondary() {
    local d=$1 pport=$2
    SRV_ERR=""
    mkdir -p "$d"
    SRV_PORT=${WANT_PORT:-$(free_port)}
    {
        bind_conf_head "$d" "$SRV_PORT"
        printf 'zone "%s" { type secondary; file "%s"; primaries { 127.0.0.1 port %s; }; %s };\n' \
            "${UPD_ZONE%.}" "$d/sec.db" "$pport" "${SECONDARY_ZOPTS:-}"
    } > "$d/named.conf"
    named-checkconf "$d/named.conf" > "$d/checkconf.log" 2>&1 || { SRV_ERR="named-checkconf: $(head -1 "$d/checkconf.log")"; return 1; }
    bench_start "$d/named.log" "" named -g -n "$WORKERS" -c "$d/named.conf"
    SRV_PID=$BENCH_LAST_PID
    # bounded by SECONDARY_TIMEOUT (20 s): a failed first transfer is retried much later
    if ! wait_for_answer "$SRV_PORT" "$UPD_ZONE" "${SECONDARY_TIMEOUT:-20}" "$SRV_PID"; then
        SRV_ERR="secondary named did not load the zone: $( { grep -E 'failed|Transfer status|refused|denied' "$d/named.log" || grep -iE 'transfer' "$d/named.log"; } | tail -1)"
        bench_stop "$SRV_PID"; return 1
    fi
}

# start_knot DIR: knotd with the key, an update ACL, journal on, zone-file
# flushes off (zonefile-sync -1: the journal is the durable copy, as BIND's)
start_knot() {
    local d=$1
    SRV_ERR=""
    mkdir -p "$d/db"
    mk_zone "$d/zone.db"
    mk_key "$d/key.conf"
    SRV_KEY=$d/key.conf
    SRV_PORT=$(free_port)
    cat > "$d/knot.conf" <<CONF
server:
    rundir: "$d"
    listen: 127.0.0.1@$SRV_PORT
    udp-workers: $WORKERS
    tcp-workers: $WORKERS
    background-workers: $WORKERS
    user: root:root
log:
  - target: stderr
    any: warning
database:
    storage: "$d/db"
key:
  - id: $UPD_KEY_NAME
    algorithm: hmac-sha256
    secret: $(key_secret "$d/key.conf")
acl:
  - id: upd
    key: $UPD_KEY_NAME
    action: update
template:
  - id: default
    storage: "$d"
    zonefile-sync: -1
    journal-content: changes
zone:
  - domain: ${UPD_ZONE%.}
    file: "$d/zone.db"
    acl: upd
CONF
    knotc -c "$d/knot.conf" conf-check > "$d/checkconf.log" 2>&1 || { SRV_ERR="knotc conf-check: $(head -1 "$d/checkconf.log")"; return 1; }
    bench_start "$d/knot.log" "" knotd -c "$d/knot.conf"
    SRV_PID=$BENCH_LAST_PID
    if ! wait_for_answer "$SRV_PORT" "$UPD_ZONE" "$START_TIMEOUT" "$SRV_PID"; then
        SRV_ERR="knotd did not answer: $(tail -1 "$d/knot.log")"; bench_stop "$SRV_PID"; return 1
    fi
}

# start_server NAME DIR: dispatch (zonecast | bind | knot)
start_server() {
    case $1 in
        zonecast) start_zonecast "$2" ;;
        bind) start_bind "$2" ;;
        knot) start_knot "$2" ;;
        *) SRV_ERR="unknown server $1"; return 1 ;;
    esac
}

# server_version NAME
server_version() {
    case $1 in
        zonecast) echo "zonecast $(zc_commit) $(sha256sum "$ZONECAST_BIN" 2>/dev/null | cut -c1-12)" ;;
        bind) named -v | head -1 ;;
        knot) knotd --version | head -1 ;;
    esac
}
