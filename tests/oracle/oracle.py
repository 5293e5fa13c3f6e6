#!/usr/bin/env python3
"""The durability oracle: a randomized, differential tester of README's
promises (tests/oracle/README.md says what it checks and how to use it).

  oracle.py run   [--seconds N] [--cases N] [--class C] [--seed S] [--jobs J]
  oracle.py seeds SEED... [--class C]        the fixed list make test runs
  oracle.py replay SEED | CASEFILE [--class C] [--keep DIR]
  oracle.py shrink SEED | CASEFILE [--class C]
  oracle.py show SEED [--class C]            print the generated case

A case is a small program (per-thread op lists, a forked child's list, a
signal handler's list, config variants, faults) that tests/oracle/runner
carries out. Each case runs twice: under the recording layer alone (the
baseline) and with the shim above it. The oracle then checks the shim run
against the recording layer's truth and against the baseline.
"""
import fnmatch
import hashlib
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

BUILD = os.environ.get("SYNCSHIM_BUILD") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "build")
BUILD = os.path.abspath(BUILD)
RUNNER = os.path.join(BUILD, "tests/oracle/runner")
SHIM = os.environ.get("SYNCSHIM_LIB") or os.path.join(BUILD, "libsyncshim.so")
RECLAYER = os.path.join(BUILD, "tests/lib/reclayer.so")
SYNCLAT = os.path.join(BUILD, "synclat")

HANG_S = float(os.environ.get("ORACLE_HANG_S", "20"))
# How late a deferred sync may land past its window: scheduling on a
# loaded 2-core machine, one real sync, the flusher's wake-up.
TOL_NS = int(float(os.environ.get("ORACLE_TOL_MS", "600")) * 1e6)
IOERRS = {5: "EIO", 28: "ENOSPC", 122: "EDQUOT"}
CLASSES = ["mix", "group_fail", "daemon", "exits", "fdrace", "names", "fork", "threads", "nofile",
           "temp", "changes", "sysexit", "domain", "log", "trap", "msync"]
NFILES = 4
POLICIES = ["passthrough", "fdatasync", "noop", "defer", "group"]
RANK = {"noop": 0, "defer": 1, "passthrough": 2, "fdatasync": 2, "group": 2}

# ---- the generator ----------------------------------------------------------


class Case:
    def __init__(self, seed, cls):
        self.seed, self.cls = seed, cls
        self.files = ["f%d.dat" % i for i in range(NFILES)]
        self.threads = [[]]      # op lists: [name, args...]
        self.children = []
        self.handler = []
        self.variants = []       # config variants: dict, or None for a broken one
        self.shim = {}           # [shim] keys
        self.exit = ("return", 0)
        self.child_exit = 0
        self.cancel_async = 0
        self.closed012 = False
        self.fail = ""           # RECLAYER_FAIL
        self.fail_suffix = ".dat"  # RECLAYER_FAIL_SUFFIX: the files faults hit
        self.slow = ""           # RECLAYER_SLOW (0:MS = every file)
        self.xrules = []         # (glob, rule): files beyond f0..f3 (*.tmp, *.many), in every variant
        self.hold = ""           # the shim's test hold point for the run with the shim (awaitheld, release)

    # text form: read by the runner (it skips the lines it does not know)
    def text(self):
        out = ["# oracle case: seed %d class %s" % (self.seed, self.cls), "seed %d" % self.seed,
               "class %s" % self.cls]
        for i, f in enumerate(self.files):
            out.append("file %d %s" % (i, f))
        out.append("threads %d" % len(self.threads))
        out.append("exit %s %d" % self.exit)
        out.append("child_exit %d" % self.child_exit)
        out.append("cancel_async %d" % self.cancel_async)
        out.append("closed012 %d" % int(self.closed012))
        if self.fail:
            out.append("fail %s" % self.fail)
        if self.fail_suffix != ".dat":
            out.append("fail_suffix %s" % self.fail_suffix)
        if self.hold:
            out.append("hold %s" % self.hold)
        for pat, rule in self.xrules:
            out.append("xrule %s %s" % (pat, " ".join("%s=%s" % kv for kv in sorted(rule.items()))))
        if self.slow:
            out.append("slow %s" % self.slow)
        for k, v in self.shim.items():
            out.append("shim %s %s" % (k, v))
        for k, var in enumerate(self.variants):
            if var is None:
                out.append("variant %d broken" % k)
                continue
            for i, rule in sorted(var.items()):
                out.append("variant %d %d %s" % (k, i, " ".join("%s=%s" % kv for kv in sorted(rule.items()))))
        for t, ops in enumerate(self.threads):
            out += ["T%d %s" % (t, " ".join(map(str, op))) for op in ops]
        for c, ops in enumerate(self.children):
            out += ["C%d %s" % (c, " ".join(map(str, op))) for op in ops]
        out += ["H0 %s" % " ".join(map(str, op)) for op in self.handler]
        return "\n".join(out) + "\n"

    @staticmethod
    def parse(text):
        c = Case(0, "mix")
        c.threads, c.variants = [], []
        nthreads = 1
        for ln in text.splitlines():
            w = ln.split()
            if not w or w[0].startswith("#"):
                continue
            if w[0] == "seed":
                c.seed = int(w[1])
            elif w[0] == "class":
                c.cls = w[1]
            elif w[0] == "threads":
                nthreads = int(w[1])
            elif w[0] == "exit":
                c.exit = (w[1], int(w[2]))
            elif w[0] == "child_exit":
                c.child_exit = int(w[1])
            elif w[0] == "cancel_async":
                c.cancel_async = int(w[1])
            elif w[0] == "closed012":
                c.closed012 = w[1] == "1"
            elif w[0] == "fail":
                c.fail = w[1]
            elif w[0] == "slow":
                c.slow = w[1]
            elif w[0] == "fail_suffix":
                c.fail_suffix = w[1]
            elif w[0] == "hold":
                c.hold = w[1]
            elif w[0] == "xrule":
                c.xrules.append((w[1], dict(x.split("=", 1) for x in w[2:])))
            elif w[0] == "shim":
                c.shim[w[1]] = " ".join(w[2:])
            elif w[0] == "variant":
                k = int(w[1])
                while len(c.variants) <= k:
                    c.variants.append({})
                if w[2] == "broken":
                    c.variants[k] = None
                else:
                    c.variants[k][int(w[2])] = dict(x.split("=", 1) for x in w[3:])
            elif re.match(r"^[TCH]\d+$", w[0]):
                n = int(w[0][1:])
                op = [w[1]] + [int(x) for x in w[2:]]
                lst = c.threads if w[0][0] == "T" else c.children if w[0][0] == "C" else None
                if lst is None:
                    c.handler.append(op)
                    continue
                while len(lst) <= n:
                    lst.append([])
                lst[n].append(op)
        while len(c.threads) < nthreads:
            c.threads.append([])
        return c

    def ini(self, k, d):
        """The ini text of variant k, with the data directory d."""
        var = self.variants[k]
        if var is None:
            return "[shim]\npolicy = passthrough\nthis line is not ini\n"
        lines = ["[shim]", "policy = passthrough"]
        lines += ["%s = %s" % (a, b.replace("@DIR@", d)) for a, b in self.shim.items()]
        for i, rule in sorted(var.items()):
            lines += ["", "[rule r%d]" % i, "path = %s/%s" % (d, self.files[i])]
            lines += ["%s = %s" % kv for kv in sorted(rule.items())]
        for n, (pat, rule) in enumerate(self.xrules):
            lines += ["", "[rule x%d]" % n, "path = %s/%s" % (d, pat)]
            lines += ["%s = %s" % kv for kv in sorted(rule.items())]
        # The runner's journal keeps no order: inline_syscalls = trap shows
        # the shim its journal lines (runner.c, raw()), which would
        # otherwise wait for every deferred sync acknowledged before them.
        lines += ["", "[rule oracle-journal]", "path = %s/journal" % d, "sync = noop"]
        return "\n".join(lines) + "\n"

    def nops(self):
        return sum(map(len, self.threads)) + sum(map(len, self.children)) + len(self.handler)

    def uses(self, op):
        return any(o[0] == op for lst in self.threads + self.children + [self.handler] for o in lst)


def rand_rule(r, policy=None):
    p = policy or r.choice(POLICIES)
    rule = {"sync": p}
    if p == "defer":
        rule["max_delay_ms"] = r.choice(["auto", "5", "20", "50", "100"])
        if r.random() < 0.5:
            rule["osync"] = r.choice(["auto", "defer", "keep", "dsync", "strip"])
        if r.random() < 0.3:
            rule["on_close"] = r.choice(["async", "sync"])
    if p in ("defer", "group") and r.random() < 0.3:
        rule["real_sync"] = r.choice(["auto", "fdatasync", "fsync"])
    if p == "group" and r.random() < 0.5:
        rule["group_wait_us"] = r.choice(["auto", "0", "200"])
    if p in ("passthrough", "fdatasync") and r.random() < 0.2:
        rule["osync"] = r.choice(["keep", "dsync"])
    return rule


def rand_variant(r, bias=None):
    return {i: rand_rule(r, bias(i) if bias else None) for i in range(NFILES)}


