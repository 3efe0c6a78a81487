// `sbx trust [NAME|PATH]`, `--list`, `--revoke`: pin the exact content of a project profile chain
// (like direnv's `allow`), so that a repository or a sandboxed command that writes `.sbx/` chooses
// nothing until the user has looked at it.
import { createHash } from 'node:crypto';
import { existsSync, realpathSync } from 'node:fs';
import { resolve } from 'node:path';
import { profileSearch } from '../api.js';
import { isSbxError, SbxError } from '../errors.js';
import { readGuarded } from '../host/guarded-read.js';
import {
  BUILTIN_PREFIX,
  isPathLike,
  loadProfile,
  locateProfile,
  PROFILE_MAX_BYTES,
  type ProfileSearch,
  type ResolvedProfile,
} from '../profile/host/load.js';
import { widenings } from '../profile/widen.js';
import { changedFiles, needsPin } from '../profile/host/trust.js';
import { readTrustStore, writeTrustStore, type TrustPin, type TrustStore } from '../profile/host/trust-store.js';
import { VERSION } from '../version.js';
import { lineDiff } from './line-diff.js';
import { printable } from './printable.js';

export interface TrustFlags {
  list?: boolean;
  revoke?: string;
  /** Show what would be trusted (content, or the diff against the pin) and pin nothing. */
  dryRun?: boolean;
  /** Pin without asking (needed without a terminal). */
  yes?: boolean;
}

/** Lines shown of a new file, or of a diff: enough to review a profile, bounded for a hostile one. */
const SHOWN_LINES = 400;

const uid = () => process.getuid?.() ?? 0;
/** Paths and profile text come from the repository: printed escaped. */
const out = (text: string) => process.stdout.write(printable(text) + '\n');

function showLines(lines: string[]): void {
  for (const line of lines.slice(0, SHOWN_LINES)) out(`    ${line}`);
  if (lines.length > SHOWN_LINES) out(`    ... ${lines.length - SHOWN_LINES} more lines`);
}

/** What each project file is now against the previous pin: its content when new, a diff when changed. */
function showChain(resolved: ResolvedProfile, previous: TrustPin | undefined): void {
  const changed = new Map((previous ? changedFiles(resolved.chain, previous) : []).map((c) => [c.file, c]));
  for (const link of resolved.chain) {
    const state =
      link.source === 'builtin'
        ? 'built-in'
        : !previous
          ? 'new'
          : changed.has(link.real)
            ? changed.get(link.real)!.before
              ? 'changed'
              : 'new'
            : 'unchanged';
    out(`  ${link.real}`);
    out(`    sha256 ${link.sha256}  (${link.source}, ${state})`);
    if (link.source === 'builtin' || state === 'unchanged') continue;
    const text = resolved.texts[link.real] ?? '';
    const before = previous?.files.find((f) => f.file === link.real)?.text;
    if (state === 'changed' && before !== undefined) {
      const diff = lineDiff(before, text);
      out(
        diff
          ? `    changes since trusted (-: trusted, +: now):`
          : `    ${before.split('\n').length} lines trusted, ${text.split('\n').length} now (too large to diff)`,
      );
      if (diff) showLines(diff);
    } else {
      out('    content:');
      showLines(text.replace(/\n$/, '').split('\n'));
    }
  }
}

function pinOf(resolved: ResolvedProfile): TrustPin {
  return {
    hash: resolved.hash,
    files: resolved.chain.map((l) => ({
      file: l.real,
      sha256: l.sha256,
      ...(l.source === 'builtin' ? {} : { text: resolved.texts[l.real] ?? '' }),
    })),
    trustedAt: new Date().toISOString(),
  };
}

/**
 * The built-in a project profile is measured against: the one it shadows, else the nearest built-in
 * it extends, else `default` (what a run without -p uses).
 */
function baseBuiltin(resolved: ResolvedProfile): string {
  if (resolved.shadows) return resolved.name;
  return resolved.chain.findLast((l) => l.source === 'builtin')?.name ?? 'default';
}

/** What the profile widens over its built-in, before the user is asked to pin it. */
async function showWidenings(resolved: ResolvedProfile, search: ProfileSearch): Promise<void> {
  const base = baseBuiltin(resolved);
  const builtin = await loadProfile(`${BUILTIN_PREFIX}${base}`, search, VERSION, { review: true });
  const lines = widenings(resolved.profile, builtin.profile);
  const how = resolved.shadows
    ? 'shadows'
    : resolved.chain.some((l) => l.source === 'builtin')
      ? 'extends'
      : 'compared with';
  if (lines.length === 0) {
    out(
      `sbx: compared with the built-in "${base}" it ${how === 'compared with' ? 'replaces as default' : how}, it widens nothing`,
    );
    return;
  }
  out(`sbx: WIDENS the built-in "${base}" (which it ${how === 'compared with' ? 'is compared with' : how}):`);
  for (const line of lines) out(`  - ${line}`);
}

