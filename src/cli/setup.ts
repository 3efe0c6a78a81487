// `sbx setup`: the host changes that need root, printed before they are made. Today: Ubuntu 23.10+'s
// AppArmor restriction on unprivileged user namespaces, fixed by a profile for the bwrap sbx uses
// (doctor/apparmor-profile.ts). Idempotent: an identical profile is not rewritten, only reloaded.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { APPARMOR_PROFILE_FILE, apparmorProfile } from '../doctor/apparmor-profile.js';
import { SbxError } from '../errors.js';
import { probeBwrap } from '../host/host-probe.js';
import { probeHostFacts } from '../doctor/host/host-facts.js';

export interface SetupFlags {
  dryRun?: boolean;
  remove?: boolean;
  bwrap?: string;
}

const PARSERS = ['/usr/sbin/apparmor_parser', '/sbin/apparmor_parser'];

function parser(): string {
  const found = PARSERS.find((p) => existsSync(p));
  if (!found) {
    throw new SbxError('HOST_SETUP', 'apparmor_parser is not installed', { hint: 'apt-get install apparmor' });
  }
  return found;
}

/**
 * The profile lets whoever can replace the binary create user namespaces: only a binary that root alone
 * can change (itself and every directory above it) gets one.
 */
function checkRootOwned(real: string): void {
  for (let path = real; ; path = dirname(path)) {
    const st = statSync(path);
    if (st.uid !== 0 || (st.mode & 0o022) !== 0) {
      const message = `${path} can be changed by a user other than root: no AppArmor profile for ${real}`;
      throw new SbxError('HOST_SETUP', message, {
        hint: 'use a bwrap installed by the distribution (apt-get install bubblewrap) or pass --bwrap /usr/bin/bwrap',
      });
    }
    if (path === '/') return;
  }
}

/** Write `text` to `file` unless it already holds exactly that; 'unchanged' makes setup idempotent. */
export function writeProfile(file: string, text: string): 'written' | 'unchanged' {
  if (existsSync(file) && readFileSync(file, 'utf8') === text) return 'unchanged';
  const tmp = `${file}.sbx-${process.pid}`;
  writeFileSync(tmp, text, { mode: 0o644 });
  renameSync(tmp, file);
  return 'written';
}

function sudoCommand(flags: SetupFlags, bwrap: string): string {
  const sbx = process.argv[1] ?? 'sbx';
  return `sudo ${sbx} setup${flags.remove ? ' --remove' : ` --bwrap ${bwrap}`}`;
}

export async function setupCommand(flags: SetupFlags): Promise<void> {
  const out = (line: string): void => {
    process.stdout.write(`${line}\n`);
  };
  const uid = process.getuid?.() ?? 0;
  if (flags.remove) {
    if (uid !== 0) {
      throw new SbxError('HOST_SETUP', 'sbx setup --remove needs root', { hint: `run: ${sudoCommand(flags, '')}` });
    }
    if (!existsSync(APPARMOR_PROFILE_FILE)) return out(`nothing to remove: ${APPARMOR_PROFILE_FILE} does not exist`);
    execFileSync(parser(), ['-R', APPARMOR_PROFILE_FILE], { stdio: 'inherit', timeout: 60_000 });
    rmSync(APPARMOR_PROFILE_FILE);
    return out(`removed and unloaded ${APPARMOR_PROFILE_FILE}`);
  }
  const bwrap = realpathSync(flags.bwrap ?? probeBwrap(process.env, undefined).path);
  const text = apparmorProfile(bwrap);
  const facts = probeHostFacts({ uid, bwrap, env: process.env });
  const needed = facts.apparmorEnabled && facts.apparmorRestrictUserns === 1;
  const sysctl = 'kernel.apparmor_restrict_unprivileged_userns';
  out(
    needed
      ? `this host restricts unprivileged user namespaces (${sysctl}=1): ${bwrap} needs this profile`
      : `this host does not restrict user namespaces with AppArmor (${sysctl} is not 1): nothing is needed`,
  );
  out(`# ${APPARMOR_PROFILE_FILE}`);
  process.stdout.write(text);
  if (flags.dryRun) return out(`--dry-run: nothing written. To install it: ${sudoCommand(flags, bwrap)}`);
  if (uid !== 0) {
    const hint = `run: ${sudoCommand(flags, bwrap)}`;
    throw new SbxError('HOST_SETUP', 'sbx setup writes to /etc/apparmor.d and needs root', { hint });
  }
  if (!needed) return out('nothing written');
  checkRootOwned(bwrap);
  const state = writeProfile(APPARMOR_PROFILE_FILE, text);
  // -r replaces a loaded profile of the same name: running setup twice leaves one profile, loaded.
  execFileSync(parser(), ['-r', APPARMOR_PROFILE_FILE], { stdio: 'inherit', timeout: 60_000 });
  const done = state === 'written' ? 'wrote' : 'kept';
  out(`${done} and loaded ${APPARMOR_PROFILE_FILE}; check with: sbx doctor (as your user)`);
}