class Gen:
    """Random ops over the slots and files; each class biases the shapes."""

    def __init__(self, r, case):
        self.r, self.c = r, case

    def open(self, slot=None, file=None, sync=None):
        r = self.r
        fl = sync if sync is not None else r.choice([0, 0, 0, 1, 2])
        if r.random() < 0.1:
            fl |= 4
        if r.random() < 0.2:
            fl |= 8
        return ["open", slot if slot is not None else r.randrange(6),
                file if file is not None else r.randrange(NFILES), fl]

    def write(self, slot=None):
        r = self.r
        s = slot if slot is not None else r.randrange(6)
        kind = r.choice(["write", "write", "pwrite", "writev", "pwritev", "pwritev2", "pwritev2", "cfr"])
        n = r.choice([1, 16, 100, 512, 4096])
        if kind == "cfr":
            return ["cfr", s, n]
        return [kind, s, n, r.randrange(0, 8192), r.choice([0, 1, 2]) if kind == "pwritev2" else 0]

    def sync(self, slot=None):
        r = self.r
        s = slot if slot is not None else r.randrange(6)
        return [r.choice(["fsync", "fsync", "fdatasync", "fdatasync", "sfr", "syncfs"]), s]

    def any_op(self):
        r = self.r
        x = r.random()
        if x < 0.25:
            return self.write()
        if x < 0.45:
            return self.sync()
        if x < 0.55:
            return self.open()
        if x < 0.60:
            return ["close", r.randrange(6)]
        if x < 0.64:
            return [r.choice(["dup", "dup2", "dup3"]), r.randrange(6), r.randrange(6), r.randrange(2)]
        if x < 0.66:
            return ["dup2bad", r.randrange(6)]
        if x < 0.67:
            return ["close_range", r.randrange(6), r.randrange(6)]
        if x < 0.71:
            return [r.choice(["rename", "link", "unlink"]), r.randrange(NFILES), r.randrange(NFILES)]
        if x < 0.74:
            return ["mmap", r.randrange(2), r.randrange(6)]
        if x < 0.78:
            return [r.choice(["mwrite", "mwrite", "msync", "munmap"]), r.randrange(2)]
        if x < 0.80:
            return ["sync"]
        if x < 0.83 and len(self.c.variants) > 1:
            return ["reload", r.randrange(len(self.c.variants)), r.choice([0, 0, 300])]
        if x < 0.85:
            return ["sleep", r.choice([1, 5, 30])]
        if x < 0.87 and self.c.handler:
            return ["kill", r.randrange(len(self.c.threads))]
        return self.write()

    def prologue(self):
        """Open every slot on some file so most later ops have a target."""
        return [self.open(slot=s, file=s % NFILES) for s in range(6)]


def faults(r, c, p_fail=0.5):
    if r.random() < p_fail:
        op = r.choice(["sync", "sync", "sync", "fsync", "fdatasync", "write", "pwrite", "close", "msync"])
        err = r.choice(["EIO", "EIO", "ENOSPC"])
        c.fail = "%s:%s:%d:%d" % (op, err, r.randrange(0, 12), r.choice([0, 1, 1, 2, 5]))
    if r.random() < 0.2:
        c.slow = "0:%d" % r.choice([5, 20, 80])


def shim_keys(r, c, log=None):
    c.shim["reload"] = "true"
    c.shim["unreported_errors"] = r.choice(["warn", "exit"])
    if log if log is not None else r.random() < 0.3:
        c.shim["log"] = "@DIR@/shim.%p.log"
        c.shim["log_mode"] = r.choice(["summary", "calls"])


def generate(seed, cls):
    r = random.Random("%s:%d" % (cls, seed))
    c = Case(seed, cls)
    g = Gen(r, c)
    shim_keys(r, c)
    nvar = r.choice([1, 1, 2, 3])
    c.variants = [rand_variant(r) for _ in range(nvar)]
    c.exit = (r.choice(["return", "exit", "_exit", "quick_exit", "pthread_exit", "signal"]),
              r.choice([0, 0, 0, 3]))
    if cls == "mix":
        faults(r, c)
        nt = r.choice([1, 1, 2, 3, 4])
        c.threads = [g.prologue() for t in range(nt)]
        if r.random() < 0.3:
            c.handler = [g.write(slot=r.randrange(6)), g.sync(slot=r.randrange(6))]
        for t in range(nt):
            c.threads[t] += [g.any_op() for _ in range(r.randrange(5, 40))]
        if r.random() < 0.2:
            c.children = [[g.write(), g.sync(), g.any_op(), g.any_op()]]
            c.threads[0].insert(r.randrange(6, len(c.threads[0]) + 1), ["fork", 0])
    elif cls == "group_fail":
        # Every real sync fails (or a run of them): group's waiters must
        # all see the failure that covered them.
        c.variants = [rand_variant(r, lambda i: "group")]
        c.fail = "sync:%s:%d:%d" % (r.choice(["EIO", "ENOSPC"]), r.randrange(0, 4), r.choice([0, 0, 50]))
        nt = r.choice([4, 8, 16])
        c.threads = [[g.open(slot=t % 6, file=0, sync=0)] + [op for _ in range(r.randrange(20, 120))
                     for op in ([g.write(slot=t % 6)] if r.random() < 0.5 else []) + [["fsync" if r.random() < 0.7 else "fdatasync", t % 6]]]
                     for t in range(nt)]
        c.threads[0] = [g.open(slot=s, file=0, sync=0) for s in range(6)] + c.threads[0][1:]
        for t in range(1, nt):
            c.threads[t].insert(0, ["sleep", 5])
        c.exit = ("return", 0)
    elif cls == "daemon":
        # Started with 0-2 closed: the app's files get 0, 1, 2; broken edits
        # of the ini and sync errors make the shim speak.
        c.closed012 = True
        c.variants = [rand_variant(r), None] + ([rand_variant(r)] if r.random() < 0.5 else [])
        faults(r, c, 0.5)
        ops = [g.open(slot=s, file=s % NFILES, sync=0) for s in range(4)]
        for _ in range(r.randrange(6, 25)):
            x = r.random()
            ops.append(g.write(slot=r.randrange(4)) if x < 0.4 else g.sync(slot=r.randrange(4)) if x < 0.6
                       else ["reload", r.randrange(len(c.variants)), r.choice([300, 300, 0])] if x < 0.8
                       else g.any_op())
        ops.append(["reload", 1, 400])
        ops += [g.write(slot=0), ["fsync", 0]]
        c.threads = [ops]
    elif cls == "exits":
        # Deferred syncs owed at every way of ending; errors owed with
        # unreported_errors = exit; _exit from a signal handler inside a sync.
        c.variants = [rand_variant(r, lambda i: r.choice(["defer", "defer", "group", "passthrough"]))]
        faults(r, c, 0.4)
        c.exit = (r.choice(["return", "exit", "_exit", "quick_exit", "pthread_exit", "pthread_exit", "quick_exit"]),
                  r.choice([0, 0, 3]))
        ops = g.prologue()
        shape = r.choice(["plain", "plain", "alarm_in_group", "unreported"])
        if shape == "alarm_in_group":
            # SIGALRM's handler calls _exit while the thread is inside a
            # group sync; another file owes a deferred sync
            c.variants[0][0] = rand_rule(r, "group")
            c.variants[0][1] = rand_rule(r, "defer")
            c.variants[0][1]["max_delay_ms"] = "100"
            ops += [g.write(slot=1), ["fsync", 1], ["alarm_exit", r.choice([2, 5, 10, 30])]]
            ops += [op for _ in range(300) for op in (g.write(slot=0), ["fsync", 0])]
        elif shape == "unreported":
            # a deferred sync fails and no later call of the file is left to
            # tell: stderr, and with unreported_errors = exit, status 74
            c.variants[0][1] = rand_rule(r, "defer")
            c.fail = "sync:EIO:0:0"
            ops += [g.write(slot=1), ["fsync", 1]] + [g.write(slot=1) for _ in range(r.randrange(0, 3))]
            ops.append(["sleep", r.choice([0, 0, 150])])
        else:
            if r.random() < 0.3:
                ops.append(["alarm_exit", r.choice([2, 10, 30])])
            for _ in range(r.randrange(3, 20)):
                ops.append(g.write() if r.random() < 0.5 else g.sync())
            if r.random() < 0.3:
                ops += [["close", r.randrange(6)] for _ in range(3)]
        nt = r.choice([1, 1, 2]) if shape == "plain" else 1
        c.threads = [ops] + [g.prologue() + [g.write(), g.sync(), g.write(), g.sync()] for _ in range(nt - 1)]
    elif cls == "fdrace" and r.random() < 0.5:
        shape = r.choice(["osync", "race"])
        if shape == "osync":
            # O_SYNC descriptors of deferred files, failed dup2s onto them,
            # then only writes: each write is a request the window must meet
            c.variants = [rand_variant(r, lambda i: r.choice(["defer", "defer", "passthrough"]))]
            ops = [g.open(slot=s, file=s % NFILES, sync=r.choice([1, 2])) for s in range(4)]
            for _ in range(r.randrange(5, 30)):
                x = r.random()
                s = r.randrange(4)
                ops.append(["dup2bad", s] if x < 0.3 else [r.choice(["dup2", "dup3"]), s, r.randrange(4), 0]
                           if x < 0.4 else g.write(slot=s))
            ops.append(["sleep", r.choice([0, 200])])
            c.threads = [ops]
        else:
            # two threads dup2 their own descriptors (a noop file, a
            # passthrough file) onto one shared number and fsync it
            c.variants = [{0: {"sync": "noop"}, 1: {"sync": "passthrough"}, 2: {"sync": "noop"},
                           3: {"sync": r.choice(["passthrough", "group", "fdatasync"])}}]
            c.threads = [[g.open(slot=0, file=t % 2, sync=0), g.open(slot=1, file=2 + t % 2, sync=0)] +
                         [op for _ in range(r.randrange(50, 300)) for op in
                          (["dup2race", r.randrange(2), 0], ["fsyncn", 0])] for t in range(2)]
    elif cls == "fdrace":
        # dup/dup2/dup3/close_range on O_SYNC and plain descriptors, failed
        # dup2s, two threads dup2-ing onto one number.
        faults(r, c, 0.2)
        nt = r.choice([1, 2, 2, 3])
        c.threads = [g.prologue() for t in range(nt)]
        for t in range(nt):
            for _ in range(r.randrange(10, 60)):
                x = r.random()
                s = r.randrange(6)
                if x < 0.12 and nt > 1:
                    # two threads dup2 onto one shared number, then sync it
                    c.threads[t] += [["dup2race", s, 0], ["fsyncn", 0]]
                elif x < 0.2:
                    c.threads[t].append([r.choice(["dup2", "dup3", "dup"]), s, r.randrange(6), r.randrange(2)])
                elif x < 0.3:
                    c.threads[t].append(["dup2bad", s])
                elif x < 0.35:
                    c.threads[t].append(["close_range", s, r.randrange(6)])
                elif x < 0.45:
                    c.threads[t].append(g.open(slot=s, sync=r.choice([0, 1, 2])))
                elif x < 0.7:
                    c.threads[t].append(g.write(slot=s))
                else:
                    c.threads[t].append(g.sync(slot=s))
    elif cls == "names" and r.random() < 0.3:
        # a deferred sync fails with nobody told; the file is closed and
        # deleted, and a new file (another rule) gets its inode number
        v = rand_variant(r)
        v[0] = rand_rule(r, "defer")
        v[1] = {"sync": r.choice(["passthrough", "fdatasync", "group"])}
        c.variants = [v]
        c.fail = "sync:EIO:0:1"
        ops = [g.open(slot=0, file=0, sync=0), g.write(slot=0), ["fsync", 0], ["sleep", r.choice([0, 150])],
               ["close", 0], ["unlink", 0], ["sleep", r.choice([0, 150])]]
        for k in range(r.randrange(1, 4)):
            ops += [g.open(slot=1 + k, file=1, sync=0), g.write(slot=1 + k), ["fsync", 1 + k], ["fsync", 1 + k]]
        c.threads = [ops]
    elif cls == "names":
        # rename/link/unlink while open and mapped; a file deleted and a new
        # one made (the inode number comes back); auto windows.
        faults(r, c, 0.5)
        nt = r.choice([1, 1, 2, 4])
        c.threads = [g.prologue() for t in range(nt)]
        for t in range(nt):
            for _ in range(r.randrange(10, 40)):
                x = r.random()
                f = r.randrange(NFILES)
                s = r.randrange(6)
                if x < 0.15:
                    c.threads[t] += [["unlink", f], g.open(slot=s, file=f)]
                elif x < 0.25:
                    c.threads[t].append([r.choice(["rename", "link"]), f, r.randrange(NFILES)])
                elif x < 0.32:
                    c.threads[t] += [["mmap", r.randrange(2), s], ["mwrite", 0]]
                elif x < 0.4:
                    c.threads[t].append(["msync", r.randrange(2)])
                elif x < 0.45:
                    c.threads[t].append(["close", s])
                elif x < 0.7:
                    c.threads[t].append(g.write(slot=s))
                else:
                    c.threads[t].append(g.sync(slot=s))
    elif cls == "fork":
        # A fork while closed files still owe deferred syncs; the child
        # waits out the window and lists its descriptors.
        c.variants = [rand_variant(r, lambda i: r.choice(["defer", "defer", "passthrough", "group"]))]
        faults(r, c, 0.3)
        ops = g.prologue() + [g.write() for _ in range(6)] + [g.sync() for _ in range(4)]
        ops += [["close", s] for s in range(6) if r.random() < 0.7]
        ops.append(["fork", 0])
        ops += [g.any_op() for _ in range(r.randrange(0, 10))]
        ops.append(["wait"])
        c.threads = [ops]
        c.children = [[["settle", 400]] + [g.any_op() for _ in range(r.randrange(0, 6))] + [["settle", 300]]]
        c.exit = (r.choice(["return", "exit"]), 0)
        c.child_exit = r.choice([0, 0, 5])
    elif cls == "threads":
        # Thread churn, cancellation inside syncs, logging in calls mode.
        shim_keys(r, c, log=True)
        c.variants = [rand_variant(r, lambda i: r.choice(POLICIES))]
        faults(r, c, 0.2)
        nt = r.choice([2, 3, 4])
        c.cancel_async = 0
        c.threads = [g.prologue() + [["sleep", 1]]] + [[] for _ in range(nt - 1)]
        for t in range(1, nt):
            c.threads[t] = [g.open(slot=t, file=r.randrange(NFILES))] + \
                [op for _ in range(r.randrange(5, 50)) for op in (g.write(slot=t), g.sync(slot=t))]
        if r.random() < 0.3:
            # cancel a thread inside its first sync
            c.threads[0] = [g.prologue()[0], ["cancel", 1]] + c.threads[0][1:]
            c.threads[1] = c.threads[1][:1] + [["fsync", 1]] + c.threads[1][1:]
        elif r.random() < 0.7:
            c.threads[0] += [["cancel", r.randrange(1, nt)]]
        if r.random() < 0.6:
            c.threads[0].append(["burst", r.choice([50, 150, 200]), r.randrange(6)])
        c.threads[0] += [g.write(slot=0), g.sync(slot=0)]
    elif cls == "nofile":
        # a low descriptor limit while closed deferred files still owe syncs
        # (the shim holds a descriptor of each): every way to make a
        # descriptor must get as many as without the shim
        c.variants = [rand_variant(r, lambda i: r.choice(["defer", "defer", "passthrough"]))]
        for i in range(NFILES):
            if c.variants[0][i]["sync"] == "defer":
                c.variants[0][i]["max_delay_ms"] = "100"
        ops = [["rlimit", r.choice([12, 16, 24])]]
        for k in range(r.randrange(2, 8)):
            ops += [g.open(slot=k % 6, file=k % NFILES, sync=0), g.write(slot=k % 6), ["fsync", k % 6],
                    ["close", k % 6]]
        ops += [["makers", r.randrange(6)] for _ in range(r.randrange(1, 4))]
        c.threads = [ops]
    elif cls == "temp":
        gen_temp(r, c, g)
    elif cls == "changes":
        gen_changes(r, c, g)
    elif cls == "sysexit":
        gen_sysexit(r, c, g)
    elif cls == "domain":
        gen_domain(r, c, g)
    elif cls == "log":
        gen_log(r, c, g)
    elif cls == "trap":
        gen_trap(r, c, g)
    elif cls == "msync":
        gen_msync(r, c, g)
    else:
        raise SystemExit("unknown class %s" % cls)
    # ORACLE_EXITS=return,exit,...: only these ways to end (to look past a
    # known finding that every case with another way would show first)
    allowed = [x for x in os.environ.get("ORACLE_EXITS", "").split(",") if x]
    if allowed and c.exit[0] not in allowed:
        c.exit = (r.choice(allowed), c.exit[1])
    return c


