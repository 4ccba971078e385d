#!/usr/bin/env bash
# Issue 30 item 4 probe: a second privgend on a port in use (loopback only).
# Usage: issue30_port.sh BIN
set -u
BIN=$1; D=$(mktemp -d /tmp/probe30.XXXXXX); P=$((18600 + RANDOM % 150))
$BIN --listen 127.0.0.1:$P --data-dir "$D/a" 2>"$D/a.log" & A=$!
sleep 1.5
$BIN --listen 127.0.0.1:$P --data-dir "$D/b" 2>"$D/b.log" & B=$!
sleep 2
if kill -0 $B 2>/dev/null; then
  echo "second privgend still running; 8 requests with its own admin token:"
  for i in 1 2 3 4 5 6 7 8; do curl -s -o /dev/null -w "%{http_code} " -H "Authorization: Bearer $(cat "$D/b/admin.token")" http://127.0.0.1:$P/v1/datasets; done; echo
  kill $B
else
  wait $B; echo "second privgend exited with $?: $(grep -o '"error":"[^"]*"' "$D/b.log")"
fi
kill $A; wait 2>/dev/null; rm -rf "$D"
