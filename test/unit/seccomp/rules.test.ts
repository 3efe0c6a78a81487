import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  type SeccompSettings,
  assembleSeccompFilter,
  hostSeccompArch,
  resolveSeccompRules,
} from '../../../src/seccomp/index.js';
import { SYSCALLS_AARCH64 } from '../../../src/seccomp/syscalls-aarch64.js';
import { SYSCALLS_X86_64 } from '../../../src/seccomp/syscalls-x86_64.js';
import { SRC_DIR } from '../../helpers/paths.js';
import { sbxErrorOf } from '../../helpers/errors.js';

function settings(overrides: Partial<SeccompSettings> = {}): SeccompSettings {
  return { preset: 'default', add: [], remove: [], allowIoUring: false, ...overrides };
}

const names = (overrides: Partial<SeccompSettings> = {}) =>
  resolveSeccompRules(settings(overrides)).map((rule) => rule.syscall);

describe('resolveSeccompRules', () => {
  it('returns plain, sorted JSON with one rule per syscall', () => {
    for (const preset of ['default', 'strict'] as const) {
      const rules = resolveSeccompRules(settings({ preset }));
      expect(JSON.parse(JSON.stringify(rules))).toEqual(rules);
      const list = rules.map((rule) => rule.syscall);
      expect(list).toEqual([...list].sort());
      expect(new Set(list).size).toBe(list.length);
    }
  });

  it('default carries the argument rules in their documented shape', () => {
    const rules = resolveSeccompRules(settings());
    expect(rules.find((r) => r.syscall === 'ioctl')).toEqual({
      syscall: 'ioctl',
      errno: 'EPERM',
      when: { arg: 1, op: 'eq-low32', value: [0x5412, 0x541c] },
    });
    expect(rules.find((r) => r.syscall === 'clone')).toEqual({
      syscall: 'clone',
      errno: 'EPERM',
      when: { arg: 0, op: 'masked-any', value: 0x7e020000 },
    });
    expect(rules.find((r) => r.syscall === 'clone3')).toEqual({ syscall: 'clone3', errno: 'ENOSYS' });
    expect(rules.find((r) => r.syscall === 'personality')?.when).toEqual({
      arg: 0,
      op: 'ne-list',
      value: [0, 8, 0x20000, 0x20008, 0xffffffff],
    });
  });

  it('strict is a superset of default', () => {
    const strict = new Set(names({ preset: 'strict' }));
    for (const name of names()) expect(strict.has(name), name).toBe(true);
    expect(strict.has('chroot')).toBe(true);
    expect(strict.size).toBeGreaterThan(names().length);
  });

  it('every built-in rule names a syscall of some supported arch', () => {
    for (const name of names({ preset: 'strict' })) {
      expect(Object.hasOwn(SYSCALLS_X86_64, name) || Object.hasOwn(SYSCALLS_AARCH64, name), name).toBe(true);
    }
  });

  it('off is empty; off with add is just the additions', () => {
    expect(resolveSeccompRules(settings({ preset: 'off' }))).toEqual([]);
    expect(resolveSeccompRules(settings({ preset: 'off', add: ['ptrace'] }))).toEqual([
      { syscall: 'ptrace', errno: 'EPERM' },
    ]);
  });

  it('remove drops a rule, allowIoUring drops the io_uring three', () => {
    expect(names({ remove: ['ptrace'] })).not.toContain('ptrace');
    expect(names({ remove: ['ptrace'] })).toContain('process_vm_readv');
    expect(names()).toEqual(expect.arrayContaining(['io_uring_setup', 'io_uring_enter', 'io_uring_register']));
    expect(names({ allowIoUring: true }).filter((n) => n.startsWith('io_uring'))).toEqual([]);
  });

  it('add denies outright with EPERM, replaces an argument rule, keeps clone3 at ENOSYS', () => {
    const rules = resolveSeccompRules(settings({ add: ['chmod', 'ioctl', 'clone3', 'chmod'] }));
    expect(rules.filter((r) => r.syscall === 'chmod')).toEqual([{ syscall: 'chmod', errno: 'EPERM' }]);
    expect(rules.filter((r) => r.syscall === 'ioctl')).toEqual([{ syscall: 'ioctl', errno: 'EPERM' }]);
    expect(rules.filter((r) => r.syscall === 'clone3')).toEqual([{ syscall: 'clone3', errno: 'ENOSYS' }]);
  });

  it('add wins over remove (fail closed)', () => {
    expect(names({ add: ['ptrace'], remove: ['ptrace'] })).toContain('ptrace');
  });

  it('an unknown name is SECCOMP_INVALID with a did-you-mean and the key in the hint', () => {
    const error = sbxErrorOf(() => resolveSeccompRules(settings({ add: ['ptrce'] })));
    expect(error.code).toBe('SECCOMP_INVALID');
    expect(error.message).toBe('unknown syscall "ptrce" (did you mean "ptrace"?)');
    expect(error.hint).toContain('seccomp.add');
    const removeError = sbxErrorOf(() => resolveSeccompRules(settings({ remove: ['io_uring_setpu', 'zzzzzzzzzzzz'] })));
    expect(removeError.message).toContain('did you mean "io_uring_setup"');
    expect(removeError.hint).toContain('seccomp.remove');
    expect(removeError.details).toEqual(['unknown syscall "zzzzzzzzzzzz"']);
  });

  it('names that only exist on one arch are valid (profiles are portable)', () => {
    expect(names({ add: ['ioperm', 'renameat'] })).toEqual(expect.arrayContaining(['ioperm', 'renameat']));
  });

  it('Object.prototype keys are not syscalls', () => {
    for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
      expect(sbxErrorOf(() => resolveSeccompRules(settings({ add: [name] }))).code).toBe('SECCOMP_INVALID');
    }
  });
});

