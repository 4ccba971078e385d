"""A live privgend for the CLI tests: started on port 0 with a temporary
data dir, and the privgen client run against it with a clean environment
(no PRIVGEN_* from the caller, its own XDG config dir)."""
import os
import shutil
import subprocess
import tempfile
import time


class Live:
    def __init__(self, daemon, prefix):
        self.tmp = tempfile.mkdtemp(prefix=prefix)
        self.data = os.path.join(self.tmp, "var")
        port = os.path.join(self.tmp, "port")
        self.proc = subprocess.Popen([daemon, "--listen", "127.0.0.1:0", "--data-dir", self.data,
                                      "--port-file", port],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        token = os.path.join(self.data, "admin.token")
        for _ in range(400):
            if os.path.exists(port) and os.path.exists(token):
                break
            time.sleep(0.025)
        self.url = "http://127.0.0.1:" + open(port).read().strip()
        self.admin = open(token).read().strip()

    def env(self, token=None):
        e = {k: v for k, v in os.environ.items() if not k.startswith("PRIVGEN_")}
        e.update(XDG_CONFIG_HOME=os.path.join(self.tmp, "cfg"), PRIVGEN_URL=self.url,
                 PRIVGEN_TOKEN=token or self.admin)
        return e

    def run(self, binary, args, token=None, timeout=120):
        """(exit code, stdout, stderr) of `binary args...` run in the scratch dir."""
        p = subprocess.run([binary, *map(str, args)], capture_output=True, env=self.env(token),
                           cwd=self.tmp, timeout=timeout)
        return p.returncode, p.stdout.decode(), p.stderr.decode()

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.tmp, ignore_errors=True)
