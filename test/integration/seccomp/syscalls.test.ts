// Loads the real filter into bwrap and attempts each forbidden call, beside a control run of the
// same probe under bwrap without the filter. probe.c prints "name result" per probe: 0, an errno,
// or sig<N>. Needs gcc, bwrap and script (util-linux); SBX_SKIP_SECCOMP_INTEGRATION=1 skips.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type SeccompSettings,
  assembleSeccompFilter,
  hostSeccompArch,
  resolveSeccompRules,
} from '../../../src/seccomp/index.js';

const SKIP = process.env.SBX_SKIP_SECCOMP_INTEGRATION === '1';
const PROBE_SOURCE = join(dirname(fileURLToPath(import.meta.url)), 'probe.c');
const ARCH = SKIP ? 'x86_64' : hostSeccompArch(process.arch);
const BWRAP_BASE = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--unshare-all', '--die-with-parent'];

const EPERM = '1';
const ESRCH = '3';
const EFAULT = '14';
const ENOSYS = '38';
const EAFNOSUPPORT = '97';
const SIGSYS = 'sig31';
const SIGSEGV = 'sig11';

/** Calls through another ABI's entry point: the filter kills them (SIGSYS) whatever the number. x86_64 only. */
const FOREIGN_ABIS = ['x32_getpid', 'i386_getpid'];

/** Under the default filter. Probes absent on this arch (x86-only ones on aarch64) are ignored. */
const DEFAULT_EXPECTED: Record<string, string> = {
  // Denied.
  ...Object.fromEntries(
    [
      'mount',
      'umount2',
      'pivot_root',
      'move_mount',
      'open_tree',
      'open_tree_attr',
      'fsopen',
      'fsconfig',
      'fsmount',
      'fspick',
      'mount_setattr',
      'ptrace',
      'process_vm_readv',
      'process_vm_writev',
      'kexec_load',
      'kexec_file_load',
      'init_module',
      'finit_module',
      'delete_module',
      'bpf',
      'perf_event_open',
      'userfaultfd',
      'keyctl',
      'add_key',
      'request_key',
      'setns',
      'unshare_newuser',
      'unshare_newns',
      'clone_newuser',
      'personality_norandom',
      'ioctl_tiocsti',
      'ioctl_tiocsti_high',
      'ioctl_tioclinux',
      'swapon',
      'swapoff',
      'reboot',
      'acct',
      'quotactl',
      'quotactl_fd',
      'open_by_handle_at',
      'name_to_handle_at',
      'syslog',
      'io_uring_setup',
      'io_uring_enter',
      'io_uring_register',
      'uselib',
      '_sysctl',
      'nfsservctl',
      'lookup_dcookie',
      'iopl',
      'ioperm',
      'create_module',
      'get_kernel_syms',
      'query_module',
      'afs_syscall',
    ].map((name) => [name, EPERM]),
  ),
  clone3: ENOSYS,
  // Allowed: the sandbox still works.
  getpid: '0',
  unshare_files: '0',
  clone_plain: '0',
  personality_query: '0',
  ioctl_tcgets: '9', // EBADF from the kernel, not the filter
  socket_inet: '0',
};

/**
 * Probes whose arguments make the unfiltered call fail (or succeed) in a way that cannot be EPERM,
 * as root and unprivileged alike: a different result without the filter shows the filter did it.
 */
const CONTROLLED = [
  'mount',
  'umount2',
  'ptrace',
  'process_vm_readv',
  'process_vm_writev',
  'perf_event_open',
  'setns',
  'unshare_newuser',
  'clone_newuser',
  'clone3',
  'personality_norandom',
  'ioctl_tiocsti',
  'ioctl_tiocsti_high',
  'ioctl_tioclinux',
  'quotactl_fd',
  'name_to_handle_at',
  'io_uring_enter',
  'uselib',
];

function settings(overrides: Partial<SeccompSettings> = {}): SeccompSettings {
  return { preset: 'default', add: [], remove: [], allowIoUring: false, ...overrides };
}

