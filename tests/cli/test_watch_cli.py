"""`privgen jobs watch` through streams that break: a proxy between the
client and a live privgend cuts the event stream after a few events (the
last one cut between its id and its data), and the server is stopped and
started again mid-watch. The watch must reconnect with Last-Event-ID set to
the id of the last event it received in full, so that no state is shown
twice and none after it is skipped, and end with the job's final state.

The proxy forwards requests unchanged and answers /events with the server's
events (the chunked body decoded, then close-delimited), recording every
request's Last-Event-ID and the events it delivered in full.

Usage: test_watch_cli.py PATH_TO_PRIVGEN PATH_TO_PRIVGEND. Exits nonzero on failure."""
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import live  # noqa: E402

BIN, DAEMON = sys.argv[1], sys.argv[2]
LIVE = live.Live(DAEMON, "privgen-watch-")
FAILS = []
RANK = {"queued": 0, "running": 1, "succeeded": 2, "failed": 2, "cancelled": 2}


def check(name, cond, detail=""):
    if not cond:
        FAILS.append(f"{name}: {detail}")


def order(eid):
    """An event id "status:step:checkpoint" as the server orders them."""
    st, step, ck = eid.split(":")
    return (RANK[st], int(step), int(ck))


def api(method, path, body=None, url=None):
    req = urllib.request.Request((url or LIVE.url) + path, method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Authorization": f"Bearer {LIVE.admin}",
                                          "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        raise RuntimeError(f"{method} {path}: {e.code} {e.read().decode()}") from None


def read_head(sock):
    data = b""
    while b"\r\n\r\n" not in data:
        b = sock.recv(4096)
        if not b:
            return None, b""
        data += b
    head, rest = data.split(b"\r\n\r\n", 1)
    return head.decode("latin-1"), rest


class Proxy:
    """Cuts the i-th event stream after cuts[i] full events (None: never)."""

    def __init__(self, backend_port, cuts):
        self.backend = backend_port
        self.cuts = list(cuts)
        self.lock = threading.Lock()
        self.requests = []   # (Last-Event-ID or None) of each /events request
        self.delivered = []  # (connection index, event type, id) of events sent in full
        self.refused = 0     # /events requests while the server was down
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            c, _ = self.sock.accept()
            threading.Thread(target=self.handle, args=(c,), daemon=True).start()

    def handle(self, c):
        try:
            self.relay(c)
        except OSError:
            pass
        finally:
            c.close()

    def relay(self, c):
        head, rest = read_head(c)
        if head is None:
            return
        lines = head.split("\r\n")
        events = "/events" in lines[0]
        lei = None
        for l in lines[1:]:
            k, _, v = l.partition(":")
            if k.strip().lower() == "last-event-id":
                lei = v.strip()
        try:
            b = socket.create_connection(("127.0.0.1", self.backend), timeout=5)
        except OSError:
            with self.lock:
                self.refused += events
            return  # the client sees the connection close: the server is down
        b.settimeout(120)
        with b:
            b.sendall(head.encode("latin-1") + b"\r\n\r\n" + rest)
            if not events:
                while True:
                    d = b.recv(65536)
                    if not d:
                        return
                    c.sendall(d)
            with self.lock:
                idx = len(self.requests)
                self.requests.append(lei)
                cut = self.cuts[idx] if idx < len(self.cuts) else None
            rhead, body = read_head(b)
            if rhead is None:
                return
            if not rhead.startswith("HTTP/1.1 200"):
                c.sendall(rhead.encode("latin-1") + b"\r\n\r\n" + body)
                while True:
                    d = b.recv(65536)
                    if not d:
                        return
                    c.sendall(d)
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                      b"Connection: close\r\n\r\n")
            self.events(b, c, body, idx, cut)

    def events(self, b, c, buf, idx, cut):
        """Decodes the chunked body and forwards it event by event."""
        text, sent = b"", 0
        while True:
            while b"\r\n" not in buf:
                d = b.recv(65536)
                if not d:
                    return
                buf += d
            size_line, buf = buf.split(b"\r\n", 1)
            size = int(size_line.split(b";")[0], 16)
            if size == 0:
                return
            while len(buf) < size + 2:
                d = b.recv(65536)
                if not d:
                    return
                buf += d
            text += buf[:size]
            buf = buf[size + 2:]
            while b"\n\n" in text:
                ev, text = text.split(b"\n\n", 1)
                fields = dict(l.split(": ", 1) for l in ev.decode().split("\n")
                              if ": " in l and not l.startswith(":"))
                if cut is not None and sent == cut:
                    # half an event: its id and type, not its data
                    part = "".join(f"{k}: {fields[k]}\n" for k in ("id", "event") if k in fields)
                    c.sendall(part.encode())
                    return
                c.sendall(ev + b"\n\n")
                if "data" in fields:
                    with self.lock:
                        self.delivered.append((idx, fields.get("event"), fields.get("id")))
                    sent += 1


