"""Kills `attnc tune` with SIGKILL in the middle of a run, resumes it, and
checks the tuning database: it passes SQLite's integrity check, every trial
committed before the kill is still there unchanged, the resumed run added to
the same session, no trial was measured twice, and the trials recorded are
exactly the ones the finished run reports.

  python3 tune_kill_resume.py ATTNC MODEL.attn DB
"""
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

attnc, model, path = sys.argv[1:4]
args = [attnc, "tune", model, "--dim", "n=16", "--dim", "b=1", "--db", path,
        "--trials", "12", "--min-time", "0.05"]


def rows():
    with sqlite3.connect("file:%s?mode=ro" % path, uri=True) as db:
        return db.execute(
            "SELECT id, session, signature, dims, schedule, is_default, "
            "median_ms FROM trials ORDER BY id").fetchall()


def integrity():
    with sqlite3.connect(path) as db:
        return db.execute("PRAGMA integrity_check").fetchone()[0]


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


tune = subprocess.Popen(args, stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL)
deadline = time.time() + 300
killed_after = 0
while time.time() < deadline:
    if tune.poll() is not None:
        fail("attnc tune finished (status %d) before it could be killed"
             % tune.returncode)
    try:
        killed_after = len(rows())
    except sqlite3.Error:
        killed_after = 0
    if killed_after >= 6:  # the defaults of the first kernels and a few trials
        break
    time.sleep(0.02)
os.kill(tune.pid, signal.SIGKILL)
tune.wait()
before = rows()
if integrity() != "ok":
    fail("integrity check after the kill: " + integrity())

resumed = subprocess.run(args + ["--resume", "--json"], capture_output=True,
                         text=True)
if resumed.returncode != 0:
    fail("the resumed run failed:\n" + resumed.stderr)
if "resuming run" not in resumed.stderr:
    fail("the resumed run did not say it resumed:\n" + resumed.stderr)
after = rows()
if integrity() != "ok":
    fail("integrity check after the resumed run: " + integrity())
if after[:len(before)] != before:
    fail("trials committed before the kill changed or were lost")
sessions = {row[1] for row in after}
if len(sessions) != 1:
    fail("the resumed run wrote to another session: %s" % sessions)
keys = [(row[2], row[3], row[4]) for row in after]
if len(keys) != len(set(keys)):
    fail("a trial was measured twice")
report = json.loads(resumed.stdout)
measured = sum(k["trials"] for k in report["kernels"])
candidates = sum(1 for row in after if not row[5])
defaults = sum(1 for row in after if row[5])
if candidates != measured:
    fail("%d candidate trials recorded, the run reports %d" % (candidates, measured))
if defaults != len(report["kernels"]):
    fail("%d default trials for %d kernels" % (defaults, len(report["kernels"])))
print("resume ok: %d trials before the kill, %d after; %d candidates, "
      "%d defaults" % (len(before), len(after), candidates, defaults))
