"""Checks a tuning database written by `mpirun -np K attnc tune` (tune-mpi.test).

Usage: check_mpi_trials.py EXPORT.json TABLE.txt RANKS

EXPORT.json is `attnc db export` of the database, TABLE.txt the run's table
(stdout). Checks that every trial belongs to one run, that no kernel's
schedule was measured twice at the same dims, that the database holds
exactly the candidate trials the table counts (none lost, none repeated),
and that each of the RANKS ranks measured some. Prints one line on success;
exits 1 with the reason otherwise.
"""
import json
import re
import sys
from collections import Counter


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def main():
    export, table, ranks = sys.argv[1], sys.argv[2], int(sys.argv[3])
    trials = json.load(open(export))["trials"]
    sessions = {t["session"] for t in trials}
    if len(sessions) != 1:
        fail("trials of %d runs: %s" % (len(sessions), sorted(sessions)))
    keys = Counter((t["signature"], t["dims"], t["schedule"]) for t in trials)
    repeated = [k for k, count in keys.items() if count > 1]
    if repeated:
        fail("measured twice: %s" % repeated)
    counted = 0
    for line in open(table):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 6 and cells[5].isdigit():
            counted += int(cells[5])
    candidates = [t for t in trials if not t["is_default"]]
    if len(candidates) != counted:
        fail("%d candidate trials in the database, %d in the table"
             % (len(candidates), counted))
    measured_by = set()
    for t in candidates:
        match = re.search(r"\(rank (\d+)\)$", t["host"])
        if not match:
            fail("trial %s has no rank in its host %r" % (t["schedule"], t["host"]))
        measured_by.add(int(match.group(1)))
    if measured_by != set(range(ranks)):
        fail("measured by ranks %s, expected %s" % (sorted(measured_by), list(range(ranks))))
    print("distributed trials ok: %d measured by ranks %s"
          % (len(candidates), ", ".join(map(str, sorted(measured_by)))))


if __name__ == "__main__":
    main()