async function trustProfile(name: string, storeFile: string, dryRun: boolean, yes: boolean): Promise<void> {
  const search = profileSearch(process.cwd(), process.env, process.getuid?.() ?? 0);
  const resolved = await loadProfile(name, search, VERSION, { review: true });
  const top = resolved.chain[resolved.chain.length - 1]!;
  // A file named by path may be pinned wherever it is: a run whose writable trees hold it needs the pin
  // (host-state/host-state.ts), even when it lies outside the trees the trust check knows of beforehand.
  if (!resolved.chain.some((l) => l.source === 'path' || needsPin(l))) {
    const why = resolved.trust.kind === 'builtin' ? 'it comes with sbx' : 'it is your own (sbx config directory)';
    out(`sbx: profile "${resolved.name}" (${resolved.location.source}: ${top.real}) needs no trust: ${why}`);
    out(
      'sbx: project profiles (.sbx/profiles from the working directory up) and files named by path are pinned, with what they extend',
    );
    return;
  }
  const store = readTrustStore(storeFile, uid());
  const previous = store.pins[top.real];
  if (previous?.hash === resolved.hash) {
    out(`sbx: profile "${resolved.name}" (${top.real}) is already trusted as it is (chain sha256 ${resolved.hash})`);
    return;
  }
  const verb = dryRun ? 'would trust' : 'trusting';
  const again = previous ? ' again (it changed since you trusted it)' : '';
  out(`sbx: ${verb} profile "${resolved.name}"${again}: every file of its chain, ancestors first:`);
  showChain(resolved, previous);
  await showWidenings(resolved, search);
  if (dryRun) {
    out(`sbx: nothing pinned (--dry-run); chain sha256 ${resolved.hash}`);
    return;
  }
  if (!yes) {
    const { confirmOnTerminal } = await import('./prompt.js');
    await confirmOnTerminal(
      `sbx: trust profile "${printable(resolved.name)}" as shown?`,
      `sbx trust ${printable(name)}`,
    );
  }
  writeTrustStore(storeFile, uid(), { ...store, pins: { ...store.pins, [top.real]: pinOf(resolved) } });
  out(`sbx: trusted: chain sha256 ${resolved.hash}`);
  out('sbx: runs use it until any of these files changes.');
  out(`sbx: in CI, trust it without a pin: --trust-profile ${resolved.hash}`);
}

/** The pin's key for a name or path given to --revoke. */
function pinKey(given: string, store: TrustStore): string {
  if (!isPathLike(given)) {
    const loc = locateProfile(given, profileSearch(process.cwd(), process.env, process.getuid?.() ?? 0));
    return realpathSync(loc.file);
  }
  const absolute = resolve(given);
  if (store.pins[absolute] || !existsSync(absolute)) return absolute;
  return realpathSync(absolute);
}

function revoke(given: string, storeFile: string): void {
  const store = readTrustStore(storeFile, uid());
  const key = pinKey(given, store);
  if (!store.pins[key])
    throw new SbxError('USAGE', `no trust pin for ${key}`, { hint: '`sbx trust --list` shows every pin' });
  const { [key]: _removed, ...rest } = store.pins;
  writeTrustStore(storeFile, uid(), { ...store, pins: rest });
  out(`sbx: no longer trusted: ${key}`);
}

/** Whether the pinned file is still what was trusted (its own hash; `sbx trust NAME` checks the whole chain). */
function pinState(file: string, pin: TrustPin): string {
  try {
    const { text } = readGuarded(file, { what: 'profile', maxBytes: PROFILE_MAX_BYTES, checkOwner: true, uid: uid() });
    const sha = pin.files.find((f) => f.file === file)?.sha256;
    return createHash('sha256').update(text).digest('hex') === sha ? 'unchanged' : 'CHANGED';
  } catch (error) {
    if (!isSbxError(error)) throw error;
    return error.code === 'PROFILE_NOT_FOUND' ? 'MISSING' : `UNREADABLE (${error.code})`;
  }
}

function list(storeFile: string): void {
  const pins = Object.entries(readTrustStore(storeFile, uid()).pins).sort(([a], [b]) => a.localeCompare(b));
  if (pins.length === 0) {
    out(`sbx: no project profile is trusted (store: ${storeFile})`);
    return;
  }
  for (const [file, pin] of pins)
    out(`${file}\n  chain sha256 ${pin.hash}  trusted ${pin.trustedAt}  file ${pinState(file, pin)}`);
}

export async function trustCommand(name: string | undefined, flags: TrustFlags): Promise<void> {
  const storeFile = profileSearch(process.cwd(), process.env, process.getuid?.() ?? 0).trust!.storeFile;
  if ((flags.list ? 1 : 0) + (flags.revoke !== undefined ? 1 : 0) + (name !== undefined ? 1 : 0) > 1) {
    throw new SbxError('USAGE', 'give one of NAME, --list or --revoke PATH', { hint: 'see `sbx trust --help`' });
  }
  if (flags.list) return list(storeFile);
  if (flags.revoke !== undefined) return revoke(flags.revoke, storeFile);
  await trustProfile(name ?? 'default', storeFile, flags.dryRun ?? false, flags.yes ?? false);
}
