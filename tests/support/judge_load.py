#!/usr/bin/env python3
"""Judges the namespace join test's load: the loaders' tallies (door_load.py's
WORK/tally-*.json, merged) and the open loop's reports (WORK/pressure-*.json,
`spindle client load --json`). Prints each phase's counts; fails (exit 1,
naming why) on a wrong answer anywhere, a phase with no call answered, a call
refused in any phase but "lost" or refused there as anything but `unavailable`
(a dead rank's rows until the re-plan), rank 3's door answering nothing in
"joined" or "rejoined", or an open-loop status other than ok or unavailable
(unavailable only in a run that overlapped phase "lost").

usage: judge_load.py RANK3_DOOR WORK
"""
import glob
import json
import sys


def merged(work):
    tally = {}
    for f in sorted(glob.glob(work + "/tally-*.json")):
        for phase, doors in json.load(open(f)).items():
            for door, d in doors.items():
                t = tally.setdefault(phase, {}).setdefault(door, {
                    "right": 0, "wrong": 0, "refused": 0, "refusals": {}, "messages": [],
                    "wrong_calls": []})
                for k in ("right", "wrong", "refused"):
                    t[k] += d[k]
                for k, v in d["refusals"].items():
                    t["refusals"][k] = t["refusals"].get(k, 0) + v
                t["messages"] += d["messages"]
                t["wrong_calls"] += d["wrong_calls"]
    return tally


def judge_phases(tally, door3, bad):
    for phase, doors in tally.items():
        n = {k: sum(d[k] for d in doors.values()) for k in ("right", "wrong", "refused")}
        kinds = {}
        for d in doors.values():
            for k, v in d["refusals"].items():
                kinds[k] = kinds.get(k, 0) + v
        msgs = [m for d in doors.values() for m in d["messages"]][:2]
        print("phase %-9s %4d right, %d wrong, %d refused %s %s" % (
            phase, n["right"], n["wrong"], n["refused"], kinds or "", msgs or ""))
        if n["wrong"]:
            bad.append("%s: wrong answers for seeds %s" % (
                phase, [d["wrong_calls"] for d in doors.values()]))
        if n["right"] == 0 and phase not in ("joining", "rejoining"):
            bad.append("%s: no call answered" % phase)
        if n["refused"] and (phase != "lost" or set(kinds) != {"unavailable"}):
            bad.append("%s: refused %s %s" % (phase, kinds, msgs))
    for phase in ("joined", "rejoined"):
        if tally.get(phase, {}).get(door3, {}).get("right", 0) == 0:
            bad.append("%s: rank 3's door answered no call" % phase)


PHASES = ["three", "joining", "joined", "leaving", "left", "rejoining", "rejoined", "lost", "after"]


def overlaps_lost(phases_file):
    """Whether an open-loop run, begun and ended in the phases the file names,
    ran while phase "lost" did."""
    seen = open(phases_file).read().split()
    at = [PHASES.index(p) for p in seen if p in PHASES]
    lost = PHASES.index("lost")
    return len(at) != 2 or at[0] <= lost <= at[1]


def judge_open_loop(work, bad):
    runs, status = 0, {}
    for f in glob.glob(work + "/pressure-*.json"):
        text = open(f).read()
        try:
            j = json.loads(text)
        except ValueError:
            bad.append("open loop %s: %s" % (f.split("/")[-1], text.strip()[-300:]))
            continue
        runs += 1
        for k, v in j["status"].items():
            status[k] = status.get(k, 0) + v
        if j["status"].get("unavailable") and not overlaps_lost(f[:-len("json")] + "phases"):
            bad.append("open loop %s: %d refused as unavailable outside phase lost" % (
                f.split("/")[-1], j["status"]["unavailable"]))
    print("open loop through rank 0's door, 80 calls/s: %d runs, statuses %s" % (runs, status))
    if runs == 0 or set(status) - {"ok", "unavailable"}:
        bad.append("open loop: statuses %s" % status)


def main():
    door3, work = sys.argv[1], sys.argv[2]
    bad = []
    judge_phases(merged(work), door3, bad)
    judge_open_loop(work, bad)
    for b in bad:
        print("FAIL:", b)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
