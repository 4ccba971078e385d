#!/bin/bash
# 30.8 probe: kill -9 during a 4M-row NPY upload on SQLite, then restart.
# usage: issue30_spool.sh PRIVGEND
BIN=$1; D=$(mktemp -d /tmp/probe30s-XXXX)
start() { rm -f $D/port; $BIN --listen 127.0.0.1:0 --data-dir $D --port-file $D/port 2>>$D/log & PID=$!; for i in $(seq 100); do [ -s $D/port ] && break; sleep 0.1; done; URL=http://127.0.0.1:$(cat $D/port); TOK=$(cat $D/admin.token); }
start
DS=$(curl -s -H "Authorization: Bearer $TOK" -H 'Content-Type: application/json' $URL/v1/datasets \
  -d '{"name":"p","shape":[2],"range":[-1,1],"privacy":{"model":"public"}}' | python3 -c 'import json,sys;print(json.load(sys.stdin)["id"])')
/usr/bin/python3 -c 'import numpy as np; np.save("'$D'/big.npy", np.zeros((4000000,2),np.float32))'
curl -s --limit-rate 2M -H "Authorization: Bearer $TOK" -H 'Content-Type: application/x-npy' --data-binary @$D/big.npy $URL/v1/datasets/$DS/rows >/dev/null 2>&1 &
sleep 3; kill -9 $PID; wait $PID 2>/dev/null
echo "after kill -9: $(ls -la $D/datasets/$DS/ | grep -c '\.tmp-') spool file(s): $(du -sh $D/datasets/$DS | cut -f1)"
start
sleep 0.5
echo "after restart: $(ls -la $D/datasets/$DS/ | grep -c '\.tmp-') spool file(s): $(du -sh $D/datasets/$DS | cut -f1)"
kill $PID; wait $PID 2>/dev/null; rm -rf $D
