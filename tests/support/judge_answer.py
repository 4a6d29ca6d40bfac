#!/usr/bin/env python3
"""Judges one `spindle client infer --json` answer against one process's answer
to the same call: prints "right" (ok and the same outputs), "refused" (not
JSON, or a status other than ok) or "wrong". Shared by the cluster fault tests.

usage: judge_answer.py ANSWER_JSON REFERENCE_JSON
"""
import json
import sys

try:
    a = json.loads(sys.argv[1])
except ValueError:
    print("refused")
    sys.exit()
b = json.loads(sys.argv[2])
print("refused" if a.get("status") != "ok" else ("right" if a["outputs"] == b["outputs"] else "wrong"))