def start_daemon(port_file):
    if os.path.exists(port_file):
        os.unlink(port_file)
    proc = subprocess.Popen([DAEMON, "--listen", "127.0.0.1:0", "--data-dir", LIVE.data,
                             "--port-file", port_file],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(2400):
        if os.path.exists(port_file):
            return proc, int(open(port_file).read())
        time.sleep(0.025)
    raise RuntimeError("privgend did not start")


server2 = None
try:
    rng = __import__("random").Random(7)
    rows = [[rng.gauss(0, 1), rng.gauss(0, 1)] for _ in range(400)]
    ds = api("POST", "/v1/datasets", {"name": "w", "shape": [2], "range": [-4, 4],
                                      "privacy": {"model": "local", "mechanism": "gaussian",
                                                  "epsilon": 1, "delta": 1e-5,
                                                  "sensitivity": 0.5, "noise_scale": 2.5}})["id"]
    api("POST", f"/v1/datasets/{ds}/rows", {"rows": rows})
    # long enough to be watched through three cuts and a restart
    job = api("POST", "/v1/jobs", {"dataset_id": ds, "method": "entropic_gan",
                                   "model": {"hidden": [16]},
                                   "train": {"steps": 150000, "batch_size": 32},
                                   "checkpoint_every": 500, "seed": 3})["id"]
    proxy = Proxy(int(LIVE.url.rsplit(":", 1)[1]), cuts=[2, 2, 1])
    env = LIVE.env()
    env["PRIVGEN_URL"] = f"http://127.0.0.1:{proxy.port}"
    watch = subprocess.Popen([BIN, "jobs", "watch", job, "--json"], env=env, cwd=LIVE.tmp,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # after the three cut streams, stop the server and start it again
    deadline = time.time() + 120
    while len(proxy.requests) < 4 and time.time() < deadline and watch.poll() is None:
        time.sleep(0.05)
    check("three cut streams", len(proxy.requests) >= 4, proxy.requests)
    LIVE.proc.terminate()
    LIVE.proc.wait(timeout=60)
    while proxy.refused < 1 and time.time() < deadline and watch.poll() is None:
        time.sleep(0.05)
    check("watched through the outage", watch.poll() is None and proxy.refused >= 1,
          (watch.poll(), proxy.refused))
    server2, port2 = start_daemon(os.path.join(LIVE.tmp, "port2"))
    LIVE.proc = server2
    proxy.backend = port2
    try:
        out, err = watch.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        watch.kill()
        out, err = watch.communicate()
    out, err = out.decode(), err.decode()
    check("watch exit", watch.returncode == 0, (watch.returncode, err[-2000:]))
    final = json.loads(out) if watch.returncode == 0 else {}
    check("final state", final.get("status") == "succeeded"
          and final.get("progress", {}).get("step") == 150000, out[-500:])

    with proxy.lock:
        requests, delivered = list(proxy.requests), list(proxy.delivered)
    check("done delivered", delivered and delivered[-1][1] == "done"
          and delivered[-1][2].startswith("succeeded:150000:"), delivered[-3:])
    # every reconnect names the last event delivered in full before it (the
    # half-sent event after a cut is not one of them)
    for i, lei in enumerate(requests):
        before = [d[2] for d in delivered if d[0] < i]
        want = before[-1] if before else None
        check(f"Last-Event-ID of stream {i}", lei == want, (lei, want))
    # no state twice across a reconnect, none out of order: the first event
    # of a resumed stream is strictly after the last one delivered before it
    # (the Last-Event-ID contract, api/h_events.c); within one stream ids
    # never decrease (two updates of one state, e.g. a view field other than
    # status, step and checkpoint, share its id: seen under ASan), and the
    # final `done` repeats the last progress event's id
    ids = [d for d in delivered]
    for (ia, ta, a), (ib, tb, b) in zip(ids, ids[1:]):
        if tb == "done":
            check("done repeats the final id", a == b, (a, b))
        elif ia != ib:
            check("ids increase across a reconnect", order(b) > order(a), (ia, a, ib, b))
        else:
            check("ids never decrease in a stream", order(b) >= order(a), (ia, a, ib, b))
    # what the watch printed: one line per event, never the same state twice
    lines = [l for l in err.splitlines() if l.startswith(("queued", "running", "succeeded"))]
    check("lines", len(lines) >= 5, err[-1000:])
    # piped (not a terminal): a line per 5 % of the steps and per change of
    # status, not one per event; and every reconnect is said
    check("a line per few percent", len(lines) <= 20 + 4 and len(lines) < len(delivered),
          (len(lines), len(delivered), err[-1500:]))
    steps = [int(l.split("step ", 1)[1].split("/", 1)[0]) for l in lines]
    check("lines move forward", steps == sorted(steps), steps)
    check("says it reconnects", err.count("the event stream ended; reconnecting") >= 3,
          err[-1500:])
    check("says it lost the server", "lost the server" in err and "reconnected" in err,
          err[-1500:])
    print(f"{len(requests)} streams (Last-Event-ID: {requests}), {len(delivered)} events, "
          f"{proxy.refused} refused while the server was down")
finally:
    if server2 is not None and server2.poll() is None:
        LIVE.proc = server2
    LIVE.stop()

if FAILS:
    for f in FAILS:
        print("FAIL", f)
    sys.exit(1)
print("ok")