# ---- classes temp, changes, sysexit, domain, log, trap, msync --------------------


def defer_rule(r, window=None):
    rule = rand_rule(r, "defer")
    if window is not None:
        rule["max_delay_ms"] = window
    return rule


CHANGE_KINDS = ["sendfile", "splice", "aiow", "rawpw", "cfr", "write", "pwrite"]


def change_op(r, g, slot, child=False):
    """A change of the slot's file, by one of the ways around the write
    calls. Not aio_write in a fork child: glibc's AIO state is not made
    whole at a fork, and a child of a process whose AIO helper held its
    lock then hangs (with or without the shim)."""
    kind = r.choice([k for k in CHANGE_KINDS if not (child and k == "aiow")])
    n = r.choice([1, 16, 512, 4096])
    if kind in ("write", "pwrite"):
        return [kind, slot, n, r.randrange(0, 8192), 0]
    if kind == "cfr":
        return ["cfr", slot, n]
    if kind == "sendfile":
        return ["sendfile", slot, n]
    return [kind, slot, n, r.randrange(0, 8192) if kind != "splice" or r.random() < 0.5 else -1]


def gen_temp(r, c, g):
    # Temporary files (sqlite's, MariaDB's): open a new name, unlink it,
    # write, sync, close, from several threads at once; under defer no
    # error the disk did not give may come of it.
    c.xrules = [("*.tmp", rand_rule(r, r.choice(["defer", "defer", "defer", "passthrough", "group", "fdatasync"])))]
    c.variants = [rand_variant(r, lambda i: r.choice(["defer", "passthrough"]))]
    if r.random() < 0.3:
        c.fail_suffix = ".tmp"
        faults(r, c, 1.0)
    nt = r.choice([1, 2, 4, 4])
    c.threads = []
    for t in range(nt):
        ops = []
        for _ in range(r.randrange(3, 25)):
            s = r.randrange(4)
            early = r.random() < 0.7  # unlinked before its writes, as a temporary file is
            ops.append(["tmpopen", s])
            if early:
                ops.append(["tmpunlink", s])
            for _ in range(r.randrange(1, 5)):
                ops.append(["write", s, 4096, 0, 0] if r.random() < 0.7 else g.write(slot=s))
                ops.append([r.choice(["fsync", "fsync", "fdatasync"]), s])
            if r.random() < 0.2:
                ops += [g.open(slot=4, file=r.randrange(NFILES), sync=0), g.write(slot=4), g.sync(slot=4)]
            ops.append(["close", s])
            if not early and r.random() < 0.8:
                ops.append(["tmpunlink", s])
        c.threads.append(ops)
    c.exit = (r.choice(["return", "exit", "_exit"]), r.choice([0, 0, 3]))


def gen_changes(r, c, g):
    # sendfile, splice, POSIX aio_write, syscall(SYS_pwrite64) and
    # copy_file_range between files: each a change of its file that must
    # come after the other files' acknowledged syncs (the order check).
    c.variants = [rand_variant(r, lambda i: r.choice(["defer", "defer", "passthrough", "group", "noop"]))]
    for i in range(NFILES):
        if c.variants[0][i]["sync"] == "defer" and r.random() < 0.5:
            c.variants[0][i]["max_delay_ms"] = r.choice(["200", "1000"])
    faults(r, c, 0.15)
    nt = r.choice([1, 1, 2])

    def body(n, child=False):
        ops = []
        for _ in range(n):
            x = r.random()
            s = r.randrange(6)
            if x < 0.3:
                ops += [g.write(slot=s), [r.choice(["fsync", "fdatasync"]), s]]
            elif x < 0.75:
                ops.append(change_op(r, g, s, child))
            elif x < 0.85:
                ops.append(g.sync(slot=s))
            elif x < 0.9:
                ops.append(["sleep", r.choice([1, 5, 30])])
            else:
                ops.append(g.any_op())
        return ops

    c.threads = [g.prologue() + body(r.randrange(8, 40)) for _ in range(nt)]
    if r.random() < 0.3:
        c.children = [body(r.randrange(3, 15), child=True)]
        c.threads[0].insert(r.randrange(6, len(c.threads[0]) + 1), ["fork", 0])
        c.threads[0].append(["wait"])
    c.exit = (r.choice(["return", "exit", "_exit"]), 0)


