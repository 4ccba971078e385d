"""Issue 30 item 3 probe: 20 sockets send request headers one byte every 2 s
to a privgend with --max-connections 20; /healthz is tried with a 3 s timeout.
Usage: issue30_slowloris.py BIN"""
import shutil, os, socket, subprocess, sys, tempfile, time
BIN = sys.argv[1]
d = tempfile.mkdtemp(prefix="h30p3-")
port = 18800 + os.getpid() % 90
p = subprocess.Popen([BIN, "--listen", f"127.0.0.1:{port}", "--data-dir", d, "--max-connections", "20"], stderr=subprocess.DEVNULL)
time.sleep(1.5)
hdr = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 200 + b"\r\n\r\n"
socks = []
for i in range(20):
    s = socket.create_connection(("127.0.0.1", port)); s.setblocking(False); socks.append([s, 0, None])
t0 = time.time()
def health():
    try:
        c = socket.create_connection(("127.0.0.1", port), timeout=3)
        c.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        c.settimeout(3); r = c.recv(64); c.close()
        return r.split(b"\r\n")[0].decode() or "closed"
    except Exception as e:
        return type(e).__name__
checks = {5: None, 15: None, 35: None}
while time.time() - t0 < 40:
    now = time.time() - t0
    for e in socks:
        if e[2] is None:
            try:
                e[0].send(hdr[e[1]:e[1] + 1]); e[1] += 1
                try:
                    if e[0].recv(1) == b"": e[2] = now
                except BlockingIOError: pass
            except (BrokenPipeError, ConnectionResetError): e[2] = now
    for t in checks:
        if checks[t] is None and now >= t: checks[t] = health()
    time.sleep(2)
cut = sorted(round(e[2], 1) for e in socks if e[2] is not None)
print("healthz at 5 s / 15 s / 35 s:", checks[5], "/", checks[15], "/", checks[35])
print("slow sockets cut by the server within 40 s: %d of 20%s" % (len(cut), (", at %s..%s s" % (cut[0], cut[-1])) if cut else ""))
p.terminate(); p.wait()
shutil.rmtree(d, ignore_errors=True)