describe('assembleSeccompFilter input checks', () => {
  it('refuses malformed rules with SECCOMP_INVALID', () => {
    const bad = [
      { syscall: 'nosuchcall', errno: 'EPERM' },
      { syscall: 'ioctl', errno: 'EBADF' },
      { syscall: 'ioctl', errno: 'EPERM', when: { arg: 6, op: 'eq-low32', value: 1 } },
      { syscall: 'ioctl', errno: 'EPERM', when: { arg: 1, op: 'eq-low32', value: 2 ** 32 } },
      { syscall: 'ioctl', errno: 'EPERM', when: { arg: 1, op: 'ne-list', value: [] } },
      { syscall: 'clone', errno: 'EPERM', when: { arg: 0, op: 'masked-any', value: [1, 2] } },
      { syscall: 'clone', errno: 'EPERM', when: { arg: 0, op: 'lt', value: 1 } },
    ];
    for (const rule of bad) {
      expect(sbxErrorOf(() => assembleSeccompFilter([rule as never], 'x86_64')).code, JSON.stringify(rule)).toBe(
        'SECCOMP_INVALID',
      );
    }
  });
});

describe('hostSeccompArch', () => {
  it('maps Node arch names', () => {
    expect(hostSeccompArch('x64')).toBe('x86_64');
    expect(hostSeccompArch('arm64')).toBe('aarch64');
  });
  it.each(['ia32', 'arm', 'riscv64', 's390x', 'ppc64', ''])('refuses %j with SECCOMP_UNSUPPORTED_ARCH', (arch) => {
    const error = sbxErrorOf(() => hostSeccompArch(arch));
    expect(error.code).toBe('SECCOMP_UNSUPPORTED_ARCH');
    expect(error.hint).toContain('seccomp.preset');
  });
});

describe('purity', () => {
  it('src/seccomp imports no I/O and reads no process state', () => {
    const dir = join(SRC_DIR, 'seccomp');
    for (const file of readdirSync(dir)) {
      // Comments may mention process.arch; only code counts.
      const text = readFileSync(join(dir, file), 'utf8')
        .replace(/\/\*[\s\S]*?\*\//g, '')
        .replace(/\/\/.*$/gm, '');
      expect(text, file).not.toMatch(/from ['"](node:)?(fs|child_process|os|net|process)(\/promises)?['"]/);
      expect(text, file).not.toMatch(/\bprocess\.(env|arch|platform|cwd)\b|\bDate\.now\b|\bMath\.random\b/);
      expect(text, file).not.toMatch(/^(export\s+)?(let|var)\s/m); // module-level state
    }
  });
});