def gen_sysexit(r, c, g):
    # The ends made through libc's syscall(): exit_group, exit of the last
    # thread, execve. Each is a barrier: what was acknowledged is made
    # durable, an error nobody was told is said.
    c.variants = [rand_variant(r, lambda i: r.choice(["defer", "defer", "group", "passthrough"]))]
    faults(r, c, 0.4)
    ops = g.prologue()
    if r.random() < 0.3:
        c.variants[0][1] = rand_rule(r, "defer")
        c.fail = "sync:EIO:0:0"
        ops += [g.write(slot=1), ["fsync", 1]]
    for _ in range(r.randrange(3, 20)):
        ops.append(g.write() if r.random() < 0.5 else g.sync())
    nt = r.choice([1, 1, 2])
    c.threads = [ops] + [g.prologue() + [g.write(), g.sync(), g.write(), g.sync()] for _ in range(nt - 1)]
    c.exit = (r.choice(["sys_exit_group", "sys_exit", "sys_execve"]), r.choice([0, 0, 3]))


def gen_domain(r, c, g):
    # A process and its fork children are one ordering domain: a child
    # that takes on other credentials leaves it; a child stopped inside
    # the domain's lock costs a bounded wait; a child killed with
    # acknowledged syncs pending (one, or more files than the table's
    # slots) has them made durable before the others' next change, once.
    c.variants = [rand_variant(r, lambda i: r.choice(["defer", "defer", "passthrough"]))]
    for i in range(NFILES):
        if c.variants[0][i]["sync"] == "defer":
            c.variants[0][i]["max_delay_ms"] = r.choice(["100", "1000", "2000"])
            c.variants[0][i].pop("on_close", None)
    shape = r.choice(["privs", "stopped", "sigstop", "many", "killed", "second"])
    ops = g.prologue()
    acks = lambda k: [op for _ in range(k) for op in (g.write(slot=r.randrange(6)), ["fsync", r.randrange(6)])]
    changes = lambda k, child=False: [change_op(r, g, r.randrange(6), child) if r.random() < 0.5 else g.write()
                                      for _ in range(k)]
    if shape == "privs":
        c.children = [acks(r.randint(1, 3)) + [["dropprivs", r.choice([0, 1, 1])]] + acks(r.randint(0, 3)) +
                      changes(r.randint(0, 4), True) + [["sleep", r.choice([0, 50])]]]
        ops += acks(r.randint(1, 3)) + [["fork", 0]] + [["sleep", 20]] + acks(r.randint(1, 4)) + changes(4)
        ops.append(["wait"])
        ops += acks(2) + changes(2)
    elif shape == "stopped":
        c.hold = "domain_in_child"
        c.children = [acks(r.randint(1, 3)) + changes(r.randint(0, 3), True)]
        ops += acks(1) + [["fork", 0], ["awaitheld", 3000]] + acks(r.randint(1, 3)) + changes(2)
        ops += [["release"], ["wait"]] + acks(1)
    elif shape == "sigstop":
        c.children = [acks(r.randint(20, 80))]
        ops += [["fork", 0]]
        for _ in range(r.randint(2, 8)):
            ops += [["stopkids"], ["sleep", r.choice([0, 1, 2])]] + acks(1) + changes(1) + [["contkids"],
                                                                                        ["sleep", 1]]
        ops.append(["wait"])
    elif shape == "many":
        # more pending files than the table's slots (1,024): they keep no
        # cross-file order (order = file), so none waits for the others
        c.xrules = [("*.many", {"sync": "defer", "order": "file", "max_delay_ms": "10000", "max_calls": "1000000",
                                "max_bytes": "1G"})]
        c.children = [[["many", r.choice([1100, 1100, 200])], ["selfkill"]]]
        ops += [["fork", 0], ["wait"]]
        for _ in range(r.randint(3, 6)):
            ops += [g.write(slot=r.randrange(6)), ["sleep", r.choice([700, 900])]]
    elif shape == "killed":
        c.children = [acks(r.randint(1, 3)) + [["selfkill"]]]
        ops += [["fork", 0], ["wait"]] + changes(r.randint(1, 4)) + acks(1) + changes(2)
    else:  # second: an acknowledged file acknowledged again orders the next child's change again
        c.children = [changes(r.randint(1, 2), True), changes(r.randint(1, 2), True)]
        w = r.randrange(6)
        ops += [g.write(slot=w), ["fsync", w], ["fork", 0], ["wait"], g.write(slot=w), ["fsync", w],
                ["fork", 1], ["wait"]]
    c.threads = [ops]
    c.exit = (r.choice(["return", "exit"]), 0)


def gen_log(r, c, g):
    # A service's journal synced per commit under defer, and a line per
    # commit to the standard output it inherited, redirected to a file:
    # the log keeps no cross-file order (order = auto), so a line is never
    # held for a commit's sync nor waits for one.
    c.variants = [rand_variant(r, lambda i: r.choice(["defer", "defer", "passthrough"]))]
    c.variants[0][0] = defer_rule(r, r.choice(["20", "100", "1000"]))
    nt = r.choice([1, 1, 2])

    def commits(t, k):
        ops = []
        for n in range(k):
            ops += [["write", t, r.choice([100, 512, 4096]), 0, 0], [r.choice(["fsync", "fdatasync"]), t],
                    ["logline", n]]
        return ops

    c.threads = [[g.open(slot=t, file=t % 2, sync=0)] + commits(t, r.randrange(5, 60)) for t in range(nt)]
    if r.random() < 0.4:
        # a fork: the process is no longer alone in its domain, so
        # changes that must wait, wait (no holding) from then on
        c.children = [commits(0, r.randrange(1, 5))]
        c.threads[0].insert(2, ["fork", 0])
        c.threads[0].append(["wait"])
    c.exit = (r.choice(["return", "exit"]), 0)


def gen_trap(r, c, g):
    # inline_syscalls = trap: the runner's own system call instructions
    # are trapped; SIGSYS blocked or ignored by every way there is must
    # never kill the process.
    c.shim["inline_syscalls"] = "trap"
    c.variants = [rand_variant(r, lambda i: r.choice(["defer", "passthrough", "group"]))]
    ops = g.prologue()
    for _ in range(r.randrange(1, 4)):
        ops.append(["sigsys", r.randrange(5)])
        for _ in range(r.randrange(1, 5)):
            x = r.random()
            s = r.randrange(6)
            ops.append(["inline", s, r.choice([0, 0, 1])] if x < 0.5 else g.write(slot=s) if x < 0.8 else g.sync())
    c.threads = [ops]
    c.exit = (r.choice(["return", "exit", "_exit"]), 0)


def gen_msync(r, c, g):
    # msync(MS_SYNC) of a shared mapping under defer is an acknowledged
    # sync like fsync: its real sync comes within the window, also when
    # the process goes on long after it.
    # windows short enough that a sleep outlasts them and the tolerance:
    # an msync whose real sync waits for the next sync call or the exit is
    # late (a later sync of another file may make it real, so often none)
    c.variants = [rand_variant(r, lambda i: r.choice(["defer", "defer", "passthrough"]))]
    for i in range(NFILES):
        if c.variants[0][i]["sync"] == "defer":
            c.variants[0][i]["max_delay_ms"] = r.choice(["20", "100"])
    faults(r, c, 0.2)
    ops = g.prologue()
    for _ in range(r.randrange(1, 4)):
        m, s = r.randrange(2), r.randrange(6)
        ops += [["mmap", m, s], ["mwrite", m], ["msync", m]]
        if r.random() < 0.4:
            ops += [g.write() if r.random() < 0.5 else g.sync() for _ in range(r.randrange(1, 4))]
        ops.append(["sleep", r.choice([900, 1200, 1500])])
    c.threads = [ops]
    c.exit = (r.choice(["return", "exit", "_exit"]), 0)


# ---- running a case --------------------------------------------------------------


def parse_kv(line):
    d = {}
    for tok in line.split():
        if "=" in tok:
            k, v = tok.split("=", 1)
            d[k] = v
    return d


def ival(d, k, default=0):
    try:
        return int(d.get(k, default))
    except ValueError:
        return default


class Run:
    pass


def run_case(c, with_shim, keep=None):
    d = tempfile.mkdtemp(prefix="oracle.")
    try:
        return _run_case(c, with_shim, d)
    finally:
        if keep:
            dst = os.path.join(keep, "shim" if with_shim else "base")
            shutil.rmtree(dst, ignore_errors=True)
            shutil.copytree(d, dst, symlinks=True)
        shutil.rmtree(d, ignore_errors=True)


def hang_stacks(group):
    """Every thread's stack of up to four processes of a hung run's group
    (gdb, bounded): a hang that does not replay still says where it was."""
    try:
        pids = subprocess.run(["pgrep", "-g", str(group)], capture_output=True, text=True).stdout.split()[:4]
    except OSError:
        return ""
    out = []
    for pid in pids:
        try:
            bt = subprocess.run(["gdb", "-p", pid, "-batch", "-nx", "-ex", "thread apply all bt 25"],
                                capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.TimeoutExpired):
            continue
        out.append("== pid %s\n" % pid + "\n".join(l for l in bt.splitlines() if l.startswith(("Thread", "#"))))
    return "\n".join(out)


