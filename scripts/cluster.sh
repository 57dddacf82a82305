#!/usr/bin/env bash
# Run a local 3-node Redcell cluster on 127.0.0.1 for trying things out.
#
#   scripts/cluster.sh start    build redcell, start n1 (bootstraps a new cluster), n2 and n3 (join n1)
#   scripts/cluster.sh status   each node's role, term, leader and applied index
#   scripts/cluster.sh stop     stop every node (SIGTERM, by PID)
#   scripts/cluster.sh rolling-restart
#                               restart the nodes one at a time, followers first, the leader
#                               last (its SIGTERM hands leadership over); each must serve and
#                               catch up before the next stops (node/DESIGN.md: the procedure)
#
# Ports 7001-7003 (override with BASE_PORT=...); each node's /metrics, /healthz
# and /readyz on 7091-7093 (METRICS_BASE_PORT=..., default BASE_PORT+90; "off"
# for none); data, logs, PIDs and the cluster secret live in ./redcell-cluster
# (override with CLUSTER_DIR=...). RAFT_GROUPS=3 splits the keyspace over three Raft
# groups when the cluster is created; give it again to a later start that brings
# back a node whose data dir was deleted (docs/cluster.md, "Groups"; default 1).
# Point any Redis client at any node: redis-cli -p 7002 CL.THROTTLE cl:user123 15 30 60
set -euo pipefail

BASE_PORT=${BASE_PORT:-7000}
METRICS_BASE_PORT=${METRICS_BASE_PORT:-$((BASE_PORT + 90))}
RAFT_GROUPS=${RAFT_GROUPS:-1}
DIR=${CLUSTER_DIR:-./redcell-cluster}
BIN="$DIR/redcell"
NODES=(1 2 3)

port() { echo $((BASE_PORT + $1)); }

info_field() { # port field
  raft_info "$1" | field "$2"
}

# raft_info is a node's INFO raft, without carriage returns.
raft_info() {
  redis_cmd "$1" INFO raft 2>/dev/null | tr -d '\r'
}

field() { # field: its value in the INFO text on stdin
  sed -n "s/^$1://p"
}

# redis_cmd sends one command without needing redis-cli: RESP over bash's
# /dev/tcp, followed by QUIT, so that the server closes the connection once
# it has answered and the read ends at once. The timeout is for a node that
# accepts the connection but does not answer (stopped with SIGSTOP, or hung):
# INFO is answered from memory within milliseconds, and half a second per
# silent node keeps `status` under a second or two even then.
redis_cmd() {
  local p=$1; shift
  exec 3<>"/dev/tcp/127.0.0.1/$p" || return 1
  local req="*$#\r\n" a
  for a in "$@"; do req+="\$${#a}\r\n$a\r\n"; done
  req+="*1\r\n\$4\r\nQUIT\r\n"
  printf "$req" >&3
  timeout 0.5 cat <&3 | head -c 65536 || true
  exec 3<&- 3>&-
}

start() {
  mkdir -p "$DIR"
  echo "building redcell..."
  go build -o "$BIN" ./cmd/redcell
  if [ ! -f "$DIR/secret" ]; then
    head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$DIR/secret"
    chmod 600 "$DIR/secret"
  fi
  local fresh=yes
  for i in "${NODES[@]}"; do
    if [ -d "$DIR/n$i/raft" ]; then fresh=no; fi
  done
  for i in "${NODES[@]}"; do
    if [ -f "$DIR/n$i.pid" ] && kill -0 "$(cat "$DIR/n$i.pid")" 2>/dev/null; then
      echo "n$i already running (pid $(cat "$DIR/n$i.pid"))"
      continue
    fi
    local args=(--bind 127.0.0.1 --port "$(port "$i")" --data-dir "$DIR/n$i" --node-id "n$i" --cluster-secret-file "$DIR/secret")
    if [ "$METRICS_BASE_PORT" != off ]; then
      args+=(--metrics-addr "127.0.0.1:$((METRICS_BASE_PORT + i))")
    fi
    # A restart resumes from its data dir. A node without data joins a
    # member (n1, or n2 for n1 itself); only the very first start of n1, when
    # no node has data yet, bootstraps the cluster. So a node whose data dir
    # was deleted comes back as a new member and catches up: it never starts
    # a second, empty cluster.
    if [ ! -d "$DIR/n$i/raft" ]; then
      args+=(--groups "$RAFT_GROUPS") # a restart runs the count its data dir keeps
      if [ "$i" = 1 ] && [ "$fresh" = yes ]; then
        args+=(--bootstrap)
      elif [ "$i" = 1 ]; then
        args+=(--join "127.0.0.1:$(port 2)")
      else
        args+=(--join "127.0.0.1:$(port 1)")
      fi
    fi
    "$BIN" "${args[@]}" >>"$DIR/n$i.log" 2>&1 &
    echo $! >"$DIR/n$i.pid"
    echo "n$i started on 127.0.0.1:$(port "$i") (pid $!, log $DIR/n$i.log)"
    if [ "$i" = 1 ]; then wait_ready 1; fi
  done
  echo "waiting for three voters..."
  for _ in $(seq 1 100); do
    if [ "$(info_field "$(port 1)" raft_voters)" = 3 ]; then status; return 0; fi
    sleep 0.2
  done
  echo "the cluster did not reach three voters; see $DIR/n*.log" >&2
  return 1
}

