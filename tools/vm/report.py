#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turns test output into verdict lines.

    report.py vm RESULTS_DIR FLAVOUR     a results dir written by guest-check.sh
    report.py ctest LOG [PREFIX [XML]]   the output of "ctest --output-on-failure";
                                         XML, its --output-junit file, gives the
                                         skipped tests' reasons
    report.py costs RESULTS_DIR [N]      the N dearest tests of a VM run (seconds)

Prints one line per test, "PASS|FAIL|SKIP <prefix>/<suite>/<name>", failures
followed by indented lines that show why, then a "# totals" comment line.
Exit status 0 if nothing failed, 1 otherwise.

What counts as a test:
  * KUnit (kunit/*.ktap, named <flavour>/<suite>/<case>): every leaf test case, parameterised cases counted
    per parameter; a suite or case that says "not ok" without a failing
    child, or that delivers fewer results than its plan, is one more failure.
  * selftest programs (selftests/<p>.tap + <p>.rc): every TAP result; a
    program without a plan, with fewer results than planned, killed by its
    timeout, or exiting non-zero with no failing test is one more failure.
    Exit status 4 (kselftest skip) without results is one skip.
  * gtest (gtest.log): every "[ OK ]"/"[ FAILED ]"/"[ SKIPPED ]" test line,
    plus a failure when the run did not complete.
  * harness.tap: the job's own steps (insmod, rmmod).
  * kernel/log-clean: fails on any kernel complaint in the kernel log.
  * vm/completed: fails if the guest never wrote its completion marker, or
    if the job ended with a non-zero status (a job that stops half-way
    leaves programs unrun that nothing else would count).
"""

import os
import re
import sys
import xml.etree.ElementTree as ET

verdicts = []  # (status, name, [detail lines])


def add(status, name, detail=()):
    verdicts.append((status, name, list(detail)))


# ---------------------------------------------------------------------------
# TAP / KTAP

RESULT_RE = re.compile(r'^(ok|not ok)\s+(\d+)\s*(?:-\s*)?([^#]*?)\s*(?:#\s*(.*))?$')
PLAN_RE = re.compile(r'^1\.\.(\d+)')


class Node:
    def __init__(self, indent):
        self.indent = indent
        self.plan = None
        self.results = []  # (ok, name, directive, child Node or None, diag)
        self.diag = []     # diagnostic lines since the last result
        self.pending = None  # subtest Node that has not been closed yet


def parse_tap(lines):
    """Returns the root Node of a (possibly nested) TAP/KTAP stream.

    Nesting is by indentation (KTAP: 4 spaces a level, also accepted: any
    deeper indent). A result line at indent d closes the subtest whose lines
    were indented more than d.
    """
    root = Node(0)
    stack = [root]
    for raw in lines:
        line = raw.rstrip('\n').replace('\t', '    ')
        stripped = line.lstrip(' ')
        if not stripped:
            continue
        ind = len(line) - len(stripped)
        # Kernel log prefixes ("[  1.23] ") are not expected in these files.
        m_res = RESULT_RE.match(stripped)
        m_plan = PLAN_RE.match(stripped)
        is_head = stripped.startswith(('KTAP version', 'TAP version',
                                       '# Subtest:'))
        if not (m_res or m_plan or is_head):
            # Diagnostics belong to the innermost open node at or above
            # this indentation.
            node = stack[-1]
            node.diag.append(stripped)
            continue
        # Open a deeper level for lines indented past the current one.
        if ind > stack[-1].indent and (m_plan or is_head or m_res):
            child = Node(ind)
            child.diag = []
            stack[-1].pending = child
            stack.append(child)
        # Close deeper levels on a line at a lower indent.
        while len(stack) > 1 and ind < stack[-1].indent:
            done = stack.pop()
            stack[-1].pending = done
        node = stack[-1]
        if m_plan:
            if node.plan is None:
                node.plan = int(m_plan.group(1))
        elif m_res:
            ok = m_res.group(1) == 'ok'
            name = m_res.group(3).strip() or 'test%s' % m_res.group(2)
            directive = (m_res.group(4) or '').strip()
            child = node.pending
            node.pending = None
            node.results.append((ok, name, directive, child, node.diag))
            node.diag = []
    while len(stack) > 1:
        done = stack.pop()
        stack[-1].pending = done
    return root


def skip_directive(d):
    return d.upper().startswith('SKIP')


def walk(node, prefix, detail_extra=()):
    """Adds verdicts for the leaves under node. Returns (failures, leaves)."""
    fails = 0
    leaves = 0
    for ok, name, directive, child, diag in node.results:
        full = '%s/%s' % (prefix, name) if prefix else name
        if child is not None and child.results:
            cf, cl = walk(child, full)
            fails += cf
            leaves += cl
            if child.plan is not None and len(child.results) < child.plan:
                add('FAIL', full + '/incomplete',
                    ['planned %d results, got %d' % (child.plan, len(child.results))]
                    + child.diag[-20:])
                fails += 1
            if not ok and cf == 0 and not skip_directive(directive):
                add('FAIL', full, ['reported "not ok" with no failing subtest']
                    + (diag + child.diag)[-20:])
                fails += 1
            continue
        leaves += 1
        if skip_directive(directive):
            add('SKIP', full, [directive])
        elif ok:
            add('PASS', full)
        else:
            add('FAIL', full, (diag + (child.diag if child else []))[-30:])
            fails += 1
    return fails, leaves


def tap_program(flavour, name, text, rc):
    """Verdicts for one selftest program's output and exit status."""
    root = parse_tap(text.splitlines())
    prefix = '%s/%s' % (flavour, name)
    fails, leaves = walk(root, prefix)
    tail = [l for l in text.splitlines() if l.strip()][-20:]
    if rc in (124, 137):
        add('FAIL', prefix + '/timeout', ['killed by its timeout'] + tail)
        return
    if leaves == 0 and rc == 4:
        add('SKIP', prefix + '/all', ['program exited with KSFT_SKIP'] + tail[-3:])
        return
    if root.plan is None:
        add('FAIL', prefix + '/incomplete',
            ['no TAP plan line ("1..N") in the output, exit status %s' % rc] + tail)
        return
    if len(root.results) < root.plan:
        add('FAIL', prefix + '/incomplete',
            ['planned %d results, got %d, exit status %s'
             % (root.plan, len(root.results), rc)] + tail)
        return
    if rc not in (0, None) and fails == 0:
        add('FAIL', prefix + '/exit-status',
            ['exited with status %s although no test failed' % rc] + tail)


# ---------------------------------------------------------------------------
# gtest

GT_RE = re.compile(r'^\[\s*(OK|FAILED|SKIPPED)\s*\] (\S+) \(\d+ ms\)')


def gtest_skip_why(between):
    """What GTEST_SKIP() << "why" printed, from the lines between a test's
    "[ RUN ]" and its "[  SKIPPED ]": those after "file:line: Skipped"."""
    return [l for l in between if l.strip() and not l.endswith(': Skipped')][-3:]


def gtest(prefix, text, rc):
    n = 0
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = GT_RE.match(line)
        if not m:
            continue
        n += 1
        st, name = m.group(1), m.group(2)
        if st == 'OK':
            add('PASS', '%s/%s' % (prefix, name))
        else:
            # The message sits between "[ RUN ]" and this line.
            j = i
            while j > 0 and not lines[j - 1].startswith('[ RUN'):
                j -= 1
            if st == 'SKIPPED':
                add('SKIP', '%s/%s' % (prefix, name), gtest_skip_why(lines[j:i]))
            else:
                add('FAIL', '%s/%s' % (prefix, name), lines[j:i][-30:])
    complete = any(re.match(r'^\[=+\] \d+ tests? from .* ran', l) for l in lines)
    fails = sum(1 for s, n2, _ in verdicts if s == 'FAIL' and n2.startswith(prefix + '/'))
    tail = [l for l in lines if l.strip()][-20:]
    if rc in (124, 137):
        add('FAIL', prefix + '/timeout', ['killed by its timeout'] + tail)
    elif not complete:
        add('FAIL', prefix + '/incomplete',
            ['no "[====] N tests ... ran" summary, exit status %s' % rc] + tail)
    elif rc not in (0, None) and fails == 0:
        add('FAIL', prefix + '/exit-status', ['exit status %s' % rc] + tail)


# ---------------------------------------------------------------------------
# kernel log

BAD_RE = re.compile(
    r'Oops|BUG:|WARNING:|KASAN|UBSAN|Kernel panic|general protection fault'
    r'|Call Trace:|possible circular locking|possible recursive locking'
    r'|INFO: trying to register non-static key|INFO: task .* blocked for'
    r'|inconsistent lock state|suspicious RCU usage|unreferenced object'
    r'|kmemleak: .*new suspected memory leak|ODEBUG:|list_(add|del) corruption'
    r'|soft lockup|hard LOCKUP|RCU stall|rcu_sched detected stall'
    r'|refcount_t:|segfault at .* in viaduct|kernel BUG at'
    r'|BUG: sleeping function called from invalid context'
    r'|Unable to handle kernel|stack-protector|scheduling while atomic'
    r'|Attempted to kill init')
# Userspace programs that crash are logged by the kernel as "traps: ..."
# (or "<prog>[pid]: segfault at"); they are the program's problem, reported
# by its own test, not a kernel complaint.
IGNORE_RE = re.compile(r'\btraps: |: segfault at |potentially unexpected fatal signal'
                       r'|ODEBUG: selftest passed|ODEBUG: \d+ of \d+ active objects')
TS_RE = re.compile(r'^\[\s*\d+\.\d+\]')


def log_clean(prefix, text, only_kernel_lines):
    bad = []
    lines = []
    first = None
    for line in text.splitlines():
        line = line.rstrip('\r')
        if only_kernel_lines and not TS_RE.match(line):
            continue
        lines.append(line)
        if BAD_RE.search(line) and not IGNORE_RE.search(line):
            bad.append(line)
            if first is None:
                first = len(lines) - 1
    if bad:
        # the whole first report (a lockdep splat names its locks and
        # stacks on lines no pattern matches), so that a failure seen
        # once, e.g. in CI, can be understood from its verdict alone
        add('FAIL', prefix, ['%d complaint line(s) in the kernel log:' % len(bad)] + bad[:40] +
            ['the kernel log from the first complaint on:'] + lines[first:first + 120])
    else:
        add('PASS', prefix)


# ---------------------------------------------------------------------------


def read(path):
    with open(path, errors='replace') as f:
        return f.read()


def read_rc(path):
    try:
        return int(read(path).strip())
    except (OSError, ValueError):
        return None


def vm(results, flavour):
    done = os.path.exists(os.path.join(results, '.done'))
    console = os.path.join(results, 'console.log')
    job_rc = read_rc(os.path.join(results, '.done')) if done else None
    if done and job_rc in (124, 137):
        add('FAIL', '%s/vm/completed' % flavour,
            ['the job was killed at its deadline (VD_TIMEOUT); see job.log'])
    elif done and job_rc not in (0, None):
        add('FAIL', '%s/vm/completed' % flavour,
            ['the job ended with exit status %s before its end: the programs after the '
             'last one reported did not run; see job.log' % job_rc])
    elif done:
        add('PASS', '%s/vm/completed' % flavour)
    else:
        tail = read(console).splitlines()[-30:] if os.path.exists(console) else ['no console.log']
        add('FAIL', '%s/vm/completed' % flavour,
            ['the guest did not finish its job (timeout, panic or crash); console tail:'] + tail)

    p = os.path.join(results, 'harness.tap')
    if os.path.exists(p):
        walk(parse_tap(read(p).splitlines()), '%s/harness' % flavour)

    kdir = os.path.join(results, 'kunit')
    if os.path.isdir(kdir):
        for f in sorted(os.listdir(kdir)):
            if f.endswith('.ktap'):
                root = parse_tap(read(os.path.join(kdir, f)).splitlines())
                walk(root, flavour)

    sdir = os.path.join(results, 'selftests')
    if os.path.isdir(sdir):
        for f in sorted(os.listdir(sdir)):
            if f.endswith('.tap'):
                name = f[:-4]
                tap_program(flavour, name, read(os.path.join(sdir, f)),
                            read_rc(os.path.join(sdir, name + '.rc')))

    g = os.path.join(results, 'gtest.log')
    if os.path.exists(g):
        gtest('%s/gtest' % flavour, read(g), read_rc(os.path.join(results, 'gtest.rc')))

    # The kernel log: dmesg.txt when the job got that far, else the kernel's
    # lines on the console. A panic after dmesg was saved only shows on the
    # console, so that is always checked for the worst cases too.
    dm = os.path.join(results, 'dmesg.txt')
    text = ''
    only_kernel = False
    if os.path.exists(dm):
        text = read(dm)
        only_kernel = False
    elif os.path.exists(console):
        text = read(console)
        only_kernel = True
    km = os.path.join(results, 'kmemleak.txt')
    if os.path.exists(km):
        text += '\n' + read(km)
    if os.path.exists(console) and os.path.exists(dm):
        text += '\n' + '\n'.join(l for l in read(console).splitlines()
                                 if 'Kernel panic' in l or 'Oops' in l)
        only_kernel = False
    log_clean('%s/kernel/log-clean' % flavour, text, only_kernel)


CTEST_RE = re.compile(r'^\s*\d+/\d+ Test\s+#\d+: (\S+) \.*\s*(\**)(Passed|Failed|Not Run|Skipped|Timeout|Exception|SEGFAULT|\w+)')


def skip_reasons(junit):
    """{test: [why]} for the skipped tests of ctest's --output-junit file:
    what a gtest skip printed (gtest_skip_why()), else ctest's own message
    (e.g. the expression that matched)."""
    why = {}
    try:
        root = ET.parse(junit).getroot()
    except (OSError, ET.ParseError):
        return why
    for tc in root.iter('testcase'):
        sk = tc.find('skipped')
        if sk is None:
            continue
        out = (tc.findtext('system-out') or '').splitlines()
        run = [i for i, l in enumerate(out) if l.startswith('[ RUN')]
        end = [i for i, l in enumerate(out) if l.startswith('[  SKIPPED ]')]
        said = gtest_skip_why(out[run[0] + 1:end[0]]) if run and end else []
        why[tc.get('name')] = said or [sk.get('message') or 'skipped']
    return why


def ctest(path, prefix, junit=None):
    why = skip_reasons(junit) if junit else {}
    lines = read(path).splitlines()
    seen = False
    for i, line in enumerate(lines):
        m = CTEST_RE.match(line)
        if not m:
            continue
        seen = True
        name, stars, st = m.groups()
        full = '%s/%s' % (prefix, name)
        if st == 'Passed':
            add('PASS', full)
        elif st == 'Skipped' or 'Skipped' in line:
            add('SKIP', full, why.get(name, ()))
        else:
            detail = []
            for l in lines[i + 1:i + 40]:
                if CTEST_RE.match(l):
                    break
                detail.append(l)
            add('FAIL', full, [line.strip()] + detail)
    if not seen:
        add('FAIL', prefix + '/ran', ['no test results in %s' % path]
            + lines[-20:])


START = re.compile(r'^#  RUN +(\S+)|^\[ RUN +\] (\S+)')
END = re.compile(r'^(?:not )?ok \d+ (\S+)|^\[ +(?:OK|FAILED) +\] (\S+)')


def costs(results, most):
    """Prints the @most dearest tests of the run, from the *.times files
    guest-check.sh writes: "<second> <output line>" for each start and end."""
    rows = []
    paths = [os.path.join(results, 'gtest.times')]
    sel = os.path.join(results, 'selftests')
    if os.path.isdir(sel):
        paths += [os.path.join(sel, p) for p in sorted(os.listdir(sel))
                  if p.endswith('.times')]
    for path in paths:
        if not os.path.exists(path):
            continue
        prog = os.path.basename(path)[:-len('.times')]
        start = None
        for line in read(path).splitlines():
            t, _, text = line.partition(' ')
            if not t.isdigit():
                continue
            m = START.match(text)
            if m:
                start = int(t)
                continue
            m = END.match(text)
            if m and start is not None:
                rows.append((int(t) - start, prog, m.group(1) or m.group(2)))
                start = None
    rows.sort(key=lambda r: -r[0])
    for secs, prog, name in rows[:most]:
        print('%7ds  %s %s' % (secs, prog, name))
    return 0


def main(argv):
    if len(argv) >= 3 and argv[1] == 'costs':
        return costs(argv[2], int(argv[3]) if len(argv) > 3 else 12)
    if len(argv) >= 4 and argv[1] == 'vm':
        vm(argv[2], argv[3])
    elif len(argv) >= 3 and argv[1] == 'ctest':
        ctest(argv[2], argv[3] if len(argv) > 3 else 'host/ctest',
              argv[4] if len(argv) > 4 else None)
    else:
        sys.stderr.write(__doc__)
        return 2
    counts = {'PASS': 0, 'FAIL': 0, 'SKIP': 0}
    for st, name, detail in verdicts:
        counts[st] += 1
        print('%s %s' % (st, name))
        if st != 'PASS':
            for d in detail:
                if d.strip():
                    print('    | ' + d.rstrip())
    print('# totals: %d passed, %d failed, %d skipped'
          % (counts['PASS'], counts['FAIL'], counts['SKIP']))
    return 1 if counts['FAIL'] else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