def _run_case(c, with_shim, d):
    for k in range(len(c.variants)):
        with open(os.path.join(d, "cfg%d.ini" % k), "w") as f:
            f.write(c.ini(k, d))
    shutil.copy(os.path.join(d, "cfg0.ini"), os.path.join(d, "live.ini"))
    with open(os.path.join(d, "case.txt"), "w") as f:
        f.write(c.text())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SYNCSHIM_", "RECLAYER_", "LD_"))}
    prefix = os.environ.get("SYNCSHIM_PRELOAD_PREFIX", "")  # a sanitizer's runtime first
    env["LD_PRELOAD"] = ((prefix + ":" if prefix else "") + SHIM + ":" if with_shim else "") + RECLAYER
    env["SYNCSHIM_CONFIG"] = os.path.join(d, "live.ini")
    env["RECLAYER_LOG"] = os.path.join(d, "rec.log")
    if c.fail:
        env["RECLAYER_FAIL"] = c.fail
        env["RECLAYER_FAIL_SUFFIX"] = c.fail_suffix  # the case's files, not the shim's own
    if c.hold and with_shim:
        env["SYNCSHIM_TEST_HOLD_AT"] = c.hold
        env["SYNCSHIM_TEST_HOLD_FILE"] = os.path.join(d, "hold")
    if c.slow:
        env["RECLAYER_SLOW"] = c.slow
    argv = [RUNNER, os.path.join(d, "case.txt"), d, os.path.join(d, "journal")]
    errpath = os.path.join(d, "stderr")
    run = Run()
    run.hang = False
    t0 = time.monotonic()
    with open(errpath, "wb") as err:
        if c.closed012:
            p = subprocess.Popen(["/bin/sh", "-c", 'exec "$0" "$@" 0<&- 1>&- 2>&-'] + argv, env=env,
                                 start_new_session=True)
        else:
            # a case that logs has its standard output redirected to a
            # file, as a service's is (logline)
            out = open(os.path.join(d, "out.log"), "wb") if c.uses("logline") else subprocess.DEVNULL
            p = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                 start_new_session=True)
            if out != subprocess.DEVNULL:
                out.close()
        try:
            run.status = p.wait(timeout=HANG_S)
        except subprocess.TimeoutExpired:
            run.hang = True
            run.stacks = hang_stacks(p.pid)
            os.killpg(p.pid, signal.SIGKILL)
            run.status = p.wait()
    # children that outlived the process (main's pthread_exit or return
    # without a wait) get a moment to end on their own, whose exit barrier
    # is then checked like any; what is left (a hung fork child) is killed,
    # and a process killed so owes nothing after reaped_ns (the checker's
    # late-deferred-sync: seed mix:15690279, a child killed 10 ms after
    # its deferred fsync)
    end = time.monotonic() + (0 if run.hang else 3)
    while time.monotonic() < end:
        try:
            os.killpg(p.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.01)
    run.reaped_ns = time.monotonic_ns()
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    run.wall = time.monotonic() - t0
    run.dir = d
    run.journal = [parse_kv(x) for x in open(os.path.join(d, "journal"), errors="replace")] \
        if os.path.exists(os.path.join(d, "journal")) else []
    run.rec = [parse_kv(x) for x in open(os.path.join(d, "rec.log"), errors="replace")] \
        if os.path.exists(os.path.join(d, "rec.log")) else []
    run.stderr = open(errpath, errors="replace").read() if os.path.exists(errpath) else ""
    btpath = os.path.join(d, "crash.bt")
    run.crash_bt = open(btpath, errors="replace").read() if os.path.exists(btpath) else ""
    run.files = {}
    for name in os.listdir(d):
        if re.match(r"^f\d+\.dat$", name):
            with open(os.path.join(d, name), "rb") as f:
                run.files[name] = f.read()
    run.drops = 0
    for name in os.listdir(d):
        if name.startswith("shim.") and name.endswith(".log") and os.path.getsize(os.path.join(d, name)) > 0:
            out = subprocess.run([SYNCLAT, "report", os.path.join(d, name)], capture_output=True, text=True).stdout
            m = re.search(r"^dropped\s*:\s*(\d+)", out, re.M)
            if m:
                run.drops += int(m.group(1))
    return run


# ---- the oracle -----------------------------------------------------------------------


def effective_variants(c, run):
    """The config variants in force at some point: the first, and each
    reloaded one (a broken one keeps the previous)."""
    used = [0]
    for j in run.journal:
        if j.get("op") == "reload":
            used.append(ival(j, "a0"))
    eff, prev = [], None
    for k in used:
        var = c.variants[k] if k < len(c.variants) else None
        if var is None:
            var = prev if prev is not None else ({} if k == 0 else None)
        if var is not None:
            eff.append(var)
            prev = var
    return eff


def rule_of(c, var, fname):
    if re.match(r"^f\d+\.dat$", fname):
        return var.get(int(fname[1:].split(".")[0]), {"sync": "passthrough"})
    for pat, rule in c.xrules:
        if fnmatch.fnmatchcase(fname, pat):
            return rule
    return {"sync": "passthrough"}


class Obj:
    """A file: an inode from the first open that saw it, until another file
    takes the number."""

    def __init__(self, ino, start):
        self.ino, self.start = ino, start
        self.paths = set()
        self.names_lost_at = None


