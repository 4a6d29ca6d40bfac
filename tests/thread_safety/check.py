#!/usr/bin/env python3
"""Clang's thread-safety analysis over the files that annotate shared state.

The build uses g++, where SPINDLE_GUARDED_BY and friends expand to nothing; this
test re-runs each listed file's compile command (from compile_commands.json)
with clang++ -fsyntax-only -Wthread-safety -Werror=thread-safety, so a read of
guarded state without its lock fails `make test`.
usage: check.py BUILD_DIR CLANGXX FILE...
"""
import json
import shlex
import subprocess
import sys


def unity_entry(commands, path):
    """A file compiled inside a unity source (several files as one unit) has no
    entry of its own: the unity source that includes it lends its command."""
    for file, entry in commands.items():
        if "/Unity/unity_" in file:
            try:
                if f'"{path}"' in open(file).read():
                    return entry
            except OSError:
                pass
    return None


def main():
    build, clang, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    commands = {e["file"]: e for e in json.load(open(f"{build}/compile_commands.json"))}
    failed = 0
    for path in files:
        entry = commands.get(path) or unity_entry(commands, path)
        if entry is None:
            print(f"{path}: not in {build}/compile_commands.json")
            failed += 1
            continue
        args = shlex.split(entry["command"])
        while args and not args[0].startswith("-") and "c++" not in args[0] and "g++" not in args[0]:
            args.pop(0)  # ccache
        kept, skip = [], False
        for a in args[1:]:
            if skip:
                skip = False
                continue
            if a in ("-o", "-MF", "-MT"):
                skip = True
                continue
            if a in ("-c", "-MD") or a == path or a == entry["file"]:
                continue
            kept.append(a)
        # Only the analysis speaks: g++'s warning flags are silenced, then it is enabled.
        cmd = [clang, "-fsyntax-only", *kept, "-Wno-everything", "-Wthread-safety",
               "-Werror=thread-safety", path]
        r = subprocess.run(cmd, cwd=entry["directory"], capture_output=True, text=True)
        status = "ok" if r.returncode == 0 else "FAILED"
        print(f"{status}: {path}")
        if r.returncode != 0:
            print(r.stderr[-4000:])
            failed += 1
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
