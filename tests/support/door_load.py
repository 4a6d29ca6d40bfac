#!/usr/bin/env python3
"""A load of seeded GNN calls through a cluster's doors, each answer compared
with one process's answer to the same call. Used by the namespace join test.

usage: door_load.py SPINDLE WANT_JSON DOORS_FILE PHASE_FILE STOP_FILE OUT_JSON [FIRST]

WANT_JSON: a list of {"seed", "sampler_seed", "outputs"} (one process's answers).
DOORS_FILE: the doors to call, one HOST:PORT a line, read again before every call
(the test adds a joined rank's door and takes it away before the rank goes).
PHASE_FILE: the phase's name, read before every call; each call is tallied under
it and the door it went to. Runs until STOP_FILE exists, then writes OUT_JSON:
{phase: {door: {"right", "wrong", "refused", "refusals": {status: n},
"messages": [first few refusal messages], "wrong_calls": [...]}}}.
FIRST (default 0): the index of the first call, so that loaders side by side
make different calls.
"""
import json
import os
import subprocess
import sys
import time


def read(path, default=""):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return default


def call(spindle, door, want):
    out = subprocess.run(
        [spindle, "client", "--connect", door, "--model", "graphsage", "infer", "--seeds",
         str(want["seed"]), "--sampler-seed", str(want["sampler_seed"]), "--json"],
        capture_output=True, text=True, timeout=120)
    try:
        a = json.loads(out.stdout)
    except ValueError:
        return "refused", "no-json", (out.stdout + out.stderr).strip()[:300]
    if a.get("status") != "ok":
        return "refused", str(a.get("status")), str(a.get("message", ""))[:300]
    return ("right" if a["outputs"] == want["outputs"] else "wrong"), "ok", ""


def main():
    spindle, want_file, doors_file, phase_file, stop_file, out_file = sys.argv[1:7]
    wants = json.load(open(want_file))
    tally = {}
    i = int(sys.argv[7]) if len(sys.argv) > 7 else 0
    while not os.path.exists(stop_file):
        doors = [d.strip() for d in read(doors_file).split() if d.strip()]
        phase = read(phase_file, "start").strip() or "start"
        if not doors:
            time.sleep(0.1)
            continue
        door = doors[i % len(doors)]
        want = wants[i % len(wants)]
        i += 1
        verdict, status, message = call(spindle, door, want)
        t = tally.setdefault(phase, {}).setdefault(
            door, {"right": 0, "wrong": 0, "refused": 0, "refusals": {}, "messages": [],
                   "wrong_calls": []})
        t[verdict] += 1
        if verdict == "refused":
            t["refusals"][status] = t["refusals"].get(status, 0) + 1
            if len(t["messages"]) < 3:
                t["messages"].append(message)
        elif verdict == "wrong" and len(t["wrong_calls"]) < 3:
            t["wrong_calls"].append(want["seed"])
        with open(out_file + ".tmp", "w") as f:
            json.dump(tally, f)
        os.replace(out_file + ".tmp", out_file)
    with open(out_file + ".tmp", "w") as f:
        json.dump(tally, f)
    os.replace(out_file + ".tmp", out_file)


if __name__ == "__main__":
    main()
