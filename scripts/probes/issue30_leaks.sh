#!/usr/bin/env bash
# Issue 30 item 9 probe: the 503 body while PostgreSQL is down, and the time
# of GET /v1/jobs/{id} for another tenant's job vs an unknown id (median of
# 1000 each, interleaved, alternating which goes first). Usage: issue30_leaks.sh BIN TAG
set -u
BIN=$1; TAG=$2; SRC=$(cd "$(dirname "$0")/../.." && pwd)
D=$(mktemp -d /tmp/probe30.XXXXXX)/$TAG; rm -rf "$D"; mkdir -p "$D"
"$SRC/scripts/pgtest.sh" start "$D/pg" >/dev/null 2>&1 || { echo "no cluster"; exit 1; }
URI=$(cat "$D/pg/uri"); P=$((18300 + RANDOM % 150)); U=http://127.0.0.1:$P
$BIN --listen 127.0.0.1:$P --data-dir "$D/d" --db "$URI" 2>"$D/log" & S=$!
sleep 2
A=$(cat "$D/d/admin.token")
j() { python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }
H='Content-Type: application/json'
DS=$(curl -s -X POST -H "Authorization: Bearer $A" -H "$H" -d '{"name":"l","shape":[2],"range":[-1,1],"privacy":{"model":"local","mechanism":"laplace","epsilon":1,"sensitivity":2,"noise_scale":2}}' $U/v1/datasets | j id)
curl -s -o /dev/null -X POST -H "Authorization: Bearer $A" -H "$H" -d '{"rows":[[0.1,0.2],[0.3,0.4],[0.5,0.1],[0.2,0.2]]}' $U/v1/datasets/$DS/rows
JOB=$(curl -s -X POST -H "Authorization: Bearer $A" -H "$H" -d "{\"dataset_id\":\"$DS\",\"method\":\"entropic_gan\",\"model\":{\"hidden\":[8]},\"train\":{\"steps\":5,\"batch_size\":4},\"seed\":1}" $U/v1/jobs | j id)
B=$(curl -s -X POST -H "Authorization: Bearer $A" -H "$H" -d '{"scope":"admin","new_tenant":true}' $U/v1/tokens | j token)
sleep 2
python3 - "$U" "$B" "$JOB" <<'PY'
import http.client, statistics, sys, time
u, tok, job = sys.argv[1], sys.argv[2], sys.argv[3]
host, port = u[7:].split(":")
c = http.client.HTTPConnection(host, int(port))
def t(path):
    t0 = time.perf_counter(); c.request("GET", path, headers={"Authorization": "Bearer " + tok})
    r = c.getresponse(); r.read(); return (time.perf_counter() - t0) * 1e6, r.status
a, b = [], []
for i in range(1000):
    if i % 2:
        x, sa = t("/v1/jobs/" + job); y, sb = t("/v1/jobs/job_%016x" % (0xdead0000 + i))
    else:
        y, sb = t("/v1/jobs/job_%016x" % (0xdead0000 + i)); x, sa = t("/v1/jobs/" + job)
    a.append(x); b.append(y)
print("other tenant's job: %s, median %.0f us; unknown id: %s, median %.0f us; difference %.0f us" % (sa, statistics.median(a), sb, statistics.median(b), statistics.median(b) - statistics.median(a)))
PY
"$SRC/scripts/pgtest.sh" halt "$D/pg" >/dev/null 2>&1
echo "PostgreSQL halted; GET /v1/datasets:"; curl -s -i -H "Authorization: Bearer $A" $U/v1/datasets | grep -E "^HTTP|^Retry-After|detail"
echo "GET /readyz:"; curl -s $U/readyz; echo
kill $S; wait 2>/dev/null
"$SRC/scripts/pgtest.sh" stop "$D/pg" >/dev/null 2>&1; rm -rf "$(dirname "$D")"
