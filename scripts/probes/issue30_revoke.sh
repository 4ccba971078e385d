#!/usr/bin/env bash
# Issue 30 item 1 probe: two replicas of BIN on one throwaway PostgreSQL
# (scripts/pgtest.sh), loopback only. Usage: issue30_revoke.sh BIN TAG
set -u
BIN=$1; TAG=$2; SRC=$(cd "$(dirname "$0")/../.." && pwd)
D=$(mktemp -d /tmp/probe30.XXXXXX)/$TAG; rm -rf "$D"; mkdir -p "$D"
"$SRC/scripts/pgtest.sh" start "$D/pg" >/dev/null 2>&1 || { echo "no cluster"; exit 1; }
URI=$(cat "$D/pg/uri")
P1=$((18500 + RANDOM % 400)); P2=$((P1 + 1))
$BIN --listen 127.0.0.1:$P1 --data-dir "$D/r1" --db "$URI" --node-id r1 2>"$D/r1.log" & R1=$!
sleep 2
$BIN --listen 127.0.0.1:$P2 --data-dir "$D/r2" --db "$URI" --node-id r2 2>"$D/r2.log" & R2=$!
sleep 2
A=$(cat "$D/r1/admin.token")
U1=http://127.0.0.1:$P1; U2=http://127.0.0.1:$P2
j() { python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }
echo "== item 1: revoke admin T through r1, then use T on r2 at once"
OUT=$(curl -s -X POST -H "Authorization: Bearer $A" -H 'Content-Type: application/json' -d '{"scope":"admin"}' $U1/v1/tokens)
T=$(echo "$OUT" | j token); TID=$(echo "$OUT" | j id)
echo "r2 GET /v1/datasets with T before revoke: $(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $T" $U2/v1/datasets)"
echo "r1 DELETE /v1/tokens/$TID: $(curl -s -o /dev/null -w '%{http_code}' -X DELETE -H "Authorization: Bearer $A" $U1/v1/tokens/$TID)"
echo "r2 GET /v1/datasets with T: $(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $T" $U2/v1/datasets)"
M=$(curl -s -w ' %{http_code}' -X POST -H "Authorization: Bearer $T" -H 'Content-Type: application/json' -d '{"scope":"admin"}' $U2/v1/tokens)
echo "r2 POST /v1/tokens with T: ${M##* }"
T2=$(echo "${M% *}" | j token 2>/dev/null || true)
if [ -n "$T2" ]; then sleep 11; echo "  minted token T2, 11 s later on r2: $(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $T2" $U2/v1/datasets); T itself: $(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $T" $U2/v1/datasets)"; fi
kill $R1 $R2; wait 2>/dev/null
"$SRC/scripts/pgtest.sh" stop "$D/pg" >/dev/null 2>&1; rm -rf "$(dirname "$D")"
