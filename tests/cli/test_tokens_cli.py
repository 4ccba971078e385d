"""End-to-end tests of `privgen tokens list|create|revoke` against a live
privgend (port 0, temporary data dir): human output and --json, expiry
options, revocation taking effect at once, exit codes 0/1/2.

Usage: test_tokens_cli.py PATH_TO_PRIVGEN PATH_TO_PRIVGEND. Exits nonzero on failure."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import live  # noqa: E402

BIN, DAEMON = sys.argv[1], sys.argv[2]
LIVE = live.Live(DAEMON, "privgen-tokens-")
TMP, URL, ADMIN = LIVE.tmp, LIVE.url, LIVE.admin
FAILS = []


def run(*args, token=ADMIN):
    return LIVE.run(BIN, args, token, timeout=60)


def check(name, cond, detail=""):
    if not cond:
        FAILS.append(f"{name}: {detail}")


try:
    rc, out, err = run("tokens", "--help")
    check("help", rc == 0 and "revoke ID" in out and "--expires-in" in out, out + err)
    rc, out, err = run("--help")
    check("listed in usage", rc == 0 and "tokens" in out, out)

    # create: human output is the token alone on stdout
    rc, out, err = run("tokens", "create", "--scope", "read", "--expires-in", "2h")
    reader = out.strip()
    check("create human", rc == 0 and reader.startswith("pgt_") and len(reader) == 53, out + err)
    check("create note", "expires 20" in err and " UTC" in err and "shown only once" in err, err)
    rid = "tok_" + reader[4:20]
    # --json: the server's response, expiry two hours ahead
    now = int(time.time())
    rc, out, err = run("tokens", "create", "--scope", "admin", "--expires-in", "7d", "--json")
    j = json.loads(out) if rc == 0 else {}
    check("create json", rc == 0 and j.get("scope") == "admin"
          and now + 7 * 86400 - 5 <= j.get("expires_at", 0) <= now + 7 * 86400 + 5, out + err)
    admin2, aid2 = j.get("token", ""), j.get("id", "")

    # list: table with status and the current marker; --json has no secrets
    rc, out, err = run("tokens", "list")
    check("list human", rc == 0 and "STATUS" in out and rid in out and "never" in out, out + err)
    mine = [l for l in out.splitlines() if l.startswith("*")]
    check("current marked", len(mine) == 1 and "admin" in mine[0], out)
    rc, out, err = run("tokens", "list", "--json")
    j = json.loads(out) if rc == 0 else {}
    check("list json", rc == 0 and len(j.get("items", [])) == 3, out + err)
    check("no secrets", reader[21:] not in out and admin2[21:] not in out, out)
    rc, out, err = run("tokens", "list", "--limit", "2", "--json")
    j = json.loads(out) if rc == 0 else {}
    check("paged", rc == 0 and len(j["items"]) == 2 and j["next_cursor"], out + err)
    rc, out, err = run("tokens", "list", "--limit", "2", "--cursor", j.get("next_cursor", ""), "--json")
    check("page 2", rc == 0 and len(json.loads(out)["items"]) == 1, out + err)

    # revoke: the reader revokes itself, then is refused at once
    rc, out, err = run("tokens", "revoke", rid, token=reader)
    check("revoke self", rc == 0 and out.strip() == f"revoked {rid}", out + err)
    rc, out, err = run("datasets", "list", token=reader)
    check("revoked refused", rc == 1 and "revoked" in err, out + err)
    rc, out, err = run("tokens", "revoke", aid2, "--json")
    check("revoke json", rc == 0 and json.loads(out) == {"id": aid2, "revoked": True}, out + err)
    # the bootstrap admin is now the last one
    rc, out, err = run("tokens", "list", "--json")
    boot = [t["id"] for t in json.loads(out)["items"] if t["current"]][0]
    rc, out, err = run("tokens", "revoke", boot)
    check("last admin", rc == 1 and "last usable admin" in err and "409" in err, out + err)
    rc, out, err = run("tokens", "revoke", "tok_0000000000000000")
    check("unknown id", rc == 1 and "404" in err, out + err)

    # usage errors: exit 2, nothing sent
    for args in (["tokens"], ["tokens", "frob"], ["tokens", "revoke"],
                 ["tokens", "create"], ["tokens", "create", "--scope", "root"],
                 ["tokens", "create", "--scope", "read", "--expires-in", "soon"],
                 ["tokens", "create", "--scope", "read", "--expires-in", "1h", "--expires-at", "9"],
                 ["tokens", "revoke", "a/b"]):
        rc, out, err = run(*args)
        check("usage " + " ".join(args), rc == 2 and out == "" and err.startswith("privgen:"),
              f"{rc} {out} {err}")
    # the server's validation comes back as exit 1 with the field
    rc, out, err = run("tokens", "create", "--scope", "read", "--expires-in", "10")
    check("server 422", rc == 1 and "expires_in" in err, out + err)
finally:
    LIVE.stop()

for f in FAILS:
    print("FAIL", f)
print(f"{'FAILED' if FAILS else 'ok'}: {len(FAILS)} failures")
sys.exit(1 if FAILS else 0)
