"""What the offline tests of the `privgen` binary (test_cli.py, test_tables.py)
share: running it, a scratch directory, the case decorator that records a
failed case and goes on, the checks of a usage error, and the end of a run."""
import os
import shutil
import subprocess
import sys
import tempfile


class Harness:
    def __init__(self, binary, prefix):
        self.bin = binary
        self.tmp = tempfile.mkdtemp(prefix=prefix)
        self.fails = []

    def run(self, *args, stdin=None):
        p = subprocess.run([self.bin, *map(str, args)], capture_output=True, text=True,
                           timeout=60, input=stdin)
        return p.returncode, p.stdout, p.stderr

    def usage_error(self, *args, out_path=None):
        """args exit 2 with nothing on stdout, a "privgen: " message on
        stderr (returned), and out_path (when given) not written."""
        rc, out, err = self.run(*args)
        assert rc == 2, f"{args}: expected exit 2, got {rc} (stdout {out!r}, stderr {err!r})"
        assert out == "", f"{args}: stdout must be empty on error, got {out!r}"
        assert err.startswith("privgen: "), f"{args}: stderr {err!r}"
        if out_path is not None:
            assert not os.path.exists(out_path), f"{args}: {out_path} was written"
        return err

    def case(self, fn):
        try:
            fn()
            print(f"ok   {fn.__name__}")
        except AssertionError as e:
            self.fails.append(fn.__name__)
            print(f"FAIL {fn.__name__}: {e}")
        return fn

    def path(self, name):
        return os.path.join(self.tmp, name)

    def finish(self):
        """Removes the scratch directory; exits 1 naming the failed cases."""
        shutil.rmtree(self.tmp, ignore_errors=True)
        if self.fails:
            print(f"{len(self.fails)} failed: {', '.join(self.fails)}")
            sys.exit(1)
        print("all passed")
