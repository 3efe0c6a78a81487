// The kernel's host-global state, through real bwrap (and nsjail where there is one): a root caller's
// command is the host's kuid 0, which the kernel lets write a sysctl on the file's owner bits alone,
// with no capability (policy/derive/kernel.ts). Each case runs the same probe unsandboxed as the
// control. The probe only ever writes a sysctl's own current value back (vm.stat_interval); it opens
// kernel.core_pattern and /proc/sysrq-trigger for writing and never writes a byte to them.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callRun, connectSbx } from '../mcp/client.js';
import {
  DIST_API,
  IS_ROOT,
  makeTestHost,
  requireIntegrationPrerequisites,
  runHost,
  runSbx,
  SKIP_INTEGRATION,
  type TestHost,
} from '../../helpers/sbx-cli.js';
import { findNsjail } from '../nsjail/harness.js';

const PROBE = `
import json, os
out = {}
def open_for_writing(path, write_back=False):
    try:
        fd = os.open(path, os.O_WRONLY)
    except OSError as e:
        return os.strerror(e.errno)
    try:
        if write_back:
            with open(path) as f:
                os.write(fd, f.read().encode())
        return 'opened'
    finally:
        os.close(fd)
def read_only(path):
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError as e:
        return os.strerror(e.errno)
def content(path):
    try:
        with open(path, 'rb') as f:
            return len(f.read(4096))
    except OSError as e:
        return os.strerror(e.errno)
out['stat_interval'] = open_for_writing('/proc/sys/vm/stat_interval', write_back=True)
out['core_pattern'] = open_for_writing('/proc/sys/kernel/core_pattern')
out['sysrq'] = open_for_writing('/proc/sysrq-trigger') if os.path.exists('/proc/sysrq-trigger') else 'absent'
for path in ['/proc/sys', '/proc/sys/kernel', '/proc/irq', '/dev']:
    out['ro ' + path] = read_only(path)
for path in ['/proc/keys', '/proc/timer_list', '/proc/interrupts']:
    out['bytes ' + path] = content(path)
try:
    os.close(os.open('/dev/planted', os.O_WRONLY | os.O_CREAT, 0o600))
    out['dev file'] = 'created'
except OSError as e:
    out['dev file'] = os.strerror(e.errno)
shm = os.statvfs('/dev/shm')
out['shm bytes'] = shm.f_blocks * shm.f_frsize
print(json.dumps(out))
`;

const ROFS = 'Read-only file system';
const nsjail = findNsjail();
if ('missing' in nsjail) console.warn(`[kernel state under nsjail] SKIPPED: ${nsjail.missing}`);

describe.skipIf(SKIP_INTEGRATION)('host-global kernel state (real bwrap via bin/sbx.js)', () => {
  let t: TestHost;
  const opts = () => ({ env: t.env, cwd: t.workspace });
  const probe = ['python3', 'probe.py'];
  const parse = (out: string) => JSON.parse(out) as Record<string, string | number | boolean>;

  beforeAll(() => {
    requireIntegrationPrerequisites();
    t = makeTestHost('kernel');
    writeFileSync(join(t.workspace, 'probe.py'), PROBE);
  });
  afterAll(() => t?.cleanup());

  it.runIf(IS_ROOT)('control, as root: sysctls and the SysRq trigger open for writing unsandboxed', async () => {
    const r = await runHost(probe, opts());
    expect(r.code, r.err).toBe(0);
    const got = parse(r.out);
    expect(got).toMatchObject({ stat_interval: 'opened', core_pattern: 'opened', 'ro /proc/sys': false });
    expect(['opened', 'absent']).toContain(got.sysrq);
  });

  it.each([['default'], ['untrusted'], ['agent']])(
    '-p %s: /proc/sys, /proc/irq and the SysRq trigger are read-only mounts, the leaks hidden, /dev unwritable',
    async (profile) => {
      const r = await runSbx(['-p', `builtin:${profile}`, '--', ...probe], opts());
      expect(r.code, r.err).toBe(0);
      const got = parse(r.out);
      // As root the open itself meets the read-only mount; as a user, the owner bits refuse first.
      const refused = IS_ROOT ? ROFS : 'Permission denied';
      expect(got).toMatchObject({ stat_interval: refused, core_pattern: refused });
      expect(['absent', refused]).toContain(got.sysrq);
      expect(got).toMatchObject({ 'ro /proc/sys': true, 'ro /proc/sys/kernel': true, 'ro /proc/irq': true });
      expect(got).toMatchObject({ 'bytes /proc/keys': 0, 'bytes /proc/timer_list': 0, 'bytes /proc/interrupts': 0 });
      expect(got).toMatchObject({ 'ro /dev': true, 'dev file': ROFS, 'shm bytes': 64 * 1024 * 1024 });
    },
  );

  // The library and sbx mcp derive the same policy: the attack came through both doors as well.
  it('library run() and sbx mcp: the same covers', async () => {
    const api = (await import(DIST_API)) as typeof import('../../../src/api.js');
    const lib = await api.run({ command: probe, stdio: 'capture', cwd: t.workspace, hostEnv: t.env });
    expect(lib.exitCode, lib.stderr?.toString()).toBe(0);
    const refused = IS_ROOT ? ROFS : 'Permission denied';
    expect(parse(lib.stdout!.toString())).toMatchObject({ core_pattern: refused, 'ro /proc/sys': true });
    const mcp = await connectSbx([], t.env, t.workspace);
    try {
      const r = await callRun(mcp, { command: probe });
      expect(r.isError, r.text).toBe(false);
      expect(parse(r.report.captured!.stdout.text)).toMatchObject({ core_pattern: refused, 'ro /proc/sys': true });
    } finally {
      await mcp.close();
    }
  });

  it('danger mode lends the host files, not the kernel: /proc/sys stays read-only', async () => {
    const r = await runSbx(['-p', 'builtin:danger', '--danger', '--', ...probe], opts());
    expect(r.code, r.err).toBe(0);
    const got = parse(r.out);
    expect(got).toMatchObject({ 'ro /proc/sys': true, 'ro /dev': true });
    expect(got.stat_interval).toBe(IS_ROOT ? ROFS : 'Permission denied');
  });

  it.skipIf(!('path' in nsjail))('--backend nsjail: its whole procfs is read-only', async () => {
    const env = { ...t.env, SBX_NSJAIL: 'path' in nsjail ? nsjail.path : '' };
    const r = await runSbx(['--backend', 'nsjail', '--', ...probe], { env, cwd: t.workspace });
    expect(r.code, r.err).toBe(0);
    const got = parse(r.out);
    const refused = IS_ROOT ? ROFS : 'Permission denied';
    expect(got).toMatchObject({ stat_interval: refused, core_pattern: refused, 'ro /proc/sys': true });
    expect(got).toMatchObject({ 'ro /dev': true, 'dev file': ROFS, 'shm bytes': 64 * 1024 * 1024 });
  });
});