def check(c, run, base=None, self_test=False):
    """The findings, as (kind, message) pairs; [] when the run keeps every promise."""
    F = []
    # Under a sanitizer (make asan) a forked child can hang in the runtime's
    # allocator: gcc 12's takes no lock around fork, and the shim's own
    # threads make every host a threaded one (the stacks: the child's new
    # thread in SizeClassAllocator64::GetFromAllocator). The plain build
    # checks these cases; a sanitizer run does not call that a finding.
    if run.hang and c.children and os.environ.get("SYNCSHIM_PRELOAD_PREFIX"):
        return F
    if run.hang and not (base is not None and base.hang):
        msg = "the process did not end within %.0f s (exit mode %s)" % (HANG_S, c.exit[0])
        if getattr(run, "stacks", "") and not self_test:  # kept: a hang seldom replays
            path = os.path.join(tempfile.gettempdir(), "oracle-hang-%d-%s.stacks" % (c.seed, c.cls))
            with open(path, "w") as f:
                f.write(run.stacks)
            msg += "; stacks in " + path
        F.append(("hang", msg))
    if run.hang:
        return F
    eff = effective_variants(c, run)
    # An fsync made by the runner's own system call instruction (trap's
    # "inline") is an fsync the shim saw where the trap is on; the baseline
    # and an untrapped run show the recording layer nothing of it
    trapped = c.shim.get("inline_syscalls") == "trap" and not self_test and "nothing is trapped" not in run.stderr
    J = [dict(j, op="fsync") if j.get("op") == "ifsync" else j for j in run.journal
         if j.get("op") != "exit" and (j.get("op") != "ifsync" or trapped)]
    exits = [j for j in run.journal if j.get("op") == "exit"]
    death = None
    if c.exit[0] == "signal" or run.status < 0:
        death = min([ival(x, "t0") for x in exits if x.get("proc") == "0"] or [0]) or None
    # fork children that never reached their exit: killed by the harness
    # once they outlived the process by its grace (run_one)
    killed = {j.get("proc") for j in J if j.get("proc") not in (None, "0")} - {x.get("proc") for x in exits}
    # children killed by the case itself (selfkill, killkids): each owes
    # no sync past its death (what it acknowledged is the domain's to make
    # durable before another change, the order check's business)
    child_death = {x.get("proc"): ival(x, "t0") for x in exits if x.get("mode") == "killed"}
    for j in J:
        if j.get("op") == "killkids":
            for q in killed:
                if q != j.get("proc"):
                    child_death[q] = min(child_death.get(q, ival(j, "t0")), ival(j, "t0"))

    # files by inode, across inode reuse: a new object starts at an open
    # whose birth time differs from the object it would continue
    objs = {}   # ino -> [Obj] by start
    births = {}
    for j in sorted(J, key=lambda x: ival(x, "t0")):
        ino = ival(j, "ino")
        if not ino or ival(j, "ret") < 0:
            continue
        b = ival(j, "birth")
        lst = objs.setdefault(ino, [])
        if not lst or (j.get("op") == "open" and b and births.get(id(lst[-1])) not in (None, b)):
            lst.append(Obj(ino, ival(j, "t0")))
            births[id(lst[-1])] = b
        if j.get("op") == "open":
            lst[-1].paths.add(j.get("path"))

    def obj_at(ino, t):
        best = None
        for o in objs.get(ino, []):
            if o.start <= t:
                best = o
        return best

    # names: which object each name holds, to tell when a file lost its last name
    names = {}
    # every binding of a name, (t0, t1, object or None), in the order the
    # calls ended: a call that resolved the name early and ended late (a
    # slow open) is not the name's last binding when another thread's
    # call on the name ended inside its window
    bindings = {}
    barrier_fails = []  # a rename or link whose barrier sync failed
    for j in sorted(J, key=lambda x: ival(x, "t1")):
        op, ok = j.get("op"), ival(j, "ret") >= 0
        span = (ival(j, "t0"), ival(j, "t1"))
        if op in ("rename", "link") and not ok and ival(j, "errno") in IOERRS:
            barrier_fails.append(j)
        if op == "open" and ok:
            o = obj_at(ival(j, "ino"), ival(j, "t1"))
            if o:
                names[j.get("path")] = o
                bindings.setdefault(j.get("path"), []).append(span + (o,))
        elif op in ("rename", "link") and ok:
            a, b = j.get("path"), j.get("path2")
            if a in names and a != b:
                old = names.get(b)
                names[b] = names[a]
                bindings.setdefault(b, []).append(span + (names[a],))
                if op == "rename":
                    del names[a]
                if old is not None and old not in names.values() and old.names_lost_at is None:
                    old.names_lost_at = ival(j, "t0")
        elif op == "unlink" and ok:
            bindings.setdefault(j.get("path"), []).append(span + (None,))
            o = names.pop(j.get("path"), None)
            if o is not None and o not in names.values() and o.names_lost_at is None:
                o.names_lost_at = ival(j, "t0")

    def klass(o):
        """0: no promise (noop somewhere), 1: defer (window W), 2: synchronous."""
        rank, window, osync_req = 2, 0, True
        for var in eff:
            for p in o.paths or {None}:
                rule = rule_of(c, var, p) if p else {"sync": "passthrough"}
                rank = min(rank, RANK[rule["sync"]])
                if rule["sync"] == "defer":
                    md = rule.get("max_delay_ms", "100")
                    window = max(window, 0 if md == "auto" else int(md))
                    if rule.get("osync", "auto") not in ("auto", "defer"):
                        osync_req = False
                else:
                    # under another policy an O_SYNC write is synced inside
                    # the write itself, which the recording layer does not
                    # show as a sync: such writes are checked only where
                    # every rule in force made them deferred requests
                    osync_req = False
        return rank, window * 1000000, osync_req

    real_syncs = [x for x in run.rec if x.get("op") in ("fsync", "fdatasync", "syncfs", "sync")]
    real_msyncs = [x for x in run.rec if x.get("op") == "msync"]

    def msync_of(x, j):
        """x, a real msync, is a real sync of what the app's msync j asked
        for: MS_SYNC (the shim answers a deferred one with MS_ASYNC, which
        makes nothing durable) at the address j synced."""
        if x.get("op") != "msync" or not int(x.get("flags", "0"), 0) & 4:
            return False
        return not j.get("addr") or x.get("addr") == j.get("addr")
    # Which file an msync synced: the mapping at the address it loaded (the
    # map index is shared by all threads, so the index alone can name
    # another thread's later mmap). An address is reused only after a
    # munmap, so the latest mmap of it begun before the msync ended is the
    # one. Journals without addresses: the last mmap of the index.
    maps_by_addr, maps = {}, {}
    for j in sorted(J, key=lambda x: ival(x, "t0")):
        if j.get("op") == "mmap" and ival(j, "ret") == 0:
            o = obj_at(ival(j, "ino"), ival(j, "t1"))
            maps[(j.get("proc"), ival(j, "a0") % 4)] = o
            if j.get("addr"):
                maps_by_addr.setdefault((j.get("proc"), j.get("addr")), []).append((ival(j, "t0"), o))

    def mapped_file(j):
        if not j.get("addr"):
            return maps.get((j.get("proc"), ival(j, "a0") % 4))
        found = None
        for t0, o in maps_by_addr.get((j.get("proc"), j.get("addr")), []):
            if t0 <= ival(j, "t1"):
                found = o
        return found

    def covers(x, o, lo, hi, need_ok=True):
        if x.get("op") in ("sync", "syncfs") or ival(x, "ino") == o.ino:
            if lo <= ival(x, "t0") and ival(x, "t1") <= hi:
                return ival(x, "ret") == 0 or not need_ok
        return False

    # 1. every sync that returned 0 was covered as its policy promises
    for j in J:
        op = j.get("op")
        if ival(j, "ret") != 0 and not (op in ("write", "pwrite", "writev", "pwritev", "pwritev2", "cfr")
                                        and ival(j, "ret") > 0):
            continue
        t0, t1 = ival(j, "t0"), ival(j, "t1")
        if j.get("racy"):
            continue
        if op == "msync":
            o = mapped_file(j)
        elif op in ("fsync", "fdatasync") or (op in ("write", "pwrite", "writev", "pwritev", "pwritev2", "cfr")
                                              and j.get("osync") == "1"):
            o = obj_at(ival(j, "ino"), t0)
        else:
            continue
        if o is None:
            continue
        rank, window, osync_req = klass(o)
        is_write = op not in ("fsync", "fdatasync", "msync")
        if rank == 2 and not is_write:
            pool = real_syncs + (real_msyncs if op == "msync" else [])
            if not any(covers(x, o, t0, t1) or (msync_of(x, j) and t0 <= ival(x, "t0")
                                                and ival(x, "t1") <= t1 and ival(x, "ret") == 0) for x in pool):
                F.append(("uncovered-sync", "%s th=%s i=%s on %s (ino %d) returned 0 but no successful real sync "
                          "of the file began after it and ended before it returned" %
                          (op, j.get("th"), j.get("i"), "/".join(sorted(o.paths)) or "?", o.ino)))
        elif rank == 1 and (not is_write or (osync_req and not self_test)):
            hi = t1 + window + TOL_NS
            if death and hi > death:
                continue
            if j.get("proc") in killed and hi > run.reaped_ns:
                continue  # killed by the harness within the window: nothing owed after
            if j.get("proc") in child_death and hi > child_death[j.get("proc")]:
                continue  # killed by the case within the window
            if o.names_lost_at is not None and o.names_lost_at < hi:
                continue  # an unlinked file: nothing left to make durable
            pool = real_syncs + (real_msyncs if op == "msync" else [])
            if not any(covers(x, o, t0, hi, need_ok=False) or (msync_of(x, j) and t0 <= ival(x, "t0") <= hi)
                       for x in pool):
                F.append(("late-deferred-sync", "%s th=%s i=%s on %s (ino %d) acknowledged, but no real sync of "
                          "the file within the window (%d ms + %d ms tolerance)" %
                          (op, j.get("th"), j.get("i"), "/".join(sorted(o.paths)) or "?", o.ino,
                           window // 1000000, TOL_NS // 1000000)))

    # 2. every I/O error the app saw came from a real failure of that file
    fails = [x for x in run.rec if ival(x, "ret") < 0 and ival(x, "errno") in IOERRS]
    fail_obj = []
    for x in fails:
        o = obj_at(ival(x, "ino"), ival(x, "t0")) if ival(x, "ino") else None
        fail_obj.append((x, o))
    reported = set()
    per_desc = {}
    for j in J:
        e = ival(j, "errno")
        if ival(j, "ret") >= 0 or e not in IOERRS or j.get("op") in ("rename", "link", "unlink", "open"):
            continue
        t0, t1 = ival(j, "t0"), ival(j, "t1")
        if j.get("op") == "msync":
            o = mapped_file(j)
        else:
            # the call's own result has no inode when it failed: the slot's
            # earlier lines name it
            o = obj_at(ival(j, "ino"), t0) if ival(j, "ino") and not j.get("racy") else None
        if o is None:
            continue
        expl = [x for x, xo in fail_obj if ival(x, "errno") == e and ival(x, "t0") <= t1
                and (xo is o or (j.get("op") == "msync" and x.get("op") == "msync"))]
        if not expl:
            F.append(("unexplained-error", "%s th=%s i=%s on %s (ino %d) failed %s, but no real call on this "
                      "file failed so" % (j.get("op"), j.get("th"), j.get("i"), "/".join(sorted(o.paths)) or "?",
                                          o.ino, IOERRS[e])))
            continue
        for x in expl:
            reported.add(id(x))
        key = (j.get("proc"), j.get("desc"))
        per_desc.setdefault(key, []).append((j, o))
    # a rename or link fails with the error its source file owes (README:
    # the barrier's sync failed, no name is made): that tells the app
    # (seed fork:8439354, a closed file's deferred fdatasync failed in the
    # flusher and the next rename of its name returned EIO)
    # The source's file is the one its name held when the barrier looked
    # (at the call's start): the last binding ended before that, any whose
    # window overlaps it (their order is unknown), and any made while the
    # call ran (seed names:8439416: a slow open of the name ended after
    # another thread's newer open of it, and the barrier's told error was
    # judged the stale file's).
    def sources(j):
        lt0, lt1 = ival(j, "t0"), ival(j, "t1")
        hist = bindings.get(j.get("path"), [])
        before = [h for h in hist if h[1] < lt0]
        cands = set()
        if before:
            last = before[-1]
            cands.update(h[2] for h in before if h[1] > last[0])
            cands.add(last[2])
        cands.update(h[2] for h in hist if h[1] >= lt0 and h[0] <= lt1)
        cands.discard(None)
        return cands

    for j in barrier_fails:
        srcs = sources(j)
        for x, xo in fail_obj:
            if xo in srcs and ival(x, "errno") == ival(j, "errno") and ival(x, "t0") <= ival(j, "t1"):
                reported.add(id(x))
    # ... each once per descriptor: a second report on one open file
    # description needs a real failure that ended after the first report
    # returned (concurrent callers covered by one failed sync each get it)
    for key, lst in per_desc.items() if deterministic(c) or c.cls == "group_fail" else ():
        lst = [(j, o) for j, o in lst if j.get("op") in ("fsync", "fdatasync", "close")]
        lst.sort(key=lambda p: ival(p[0], "t0"))
        for (j1, o1), (j2, o2) in zip(lst, lst[1:]):
            if ival(j2, "t0") <= ival(j1, "t1") or o1 is not o2:
                continue
            if not any(xo is o1 and ival(x, "t1") > ival(j1, "t1") and ival(x, "t0") <= ival(j2, "t1")
                       for x, xo in fail_obj):
                F.append(("error-twice", "open %s was told one failure twice: %s th=%s i=%s, then %s th=%s i=%s, "
                          "no real failure of %s in between" % (key[1], j1.get("op"), j1.get("th"), j1.get("i"),
                                                                 j2.get("op"), j2.get("th"), j2.get("i"), o1.ino)))
                break

    # 3. no real sync error lost: an app call, a stderr line or exit 74 told it
    if not c.closed012 and death is None:
        told_stderr = "syncshim" in run.stderr
        # alarm_exit's handler ended the process inside an app call: a real
        # sync that call's own thread began after its last journaled call
        # and before the handler's _exit was that call's, which never
        # returned, so there was nobody to tell (seed exits:15753747: the
        # handler landed in a group fsync whose real fsync had just failed;
        # without the shim the window is the same, only shorter)
        in_flight = {}
        if ended_by_alarm(run):
            end = min(ival(x, "t0") for x in exits if x.get("proc") == "0" and x.get("mode") == "_exit_in_handler")
            for j in J:
                if j.get("proc") == "0" and j.get("tid"):
                    in_flight[j["tid"]] = max(in_flight.get(j["tid"], 0), ival(j, "t1"))
            in_flight = {tid: (t, end) for tid, t in in_flight.items()}
        for x, o in fail_obj:
            if id(x) in reported or x.get("op") not in ("fsync", "fdatasync", "msync") or told_stderr:
                continue
            w = in_flight.get(x.get("tid"))
            if w is not None and w[0] <= ival(x, "t0") < w[1]:
                continue
            # the app's own call that reached libc and got the error directly
            if any(ival(j, "t0") <= ival(x, "t0") <= ival(j, "t1") and ival(j, "errno") == ival(x, "errno")
                   for j in J):
                continue
            if o is not None and o.names_lost_at is not None:
                continue
            F.append(("lost-error", "a real %s of ino %s failed %s at %s and no call, stderr line or exit status "
                      "told the app" % (x.get("op"), x.get("ino"), IOERRS[ival(x, "errno")], x.get("t0"))))
            break

    # 3b. the shim says a sync failed only when one really did
    real_errs = {IOERRS[ival(x, "errno")] for x, _ in fail_obj}
    for m in re.finditer(r"^syncshim: .*?\((E[A-Z]+)", run.stderr, re.M):
        if m.group(1) in IOERRS.values() and m.group(1) not in real_errs:
            F.append(("phantom-error", "stderr says %r, but no real call failed %s" % (m.group(0)[:160], m.group(1))))
            break

    F += check_order(c, run, J, obj_at, klass, mapped_file, eff)

    # 4. the app's files hold only the app's bytes
    for name, data in run.files.items():
        bad = re.search(rb"[^a-z\x00]", data)
        if bad:
            at = bad.start()
            F.append(("foreign-bytes", "%s holds bytes the app never wrote at offset %d: %r" %
                      (name, at, data[at:at + 60])))

    # 5. calls-mode log records: none dropped (no ring fills in these cases)
    if run.drops:
        F.append(("log-drops", "the latency log dropped %d call records" % run.drops))

    if base is not None and not base.hang:
        F += differential(c, run, base)
    if F and getattr(run, "crash_bt", "") and not self_test:  # kept: a crash seldom replays
        path = os.path.join(tempfile.gettempdir(), "oracle-crash-%d-%s.bt" % (c.seed, c.cls))
        with open(path, "w") as f:
            f.write(run.crash_bt)
        F.append(("crash", "the run died of a signal; its stack is in " + path))
    return F


# Real calls (the recording layer's op names) that change a file's bytes,
# and the app's calls (the journal's) that do.
REC_CHANGES = {"write", "pwrite", "writev", "pwritev", "sendfile", "splice", "copy_file_range", "aio_write",
               "raw_write"}
APP_CHANGES = {"write", "pwrite", "writev", "pwritev", "pwritev2", "cfr", "sendfile", "splice", "aiow", "rawpw"}
REC_SYNCS = {"fsync", "fdatasync", "sync", "syncfs"}


def check_order(c, run, J, obj_at, klass, mapped_file, eff):
    """Ordered defer's rules seen from beneath (GUARANTEES, Ordered defer):
    unordered (rule 1), log-held and log-waits (rule 3's inherited stdout),
    needless-sync (the write path's promise), creds-reach and stalled (rule
    5's domain)."""
    F = []
    by_tid, syncs_by_tid, syncs_by_ino, global_syncs, msyncs = {}, {}, {}, [], []
    for x in run.rec:
        op, key = x.get("op"), (x.get("pid"), x.get("tid"))
        if op in REC_CHANGES and ival(x, "ret") >= 0:
            by_tid.setdefault(key, []).append(x)
        if op in REC_SYNCS:
            syncs_by_tid.setdefault(key, []).append(x)
            if op in ("sync", "syncfs"):
                global_syncs.append(x)
            else:
                syncs_by_ino.setdefault(ival(x, "ino"), []).append(x)
        elif op == "msync":
            msyncs.append(x)

    def cover_end(o, t0, by_msync):
        """When the first real sync of o (or of everything) begun at or
        after t0 ended; None: none did."""
        ends = [ival(x, "t1") for x in syncs_by_ino.get(o.ino, []) + global_syncs + (msyncs if by_msync else [])
                if ival(x, "t0") >= t0]
        return min(ends) if ends else None

    # acknowledged syncs that did not happen in the call: fsync, fdatasync
    # and msync under defer (acks: each orders the other files' later
    # changes), and O_SYNC writes made requests (pending: they excuse a wait)
    acks, pending = [], []
    for j in J:
        op = j.get("op")
        if j.get("racy"):
            continue
        if op in ("fsync", "fdatasync", "msync") and ival(j, "ret") == 0:
            o = mapped_file(j) if op == "msync" else obj_at(ival(j, "ino"), ival(j, "t0"))
            if o is not None and klass(o)[0] == 1:
                a = (j, o, cover_end(o, ival(j, "t0"), op == "msync"))
                acks.append(a)
                pending.append(a)
        elif op in APP_CHANGES and j.get("osync") == "1" and ival(j, "ret") > 0:
            o = obj_at(ival(j, "ino"), ival(j, "t0"))
            if o is not None and klass(o)[0] == 1:
                pending.append((j, o, cover_end(o, ival(j, "t0"), False)))

    # processes apart: one that took on other credentials left the domain;
    # one whose wait for the domain's lock ran out left it too (said on
    # stderr, without which process: then no two are held to each other)
    apart = {j.get("proc") for j in J if j.get("op") == "dropprivs" and ival(j, "ret") == 0}
    all_apart = "ordering domain:" in run.stderr

    def same_domain(p, q):
        return p == q or not (all_apart or p in apart or q in apart)

    def order_file(o):
        return any(rule_of(c, var, p).get("order") == "file" for var in eff for p in o.paths)

    # per file: when each real change began, and when each app change that
    # changed bytes returned
    real_t0s, app_t1s = {}, {}
    for xs in by_tid.values():
        for x in xs:
            real_t0s.setdefault(ival(x, "ino"), []).append(ival(x, "t0"))
    for k in J:
        if k.get("op") in APP_CHANGES and ival(k, "ret") > 0:
            app_t1s.setdefault(ival(k, "ino"), []).append(ival(k, "t1"))

    def real_changes(j, o):
        """The call's own change, as it reached the kernel inside the call:
        one through the call's descriptor with its byte count that is not
        an older one. The shim applies a file's held writes in order (this
        thread's or another's, all made before the call began, so before
        whatever it is judged against): a real change with fewer real
        changes of the file before it than app changes of the file had
        returned before the call began is one of those."""
        t0, t1, n, fd = ival(j, "t0"), ival(j, "t1"), ival(j, "n"), ival(j, "fd")
        done = sum(1 for t in app_t1s.get(o.ino, []) if t < t0)
        xs = [x for x in by_tid.get((j.get("pid"), j.get("tid")), [])
              if ival(x, "ino") == o.ino and t0 <= ival(x, "t0") <= t1 and ival(x, "fd") == fd and
              (n <= 0 or ival(x, "n") in (0, n)) and
              sum(1 for t in real_t0s.get(o.ino, []) if t < ival(x, "t0")) >= done]
        return [min(xs, key=lambda x: ival(x, "t0"))] if xs else []

    # A signal handler's call made while its thread was inside one of the
    # shim's calls may have landed in the shim's own work (a locked section,
    # a real sync it makes, a thread it starts), where the handler gets the
    # real call, unordered (GUARANTEES.md); the checker cannot tell that
    # from a wait, where the handler is an ordinary caller (test_held
    # a_handler_while_its_thread_waits_for_held_writes_keeps_the_order holds
    # that one). not_shim: the runner's steps the shim wraps no call of
    # (a handler landing in them is in the program's own code).
    not_shim = {"kill", "sleep", "wait", "stopkids", "contkids", "killkids"}
    calls_of_tid = {}
    for k in J:
        if k.get("th") != "-1" and k.get("op") not in not_shim:
            calls_of_tid.setdefault((k.get("pid"), k.get("tid")), []).append(k)

    def in_shim_call(j):
        t0, t1 = ival(j, "t0"), ival(j, "t1")
        return j.get("th") == "-1" and any(ival(k, "t0") <= t0 and t1 <= ival(k, "t1")
                                           for k in calls_of_tid.get((j.get("pid"), j.get("tid")), []))

    # rule 1: a change that reached the kernel inside its own call (one
    # that waited, or needed nothing) came after every other file's
    # acknowledged sync made before the call began; a held one reaches the
    # kernel later from the shim's own thread, unjudged here
    for j in J:
        if j.get("op") not in APP_CHANGES or ival(j, "ret") <= 0 or j.get("racy") or in_shim_call(j):
            continue
        o = obj_at(ival(j, "ino"), ival(j, "t0"))
        if o is None or klass(o)[0] == 0 or order_file(o):
            continue  # noop files and order = file keep no cross-file order
        xs = real_changes(j, o)
        if not xs:
            continue
        x0 = min(ival(x, "t0") for x in xs)
        for a, ao, ce in acks:
            if ao is o or ival(a, "t1") >= ival(j, "t0") or not same_domain(a.get("proc"), j.get("proc")):
                continue
            if ce is None or ce > x0:
                F.append(("unordered", "%s th=%s i=%s (proc %s) changed %s (ino %d) at %d, before a real sync of %s "
                          "(ino %d), whose %s th=%s i=%s (proc %s) was acknowledged at %d" %
                          (j.get("op"), j.get("th"), j.get("i"), j.get("proc"), "/".join(sorted(o.paths)) or "?",
                           o.ino, x0, "/".join(sorted(ao.paths)) or "?", ao.ino, a.get("op"), a.get("th"),
                           a.get("i"), a.get("proc"), ival(a, "t1"))))
                return F

    # rule 3: a line to the inherited standard output (a file) waits for
    # no sync and is not held: it reaches the kernel inside its own call,
    # with no real sync of a file whose acknowledged sync was pending made
    # in between
    for j in J:
        if j.get("op") != "logline" or ival(j, "ret") <= 0:
            continue
        lino, t0 = ival(j, "logino"), ival(j, "t0")
        xs = [x for x in by_tid.get((j.get("pid"), j.get("tid")), [])
              if ival(x, "ino") == lino and t0 <= ival(x, "t0") <= ival(j, "t1")]
        if not xs:
            F.append(("log-held", "logline th=%s i=%s (proc %s) to the inherited stdout did not reach the kernel "
                      "in its call: it was held" % (j.get("th"), j.get("i"), j.get("proc"))))
            return F
        x0 = min(ival(x, "t0") for x in xs)
        owed = {ao.ino for a, ao, ce in acks if ival(a, "t1") < t0 and (ce is None or ce > t0)}
        for key, ss in syncs_by_tid.items():
            for x in ss:
                if t0 <= ival(x, "t0") and ival(x, "t1") <= x0 and owed and \
                        (x.get("op") in ("sync", "syncfs") or ival(x, "ino") in owed):
                    F.append(("log-waits", "logline th=%s i=%s (proc %s) to the inherited stdout waited for a real "
                              "%s of ino %s" % (j.get("th"), j.get("i"), j.get("proc"), x.get("op"),
                                                x.get("ino", "-"))))
                    return F

    by_jtid = {}
    for k in J:
        by_jtid.setdefault((k.get("pid"), k.get("tid")), []).append(k)

    # the write path makes no sync while nothing acknowledged is pending
    # (a dead member's share made durable once, not at every write): a
    # real sync on the writer's thread inside its write needs an
    # acknowledged sync begun before the write ended that was not yet
    # real ORACLE_TOL_MS before the write began
    for j in J:
        if j.get("op") not in APP_CHANGES | {"logline"}:
            continue
        t0, t1 = ival(j, "t0"), ival(j, "t1")
        # not one a signal handler's own call made while it interrupted j
        nested = [(ival(k, "t0"), ival(k, "t1")) for k in by_jtid.get((j.get("pid"), j.get("tid")), [])
                  if k is not j and t0 <= ival(k, "t0") and ival(k, "t1") <= t1]
        ss = [x for x in syncs_by_tid.get((j.get("pid"), j.get("tid")), []) if t0 <= ival(x, "t0") and
              ival(x, "t1") <= t1 and not any(a <= ival(x, "t0") and ival(x, "t1") <= b for a, b in nested)]
        if not ss:
            continue
        if not any(ival(a, "t0") < t1 and (ce is None or ce > t0 - TOL_NS) for a, ao, ce in pending):
            F.append(("needless-sync", "%s th=%s i=%s (proc %s) made a real %s while no acknowledged sync was "
                      "pending" % (j.get("op"), j.get("th"), j.get("i"), j.get("proc"), ss[0].get("op"))))
            return F

    # rule 5: a child that took on other credentials can reach nothing of
    # the domain's (no shared memory it did not make); a member stopped
    # inside the domain's lock costs the others a bounded wait
    for j in J:
        if j.get("op") == "dropprivs" and ival(j, "ret") == 0 and ival(j, "shared") > 0:
            F.append(("creds-reach", "proc %s took on other credentials and still maps %d shared region(s) it did "
                      "not make" % (j.get("proc"), ival(j, "shared"))))
        if j.get("op") == "release" and ival(j, "expired") == 1:
            F.append(("stalled", "proc %s let its held child go only after the hold's own bound (10 s) had ended it: "
                      "a member stopped inside the domain's lock stalled it" % j.get("proc")))
    return F


def deterministic(c):
    return len(c.threads) == 1 and not c.children and not c.handler and not any(
        op[0] in ("alarm_exit", "kill", "burst", "cancel") for op in c.threads[0])


def ended_by_alarm(run):
    """The main process ended in alarm_exit's handler (its journal says so)."""
    return any(j.get("op") == "exit" and j.get("mode") == "_exit_in_handler" and j.get("proc") == "0"
               for j in run.journal)


def differential(c, run, base):
    F = []
    unreported_exit = c.shim.get("unreported_errors") == "exit"
    st, bst = run.status, base.status
    if ended_by_alarm(run) != ended_by_alarm(base):
        # alarm_exit raced the process's own end (main's pthread_exit and a
        # thread still running, say): each run took one of two legal ends,
        # so each status is checked against the end its own journal names
        # (seed exits:15690227: 0 with the shim, 3 without, both right)
        want = c.exit[1] if ended_by_alarm(run) or c.exit[0] != "pthread_exit" else 0
        if st != want and not (st == 74 and want == 0 and unreported_exit and c.fail):
            F.append(("exit-status", "exit status %s with the shim, where its end (%s) gives %s" %
                      (st, "alarm_exit" if ended_by_alarm(run) else c.exit[0], want)))
    elif st != bst and not (st == 74 and bst == 0 and unreported_exit and c.fail):
        F.append(("exit-status", "exit status %s with the shim, %s without" % (st, bst)))
    # a forked child's descriptors once its windows passed: its own table,
    # whatever the parent's threads do
    bj = {(j.get("proc"), j.get("th"), j.get("i")): j for j in base.journal if j.get("op") == "settle"}
    for j in run.journal:
        b = bj.get((j.get("proc"), j.get("th"), j.get("i")))
        if j.get("op") == "settle" and b is not None and j.get("fds") != b.get("fds"):
            F.append(("differs", "settle in process %s th=%s i=%s: descriptors %s with the shim, %s without" %
                      (j.get("proc"), j.get("th"), j.get("i"), j.get("fds"), b.get("fds"))))
            break
    if not deterministic(c):
        return F
    faulty = bool(c.fail)
    bj = {(j.get("proc"), j.get("th"), j.get("i")): j for j in base.journal if j.get("op") != "exit"}
    for j in run.journal:
        if j.get("op") == "exit":
            continue
        b = bj.get((j.get("proc"), j.get("th"), j.get("i")))
        if b is None:
            continue
        op = j.get("op")
        r, br = ival(j, "ret"), ival(b, "ret")
        same = (r < 0) == (br < 0) and ival(j, "errno") == ival(b, "errno")
        if faulty and op in ("fsync", "fdatasync", "msync", "close", "rename", "link", "sync", "syncfs", "sfr",
                             "write", "pwrite", "writev", "pwritev", "pwritev2", "cfr", "open", "dup", "dup2",
                             "dup3", "dup2bad", "mmap"):
            if not same and op in ("rename", "link", "open"):
                # a legal divergence of the names: a rename or link whose
                # barrier sync failed makes no name (README, barriers), an
                # open may fail where the other run's did not; every later
                # call by name can differ from then on, rightly (seed
                # names:15753773: rename failed ENOSPC with the shim, so
                # the next unlink of its source succeeded)
                break
            continue
        if op in ("write", "pwrite", "writev", "pwritev", "pwritev2", "cfr", "makers"):
            same = same and r == br
        if op == "settle":
            same = j.get("fds") == b.get("fds")
        if not same:
            F.append(("differs", "%s th=%s i=%s: ret=%s errno=%s%s with the shim, ret=%s errno=%s%s without" %
                      (op, j.get("th"), j.get("i"), r, j.get("errno"), " fds=" + j.get("fds", "") if op == "settle" else "",
                       br, b.get("errno"), " fds=" + b.get("fds", "") if op == "settle" else "")))
            break
    if not faulty and run.files != base.files and c.exit[0] != "signal":
        diff = sorted(n for n in set(run.files) | set(base.files) if run.files.get(n) != base.files.get(n))
        F.append(("content-differs", "file contents differ from the run without the shim: %s" % ", ".join(diff)))
    return F


# ---- driver ---------------------------------------------------------------------------


def one(c, keep=None):
    """Run a case both ways and check it: (findings, checker's own errors, seconds)."""
    t0 = time.monotonic()
    base = run_case(c, False, keep)
    run = run_case(c, True, keep)
    # the checker judged on the run without the shim must find nothing
    # there (except what only the shim can break): else the checker is wrong
    selfbad = [f for f in check(c, base, self_test=True) if f[0] not in ("hang",)]
    F = check(c, run, base)
    return F, selfbad, time.monotonic() - t0


def load(arg, cls):
    if os.path.exists(arg):
        return Case.parse(open(arg).read())
    return generate(int(arg), cls)


def shrink(c, F):
    """Delta-debug the op lists: drop chunks of ops while some finding of
    the same kind stays."""
    kinds = {k for k, _ in F}

    def still(cand):
        try:
            f, _, _ = one(cand)
        except Exception:
            return False
        return any(k in kinds for k, _ in f)

    lists = lambda x: x.threads + x.children + [x.handler]
    changed = True
    while changed:
        changed = False
        for li in range(len(lists(c))):
            n = len(lists(c)[li])
            chunk = max(1, n // 2)
            while chunk >= 1:
                i = 0
                while i < len(lists(c)[li]):
                    cand = Case.parse(c.text())
                    del lists(cand)[li][i:i + chunk]
                    if still(cand):
                        c = cand
                        changed = True
                    else:
                        i += chunk
                chunk //= 2
    return c


def report(c, F):
    print("FINDING seed=%d class=%s (replay: tests/oracle/oracle.py replay %d --class %s)" % (c.seed, c.cls, c.seed,
                                                                                               c.cls))
    for k, m in F[:5]:
        print("  %s: %s" % (k, m))
    sys.stdout.flush()


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cmd", choices=["run", "seeds", "replay", "shrink", "show"])
    ap.add_argument("args", nargs="*")
    ap.add_argument("--class", dest="cls", default=None)
    ap.add_argument("--seconds", type=float, default=0)
    ap.add_argument("--cases", type=int, default=0)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--keep", default=None)
    ap.add_argument("--stop", action="store_true", help="stop at the first finding")
    a = ap.parse_args(argv)
    for need in (RUNNER, SHIM, RECLAYER):
        if not os.path.exists(need):
            raise SystemExit("oracle: %s is missing (make test-deps oracle-deps)" % need)
    if os.environ.get("ORACLE_SEED") and a.cmd == "run":
        a.cmd, a.args = "replay", [os.environ["ORACLE_SEED"]]
    cls = a.cls or "mix"
    if a.cmd == "show":
        sys.stdout.write(load(a.args[0], cls).text())
        return 0
    if a.cmd in ("replay", "shrink"):
        c = load(a.args[0], cls)
        if a.keep:
            os.makedirs(a.keep, exist_ok=True)
        F, selfbad, dt = one(c, a.keep)
        for k, m in selfbad:
            print("CHECKER (baseline run judged wrong): %s: %s" % (k, m))
        if not F:
            print("seed %d class %s: clean (%.2f s)" % (c.seed, c.cls, dt))
            return 0
        report(c, F)
        if a.cmd == "shrink":
            s = shrink(c, F)
            print("shrunk to %d ops (from %d):" % (s.nops(), c.nops()))
            sys.stdout.write(s.text())
        return 1
    # run / seeds
    passed = failed = 0
    found = {}
    t_start = time.monotonic()
    classes = [a.cls] if a.cls else CLASSES
    if a.cmd == "seeds":
        todo = [(int(s.split(":")[1]) if ":" in s else int(s), s.split(":")[0] if ":" in s else cls)
                for s in a.args]
        todo = [(seed, cl) for seed, cl in todo]
    else:
        base_seed = a.seed if a.seed is not None else int.from_bytes(os.urandom(3), "little")
        todo = None
    k = 0
    while True:
        if todo is not None:
            if k >= len(todo):
                break
            seed, cl = todo[k]
        else:
            if (a.seconds and time.monotonic() - t_start >= a.seconds) or (a.cases and k >= a.cases):
                break
            if not a.seconds and not a.cases and k >= 50:
                break
            seed, cl = base_seed + k // len(classes), classes[k % len(classes)]
        k += 1
        c = generate(seed, cl)
        F, selfbad, dt = one(c)
        for kk, m in selfbad:
            print("CHECKER seed=%d class=%s (baseline run judged wrong): %s: %s" % (seed, cl, kk, m))
        if F:
            failed += 1
            report(c, F)
            for kind, _ in F:
                found.setdefault((cl, kind), []).append(seed)
            if a.stop:
                break
        else:
            passed += 1
    dt = time.monotonic() - t_start
    n = passed + failed
    print("oracle: %d cases in %.1f s, %.2f cases/s" % (n, dt, n / dt if dt else 0))
    for (cl, kind), seeds in sorted(found.items()):
        print("  %s/%s: %d cases, seeds %s" % (cl, kind, len(seeds), " ".join(map(str, seeds[:8]))))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