function filter(overrides: Partial<SeccompSettings> = {}): Uint8Array {
  return assembleSeccompFilter(resolveSeccompRules(settings(overrides)), ARCH);
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** bwrap [--seccomp 3] ARGV, the program written to fd 3 through a pipe (as sbx does). */
function bwrap(argv: string[], program: Uint8Array | undefined): Promise<Run> {
  const args = [...BWRAP_BASE, ...(program ? ['--seccomp', '3'] : []), ...argv];
  const child = spawn('bwrap', args, { stdio: ['ignore', 'pipe', 'pipe', program ? 'pipe' : 'ignore'] });
  if (program) (child.stdio[3] as NodeJS.WritableStream).end(Buffer.from(program));
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

function parse(stdout: string): Record<string, string> {
  const results: Record<string, string> = {};
  // Lines may carry pty echo in front (TIOCSTI's injected byte) and \r at the end.
  for (const match of stdout.matchAll(/(\w+) (\w+)\r?$/gm)) results[match[1]!] = match[2]!;
  return results;
}

describe.skipIf(SKIP)(`seccomp filter loaded by bwrap (${ARCH})`, () => {
  let dir = '';
  let probe = '';
  let available: string[] = [];
  let filtered: Record<string, string> = {};
  let unfiltered: Record<string, string> = {};

  async function probes(program: Uint8Array | undefined, names = available): Promise<Record<string, string>> {
    const run = await bwrap([probe, ...names], program);
    expect(run.code, run.stderr).toBe(0);
    return parse(run.stdout);
  }

  beforeAll(async () => {
    for (const [tool, flag] of [
      ['gcc', '--version'],
      ['bwrap', '--version'],
      ['script', '--version'],
    ] as const) {
      const found = spawnSync(tool, [flag], { stdio: 'ignore' });
      if (found.error) {
        throw new Error(
          `${tool} is required for the seccomp integration tests (${found.error.message}); install it or set SBX_SKIP_SECCOMP_INTEGRATION=1`,
        );
      }
    }
    dir = mkdtempSync(join(tmpdir(), 'sbx-seccomp-'));
    probe = join(dir, 'probe');
    execFileSync('gcc', ['-O1', '-o', probe, PROBE_SOURCE]);
    available = execFileSync(probe, ['list'], { encoding: 'utf8' }).trim().split('\n');
    [filtered, unfiltered] = await Promise.all([probes(filter()), probes(undefined)]);
  });

  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('every denied call fails with EPERM (clone3 ENOSYS), ordinary calls work', () => {
    const expected = Object.fromEntries(Object.entries(DEFAULT_EXPECTED).filter(([name]) => available.includes(name)));
    const seen = Object.fromEntries(Object.keys(expected).map((name) => [name, filtered[name]]));
    expect(seen).toEqual(expected);
  });

  it.for(FOREIGN_ABIS)('a %s call dies by SIGSYS; without the filter it does not', (name, { skip }) => {
    if (!available.includes(name)) skip(`no ${name} probe on ${ARCH}`);
    // A kernel without that ABI's entry point (IA32 emulation off) faults the call before seccomp
    // sees it: SIGSEGV with or without the filter, so there is nothing for the filter to kill.
    if (unfiltered[name] === SIGSEGV) {
      const reason = `${name}: without the filter it already dies by SIGSEGV (this kernel cannot run that ABI)`;
      console.warn(`[seccomp integration] SKIPPED: ${reason}`);
      skip(reason);
    }
    expect(filtered[name], `${name} under the filter`).toBe(SIGSYS);
    expect(unfiltered[name], `${name} without the filter`).toBeDefined();
    expect(unfiltered[name], `${name} without the filter`).not.toBe(SIGSYS);
  });

  it('control: without the filter the same calls see something else', () => {
    for (const name of CONTROLLED.filter((n) => available.includes(n))) {
      expect(unfiltered[name], `${name} without the filter`).toBeDefined();
      expect(unfiltered[name], `${name}: unfiltered ${unfiltered[name]} vs filtered ${filtered[name]}`).not.toBe(
        filtered[name],
      );
    }
    // The probes that must work under the filter also work without it, with the same result.
    for (const name of ['getpid', 'unshare_files', 'clone_plain', 'personality_query', 'ioctl_tcgets']) {
      expect(unfiltered[name], name).toBe(filtered[name]);
    }
  });

  it('allowIoUring lets io_uring through', async () => {
    const results = await probes(filter({ allowIoUring: true }), ['io_uring_setup', 'io_uring_enter', 'mount']);
    expect(results.io_uring_setup).toBe(unfiltered.io_uring_setup);
    expect(results.io_uring_setup).not.toBe(EPERM);
    expect(results.io_uring_enter).toBe('9'); // EBADF: reached the kernel
    expect(results.mount).toBe(EPERM);
  });

  it('remove: [ptrace] lets ptrace reach the kernel', async () => {
    const results = await probes(filter({ remove: ['ptrace'] }), ['ptrace', 'process_vm_readv']);
    expect(results).toEqual({ ptrace: ESRCH, process_vm_readv: EPERM });
  });

  it('strict adds its denials and keeps IP sockets', async () => {
    const names = ['chroot', 'socket_packet', 'socket_inet', 'pkey_alloc', 'modify_ldt', 'mount'].filter((n) =>
      available.includes(n),
    );
    const results = await probes(filter({ preset: 'strict' }), names);
    const expected: Record<string, string> = {
      chroot: EPERM,
      socket_packet: EAFNOSUPPORT,
      socket_inet: '0',
      pkey_alloc: ENOSYS,
      modify_ldt: EPERM,
      mount: EPERM,
    };
    expect(results).toEqual(Object.fromEntries(names.map((n) => [n, expected[n]!])));
    expect(unfiltered.chroot).toBe(EFAULT); // the bad pointer, so strict's EPERM is the filter's
  });

  it('unshare -U fails inside the sandbox and works without the filter', async () => {
    const denied = await bwrap(['unshare', '-U', 'true'], filter());
    expect(denied.code).toBe(1);
    expect(denied.stderr).toContain('Operation not permitted');
    const control = await bwrap(['unshare', '-U', 'true'], undefined);
    expect(control.code, control.stderr).toBe(0);
  });

  it('TIOCSTI on a real controlling pty is refused; without the filter it goes through', () => {
    // script(1) runs the command on a fresh pty that is its controlling terminal; bwrap keeps the
    // session (no --new-session), exactly the interactive case sbx leaves to seccomp.
    const bpf = join(dir, 'default.bpf');
    writeFileSync(bpf, filter());
    const sq = (word: string) => `'${word.replaceAll("'", "'\\''")}'`;
    const onPty = (withFilter: boolean) => {
      const argv = [...BWRAP_BASE, ...(withFilter ? ['--seccomp', '3'] : []), probe, 'ioctl_tiocsti_tty'];
      const command = `exec bwrap ${argv.map(sq).join(' ')}${withFilter ? ` 3<${sq(bpf)}` : ''}`;
      const out = spawnSync('script', ['-qec', command, '/dev/null'], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
        timeout: 10_000,
      });
      expect(out.status, out.stderr).toBe(0);
      return parse(out.stdout).ioctl_tiocsti_tty;
    };
    expect(onPty(true)).toBe(EPERM);
    const control = onPty(false);
    // 0 where dev.tty.legacy_tiocsti=1 (the injection works), EIO where the kernel already refuses it.
    expect(['0', '5']).toContain(control);
  });
});
