// The report cannot be forged or lost silently (real bwrap via bin/sbx.js): a --report-file the
// sandbox could write is refused before anything runs, a symlink at the path is refused, the command
// cannot touch a report outside its writable trees; --report-fd takes only a descriptor the caller
// opened (never one of Node's own); a report that cannot be written after the run is one line on
// stderr and the command's status stands. Every report read here is validated against the schema.
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseReport, readReport } from '../../helpers/report.js';
import {
  makeTestHost,
  requireIntegrationPrerequisites,
  runHost,
  runSbx,
  SBX_BIN,
  SKIP_INTEGRATION,
  start,
  type TestHost,
} from '../../helpers/sbx-cli.js';

let t: TestHost;
const opts = () => ({ env: t.env, cwd: t.workspace });
const ran = (name: string) => existsSync(join(t.workspace, name));

describe.skipIf(SKIP_INTEGRATION)('report integrity (real bwrap via bin/sbx.js)', () => {
  beforeAll(() => {
    requireIntegrationPrerequisites();
    t = makeTestHost('report');
  });
  afterAll(() => t?.cleanup());

  describe('--report-file', () => {
    it('inside the workspace (directly, or through a symlinked directory): refused up front, exit 2, nothing ran', async () => {
      const link = join(t.root, 'ws-link');
      symlinkSync(t.workspace, link);
      for (const file of [join(t.workspace, 'report.json'), 'report-rel.json', join(link, 'via-link.json')]) {
        const r = await runSbx(['--report-file', file, '--', 'touch', 'ran-ws-report'], opts());
        expect(r.code, file).toBe(2);
        expect(r.err).toMatch(
          new RegExp(
            `^sbx: error: --report-file .*: ${t.workspace}/[^ ]+ lies in ${t.workspace}, which the sandbox can write`,
            'm',
          ),
        );
        expect(r.err).not.toContain('    at ');
        expect(ran('ran-ws-report')).toBe(false);
      }
      expect(existsSync(join(t.workspace, 'report.json'))).toBe(false);
    });

    it('in a writable --bind: refused too', async () => {
      const shared = join(t.root, 'shared-rw');
      mkdirSync(shared, { recursive: true });
      const r = await runSbx(
        ['--bind', shared, '--report-file', join(shared, 'r.json'), '--', 'touch', 'ran-bind-report'],
        opts(),
      );
      expect(r.code).toBe(2);
      expect(r.err).toMatch(/which the sandbox can write/);
      expect(ran('ran-bind-report')).toBe(false);
    });

    it('outside: the command cannot overwrite or remove it (control: it can unsandboxed); the report read after is genuine', async () => {
      const file = join(t.root, 'genuine.json');
      const forge = `echo "$SBX_SESSION_ID"; echo '{"format":1,"exitCode":0}' > ${file}; rm -f ${file}; ln -sf /dev/null ${file}; exit 9`;
      const control = join(t.root, 'control.json');
      writeFileSync(control, 'original');
      const host = await runHost(['sh', '-c', forge.replaceAll(file, control)], opts());
      expect(existsSync(control)).toBe(true); // the ln -sf ran
      expect(readFileSync(control, 'utf8')).toBe(''); // now a symlink to /dev/null
      expect(host.code).toBe(9);
      const r = await runSbx(['--report-file', file, '--', 'sh', '-c', forge], opts());
      expect(r.code).toBe(9);
      const report = readReport(file);
      expect(report).toMatchObject({
        sessionId: r.out.trim(),
        exitCode: 9,
        setBy: 'child',
        command: ['sh', '-c', forge],
      });
    });

    it('a symlink planted at the path is refused before anything runs; its target is untouched', async () => {
      const target = join(t.root, 'symlink-target.txt');
      writeFileSync(target, 'keep me');
      const planted = join(t.root, 'planted.json');
      symlinkSync(target, planted);
      const r = await runSbx(['--report-file', planted, '--', 'touch', 'ran-symlink-report'], opts());
      expect(r.code).toBe(2);
      expect(r.err).toMatch(new RegExp(`^sbx: error: --report-file ${planted}: ${planted} is a symbolic link$`, 'm'));
      expect(readFileSync(target, 'utf8')).toBe('keep me');
      expect(ran('ran-symlink-report')).toBe(false);
    });

    it('a refusal report (unknown profile) goes to the file too: sessionId, profile null, durationMs', async () => {
      const file = join(t.root, 'refusal.json');
      const r = await runSbx(['--report-file', file, '-p', 'no-such-profile', '--', 'true'], opts());
      expect(r.code).toBe(125);
      const report = readReport(file);
      expect(report).toMatchObject({
        profile: null,
        exitCode: 125,
        setBy: 'sbx',
        error: { code: 'PROFILE_NOT_FOUND' },
      });
      expect(report.sessionId).toMatch(/^[0-9a-z]+-[0-9a-f]{8}$/);
      expect(report).not.toHaveProperty('policyHash');
      expect(report.durationMs).toBeGreaterThanOrEqual(0);
    });
  });

  describe('refusal reports carry the run facts', () => {
    it('a command refused after the policy was derived: sessionId, profile, backend, policyHash, durationMs', async () => {
      const r = await runSbx(['--report-fd', '3', '-p', 'agent', '--', 'rm', '-rf', 'x'], {
        ...opts(),
        extraStdio: { 3: 'pipe' },
      });
      expect(r.code).toBe(126);
      const report = parseReport(r.extra[3]!.toString());
      expect(report).toMatchObject({ profile: { name: 'agent' }, backend: 'bwrap', setBy: 'sbx', exitCode: 126 });
      expect(report.policyHash).toMatch(/^[0-9a-f]{16}$/);
      expect(report.profile!.hash).toMatch(/^[0-9a-f]{64}$/);
      expect(typeof report.durationMs).toBe('number');
      expect(report.violations.length).toBeGreaterThan(0);
    });

    it('danger without --danger (refused while deriving the policy): the profile, no policyHash', async () => {
      const r = await runSbx(['--report-fd', '3', '-p', 'danger', '--', 'true'], {
        ...opts(),
        extraStdio: { 3: 'pipe' },
      });
      expect(r.code).toBe(126);
      const report = parseReport(r.extra[3]!.toString());
      expect(report.profile?.name).toBe('danger');
      expect(report).not.toHaveProperty('policyHash');
    });
  });

  describe('--report-fd', () => {
    it.each([3, 5, 10, 17])(
      'descriptor %i not opened by the caller (Node holds its own there): usage error, exit 2, nothing ran',
      async (fd) => {
        const marker = `ran-unopened-${fd}`;
        const r = await runSbx(['--report-fd', String(fd), '--', 'touch', marker], opts());
        expect(r.code).toBe(2);
        expect(r.err).toBe(
          `sbx: error: --report-fd ${fd}: descriptor ${fd} is not open\nsbx: hint: open it in the calling shell, e.g. ${fd}>report.json\n`,
        );
        expect(ran(marker)).toBe(false);
      },
    );

    it('the same descriptors opened by the caller work', async () => {
      for (const fd of [5, 10, 17]) {
        const r = await runSbx([`--report-fd=${fd}`, '--', 'sh', '-c', `exit ${fd}`], {
          ...opts(),
          extraStdio: { [fd]: 'pipe' },
        });
        expect(r.code).toBe(fd);
        expect(parseReport(r.extra[fd]!.toString())).toMatchObject({ exitCode: fd, setBy: 'child' });
      }
    });

    it('a descriptor that is a file in the workspace is refused before anything runs (control: outside it works)', async () => {
      const inside = join(t.workspace, 'fd-report.json');
      const fd = openSync(inside, 'w');
      try {
        const r = await runSbx(['--report-fd', '5', '--', 'touch', 'ran-ws-fd'], { ...opts(), extraStdio: { 5: fd } });
        expect(r.code).toBe(2);
        expect(r.err).toContain(
          `sbx: error: --report-fd 5: it is ${inside}, in ${t.workspace}, which the sandbox can write`,
        );
        expect(ran('ran-ws-fd')).toBe(false);
      } finally {
        closeSync(fd);
      }
      const outside = join(t.root, 'fd-report.json');
      const ok = openSync(outside, 'w');
      try {
        const r = await runSbx(['--report-fd', '5', '--', 'true'], { ...opts(), extraStdio: { 5: ok } });
        expect(r.code).toBe(0);
      } finally {
        closeSync(ok);
      }
      expect(parseReport(readFileSync(outside, 'utf8'))).toMatchObject({ exitCode: 0, setBy: 'child' });
    });

    it('a descriptor open only for reading is refused up front', async () => {
      const fd = openSync('/etc/hostname', 'r');
      try {
        const r = await runSbx(['--report-fd', '5', '--', 'touch', 'ran-readonly-fd'], {
          ...opts(),
          extraStdio: { 5: fd },
        });
        expect(r.code).toBe(2);
        expect(r.err).toMatch(/^sbx: error: --report-fd 5: descriptor 5 is not open for writing$/m);
        expect(ran('ran-readonly-fd')).toBe(false);
      } finally {
        closeSync(fd);
      }
    });

    it('started as `node bin/sbx.js` (no launcher check): --report-fd is refused, never guessed', async () => {
      const r = await start(process.execPath, [SBX_BIN, 'run', '--report-fd', '3', '--', 'touch', 'ran-no-launcher'], {
        ...opts(),
        extraStdio: { 3: 'pipe' },
      }).done;
      expect(r.code).toBe(2);
      expect(r.err).toMatch(/cannot tell the caller's descriptor 3 from Node's own/);
      expect(ran('ran-no-launcher')).toBe(false);
    });

    it("a caller's SBX_CALLER_FDS is overwritten by the launcher", async () => {
      const r = await runSbx(['--report-fd', '5', '--', 'touch', 'ran-forged-env'], {
        env: { ...t.env, SBX_CALLER_FDS: ' 5' },
        cwd: t.workspace,
      });
      expect(r.code).toBe(2);
      expect(ran('ran-forged-env')).toBe(false);
    });
  });

  describe('a report that cannot be written after the run', () => {
    it('a full disk (/dev/full, ENOSPC): one stderr line, the command ran and its status stands', async () => {
      const fd = openSync('/dev/full', 'w');
      try {
        const r = await runSbx(['--report-fd', '3', '--', 'sh', '-c', 'touch ran-enospc; exit 7'], {
          ...opts(),
          extraStdio: { 3: fd },
        });
        expect(r.code).toBe(7);
        expect(ran('ran-enospc')).toBe(true);
        expect(r.err).toMatch(
          /^sbx: the report could not be written to --report-fd 3 \(ENOSPC\); the exit status is the run's$/m,
        );
        expect(r.err).not.toContain('    at ');
        expect(r.err).not.toContain('internal error');
      } finally {
        closeSync(fd);
      }
    });

    it('a pipe whose reader is gone (EPIPE): one stderr line, exit status kept (control: the pipe really is closed)', async () => {
      // python3 makes the pipe, closes its read end, and execs sbx with the write end as fd 3.
      const wrap = 'import os,sys\nr,w=os.pipe()\nos.close(r)\nos.dup2(w,3)\nos.execv(sys.argv[1],sys.argv[1:])';
      const control = spawnSync('python3', ['-c', wrap, '/bin/sh', '-c', 'echo x >&3'], {
        encoding: 'utf8',
        env: t.env,
      });
      expect(control.status).not.toBe(0); // sh: write error (EPIPE; python leaves SIGPIPE ignored)
      const r = await start(
        'python3',
        ['-c', wrap, SBX_BIN, 'run', '--report-fd', '3', '--', 'sh', '-c', 'exit 6'],
        opts(),
      ).done;
      expect(r.code).toBe(6);
      expect(r.err).toMatch(
        /^sbx: the report could not be written to --report-fd 3 \(EPIPE\); the exit status is the run's$/m,
      );
      expect(r.err).not.toContain('    at ');
    });
  });
});