wait_ready() {
  for _ in $(seq 1 100); do
    if [ -n "$(info_field "$(port "$1")" raft_state)" ]; then return 0; fi
    sleep 0.1
  done
  echo "n$1 did not answer; see $DIR/n$1.log" >&2
  return 1
}

status() {
  printf '%-4s %-16s %-10s %-6s %-8s %s\n' node address state term leader applied
  for i in "${NODES[@]}"; do
    local p; p=$(port "$i")
    if [ -f "$DIR/n$i.pid" ] && kill -0 "$(cat "$DIR/n$i.pid")" 2>/dev/null; then
      local info state; info=$(raft_info "$p")
      state=$(field raft_state <<<"$info")
      printf '%-4s %-16s %-10s %-6s %-8s %s\n' "n$i" "127.0.0.1:$p" "${state:-no answer}" \
        "$(field raft_term <<<"$info")" "$(field raft_leader_id <<<"$info")" "$(field raft_applied_index <<<"$info")"
    else
      printf '%-4s %-16s %s\n' "n$i" "127.0.0.1:$p" "stopped"
    fi
  done
}

stop() {
  for i in "${NODES[@]}"; do
    local f="$DIR/n$i.pid"
    [ -f "$f" ] || continue
    local pid; pid=$(cat "$f")
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid"
      for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      echo "n$i stopped"
    fi
    rm -f "$f"
  done
}

# rolling_restart restarts every running node in turn, as an upgrade does
# (rebuild the binary first, then run this): followers first and the leader
# last, so leadership moves once. Each node gets SIGTERM (a leader hands
# its leadership to a caught-up voter and every client connection closes
# between two requests), its exit is waited for, it starts again on its
# data dir, and the next one stops only once it answers, knows the leader
# and has applied what the leader had committed: never two down at once.
rolling_restart() {
  local leader="" order=() i
  for i in "${NODES[@]}"; do
    if [ "$(info_field "$(port "$i")" raft_state)" = leader ]; then leader=$i; fi
  done
  if [ -z "$leader" ]; then
    echo "no leader answers; see '$0 status'" >&2
    return 1
  fi
  for i in "${NODES[@]}"; do [ "$i" = "$leader" ] || order+=("$i"); done
  order+=("$leader")
  for i in "${order[@]}"; do
    local f="$DIR/n$i.pid" pid
    if [ ! -f "$f" ] || ! kill -0 "$(cat "$f")" 2>/dev/null; then
      echo "n$i is not running: start the cluster first" >&2
      return 1
    fi
    pid=$(cat "$f")
    kill -TERM "$pid"
    for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
      echo "n$i (pid $pid) did not exit within 30 s of SIGTERM; see $DIR/n$i.log" >&2
      return 1
    fi
    "$BIN" --bind 127.0.0.1 --port "$(port "$i")" --data-dir "$DIR/n$i" --node-id "n$i" \
      --cluster-secret-file "$DIR/secret" >>"$DIR/n$i.log" 2>&1 &
    echo $! >"$f"
    if ! wait_caught_up "$i"; then
      echo "n$i did not catch up within 30 s; stopping the rolling restart (see $DIR/n$i.log)" >&2
      return 1
    fi
    echo "n$i restarted (pid $(cat "$f"))$([ "$i" = "$leader" ] && echo ", leadership handed over")"
  done
  status
}

# wait_caught_up waits until node $1 answers INFO, knows a leader, and has
# applied the commit index that leader reported when the wait began.
wait_caught_up() {
  local p target="" info leader applied j
  p=$(port "$1")
  for _ in $(seq 1 300); do
    info=$(raft_info "$p")
    leader=$(field raft_leader_id <<<"$info")
    applied=$(field raft_applied_index <<<"$info")
    if [ -n "$leader" ] && [ -z "$target" ]; then
      for j in "${NODES[@]}"; do
        if [ "n$j" = "$leader" ]; then target=$(info_field "$(port "$j")" raft_commit_index); fi
      done
    fi
    if [ -n "$target" ] && [ -n "$applied" ] && [ "$applied" -ge "$target" ]; then return 0; fi
    sleep 0.1
  done
  return 1
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  rolling-restart) rolling_restart ;;
  *) echo "usage: $0 start|stop|status|rolling-restart" >&2; exit 2 ;;
esac
