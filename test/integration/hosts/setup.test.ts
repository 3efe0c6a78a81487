// `sbx setup`: the AppArmor profile it writes parses with the real apparmor_parser (without loading it),
// its dry run prints exactly the profile and the sudo command, and it refuses to change anything as a user.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { APPARMOR_PROFILE_FILE, apparmorProfile } from '../../../src/doctor/apparmor-profile.js';
import { writeProfile } from '../../../src/cli/setup.js';
import { probeHostFacts } from '../../../src/doctor/host/host-facts.js';
import { sbxErrorOf } from '../../helpers/errors.js';
import { IS_ROOT, SBX_BIN, requireIntegrationPrerequisites } from '../../helpers/sbx-cli.js';
import { makeTempDir } from '../../helpers/tmp.js';

const PARSER = '/usr/sbin/apparmor_parser';
const PROFILE = apparmorProfile('/usr/bin/bwrap');
// An optional host tool (Debian package `apparmor`, which .ci/run installs): without it only the parse is skipped.
const NO_PARSER = !existsSync(PARSER);
if (NO_PARSER)
  console.warn(`[sbx setup] SKIPPED: the apparmor_parser check, ${PARSER} is missing (apt-get install apparmor)`);

/** apparmor_parser's major version: `userns` and abi 4.0 need 4; Debian 12 ships 3.0. */
function parserMajor(): number {
  const r = spawnSync(PARSER, ['--version'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${PARSER} does not run: apt-get install apparmor`);
  return Number(/version (\d+)\./.exec(r.stdout)?.[1] ?? 0);
}

/** Parse only: -Q skips the kernel load, -K the cache; nothing changes on the host. */
function parse(text: string): { status: number | null; stderr: string } {
  const file = join(makeTempDir('sbx-apparmor-'), 'profile');
  writeFileSync(file, text);
  const r = spawnSync(PARSER, ['-Q', '-K', file], { encoding: 'utf8' });
  return { status: r.status, stderr: r.stderr.replace(/^Cache read\/write disabled.*\n/m, '') };
}

/** On a 3.x parser: the same profile with the two AppArmor 4 lines lowered, so the rest is still checked. */
function forParser(text: string, major: number): string {
  return major >= 4 ? text : text.replace('abi <abi/4.0>,', 'abi <abi/3.0>,').replace('  userns,\n', '');
}

describe('sbx setup', () => {
  beforeAll(() => {
    requireIntegrationPrerequisites();
  });

  it('the exact profile text', () => {
    expect(PROFILE).toBe(
      [
        '# Written by `sbx setup`: lets this bwrap create user namespaces under',
        '# kernel.apparmor_restrict_unprivileged_userns=1. Remove with: sudo sbx setup --remove',
        'abi <abi/4.0>,',
        'include <tunables/global>',
        '',
        'profile sbx-bwrap /usr/bin/bwrap flags=(unconfined) {',
        '  userns,',
        '',
        '  include if exists <local/sbx-bwrap>',
        '}',
        '',
      ].join('\n'),
    );
  });

  it.skipIf(NO_PARSER)(`apparmor_parser accepts the profile (the userns rule itself only with AppArmor 4)`, () => {
    const major = parserMajor();
    expect(parse(forParser(PROFILE, major))).toEqual({ status: 0, stderr: '' });
    // Control: the parser really checks what it is given.
    const broken = parse(forParser(PROFILE, major).replace(/\}\n$/, ''));
    expect(broken.status).toBe(1);
    expect(broken.stderr).toMatch(/syntax error/);
  });

  it('refuses a bwrap path that could widen the attachment or inject rules', () => {
    const crafted = ['/opt/my bwrap', '/usr/bin/bw*', '/x/{a,b}', '/x\n  capability,', 'bwrap', '/usr/../tmp/bwrap'];
    for (const path of crafted) {
      expect(sbxErrorOf(() => apparmorProfile(path)).code).toBe('HOST_SETUP');
    }
  });

  it('the profile it writes is the one the diagnosis finds for that bwrap', () => {
    const root = makeTempDir('sbx-hosts-fs-');
    mkdirSync(join(root, 'etc/apparmor.d'), { recursive: true });
    writeFileSync(join(root, APPARMOR_PROFILE_FILE), PROFILE);
    const facts = probeHostFacts({ uid: 1000, bwrap: '/usr/bin/bwrap', env: {}, root });
    expect(facts.apparmorProfiles).toEqual([APPARMOR_PROFILE_FILE]);
    expect(probeHostFacts({ uid: 1000, bwrap: '/opt/bin/bwrap', env: {}, root }).apparmorProfiles).toEqual([]);
  });

  it('writes once: a second run finds the same text and leaves the file alone', () => {
    const file = join(makeTempDir('sbx-apparmor-'), 'sbx-bwrap');
    expect(writeProfile(file, PROFILE)).toBe('written');
    expect(writeProfile(file, PROFILE)).toBe('unchanged');
    expect(readFileSync(file, 'utf8')).toBe(PROFILE);
  });

  it('--dry-run prints the profile and the sudo command, and writes nothing', () => {
    const installed = existsSync(APPARMOR_PROFILE_FILE);
    const argv = [SBX_BIN, 'setup', '--dry-run', '--bwrap', '/usr/bin/bwrap'];
    const r = spawnSync(process.execPath, argv, { encoding: 'utf8' });
    expect(r.status).toBe(0);
    const [first, ...rest] = r.stdout.split('\n');
    expect(first).toMatch(/^this host (does not restrict|restricts unprivileged) user namespaces/);
    expect(existsSync(APPARMOR_PROFILE_FILE)).toBe(installed);
    expect(rest.join('\n')).toBe(
      `# /etc/apparmor.d/sbx-bwrap\n${PROFILE}` +
        `--dry-run: nothing written. To install it: sudo ${SBX_BIN} setup --bwrap /usr/bin/bwrap\n`,
    );
  });

  it('as a user: refuses with the exact sudo command', () => {
    // As root, drop to nobody for this one run; as a user, run as is.
    const r = spawnSync(process.execPath, [SBX_BIN, 'setup', '--bwrap', '/usr/bin/bwrap'], {
      encoding: 'utf8',
      ...(IS_ROOT ? { uid: 65534, gid: 65534 } : {}),
    });
    expect(r.status).toBe(125);
    expect(r.stderr).toContain('sbx: error: sbx setup writes to /etc/apparmor.d and needs root\n');
    expect(r.stderr).toContain(`sbx: hint: run: sudo ${SBX_BIN} setup --bwrap /usr/bin/bwrap\n`);
  });
});
