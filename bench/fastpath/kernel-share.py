#!/usr/bin/env python3
"""What the kernel fast path carried, from a mediarelay /v1/stats JSON document on stdin: prints
"DATAGRAMS ON ENTRIES HANDED_BACK MODES" (MODES: each interface's mode, e.g. tc,tc: an xdp
request an interface refused runs tc there), or "- - - - -" when the document has no fast_path object
(a build without the fast path). For bench/fastpath-cpu.sh's tc and xdp columns, so that a
column whose datagrams all went through user space shows as such."""
import json
import sys

try:
    fast = json.load(sys.stdin).get("fast_path")
except ValueError:
    fast = None
if not isinstance(fast, dict):
    print("- - - - -")
else:
    handed = fast.get("handed_back", {})
    modes = ",".join(str(i.get("mode", "?")) for i in fast.get("interfaces", []) if isinstance(i, dict)) or "-"
    print(fast.get("datagrams", 0), 1 if fast.get("on") else 0, fast.get("entries", 0),
          sum(handed.values()) if isinstance(handed, dict) else handed, modes)
