// Golden Kafel text for the default set. A diff here is a security change: review it, then update
// the golden file by hand (tests never write it).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type SeccompArch, renderKafelPolicy, resolveSeccompRules } from '../../../src/seccomp/index.js';
import { REPO_ROOT } from '../../helpers/paths.js';

const GOLDEN = join(REPO_ROOT, 'test', 'unit', 'seccomp', 'golden');
const defaults = resolveSeccompRules({ preset: 'default', add: [], remove: [], allowIoUring: false });

describe('renderKafelPolicy', () => {
  it.each(['x86_64', 'aarch64'] as const)('default set on %s matches the golden text', (arch: SeccompArch) => {
    expect(renderKafelPolicy(defaults, arch)).toBe(readFileSync(join(GOLDEN, `default.${arch}.kafel`), 'utf8'));
  });

  it('an empty rule list is an allow-all policy kafel accepts', () => {
    expect(renderKafelPolicy([], 'x86_64')).toBe(
      '// sbx seccomp rules for x86_64. Syscalls by number, names in comments.\nPOLICY sbx {\n}\nUSE sbx DEFAULT ALLOW\n',
    );
  });

  it('expresses argument conditions on the low 32 bits', () => {
    const text = renderKafelPolicy(defaults, 'x86_64');
    expect(text).toContain(
      'SYSCALL[16](a0, a1) { (a1 & 0xffffffff) == 0x5412 || (a1 & 0xffffffff) == 0x541c }, // ioctl',
    );
    expect(text).toContain('SYSCALL[56](a0) { (a0 & 0x7e020000) != 0 }, // clone');
  });

  it('lists x32 aliases on x86_64 only, with x32 renumbering', () => {
    const x86 = renderKafelPolicy(defaults, 'x86_64');
    expect(x86).toContain('SYSCALL[0x400000a5], // mount (x32)');
    expect(x86).toContain('SYSCALL[0x40000209], // ptrace (x32)'); // 521: ptrace's x32 number
    expect(x86).not.toContain('uselib (x32)'); // no x32 entry point
    expect(renderKafelPolicy(defaults, 'aarch64')).not.toContain('x32');
  });

  it('groups by errno and drops what allowIoUring allows', () => {
    const text = renderKafelPolicy(
      resolveSeccompRules({ preset: 'default', add: [], remove: [], allowIoUring: true }),
      'aarch64',
    );
    expect(text).toContain('  ERRNO(38) {\n    SYSCALL[435] // clone3\n  }');
    expect(text).not.toContain('io_uring');
  });
});
