#!/usr/bin/env python3
"""The house rules of docs/house.md, checked on every source file.

Each folder has a rank; a file may include headers of its own folder and of
folders of lower rank, never of a higher one (nor of a folder that is not
below it in the table). The table is the map: change it only together with
docs/house.md. Exit 1 names every include that points the wrong way.
"""
import os
import re
import sys

# folder -> what it may include (besides itself). Engine modules form a stack
# of their own; everything above the engine may use all of it.
ENGINE_RANK = {
    "engine/core": 0,
    "engine/privacy": 1, "engine/ot": 1, "engine/pgm": 1,
    "engine/data": 2,
    "engine/checkpoint": 3, "engine/eval": 3,
    "engine/nn": 4,
    "engine/methods": 5,
}
ABOVE_ENGINE = {
    # layer: the layers (path prefixes) it may include
    "render": ["engine"],
    "service": ["engine", "render"],
    "api": ["service", "render", "engine"],
    "daemon": ["api", "service", "render", "engine"],
    "cli": ["engine"],
    "bench": ["service", "render", "engine"],
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def owner(path):
    """The folder a repo path belongs to, as the tables name it."""
    parts = path.split("/")
    if parts[0] == "engine" and len(parts) > 2:
        return "engine/" + parts[1]
    return parts[0]


def allowed(src, dst):
    if src == dst:
        return True
    if src.startswith("engine/"):
        return dst in ENGINE_RANK and ENGINE_RANK[dst] <= ENGINE_RANK[src]
    if dst.startswith("engine/"):
        dst = "engine"
    return dst in ABOVE_ENGINE.get(src, [])


def check(root, verbose=False):
    bad = []
    seen = 0
    for top in list(ABOVE_ENGINE) + ["engine"]:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in files:
                if not name.endswith((".c", ".h")):
                    continue
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, root)
                src = owner(rel)
                if src.startswith("engine/") and src not in ENGINE_RANK:
                    bad.append(f"{rel}: engine folder {src} has no rank in the map")
                    continue
                with open(full, encoding="utf-8", errors="replace") as f:
                    for no, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m or "/" not in m.group(1):
                            continue  # same-folder or system-style includes
                        dst = owner(m.group(1))
                        if not os.path.exists(os.path.join(root, m.group(1))):
                            continue  # generated or test-support headers
                        seen += 1
                        if not allowed(src, dst):
                            bad.append(f"{rel}:{no}: {src} includes {m.group(1)} ({dst})")
    return seen, bad


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    seen, bad = check(os.path.abspath(root))
    for b in bad:
        print(b)
    print(f"{seen} includes checked, {len(bad)} against the map")
    if seen < 100:
        print("too few includes found: is the root right?")
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
