// `sbx profiles list|show`: every visible profile with its source and trust state; one merged, for review.
import { profileSearch } from '../api.js';
import { isSbxError } from '../errors.js';
import { listProfiles, loadProfile, type ResolvedProfile } from '../profile/host/load.js';
import type { TrustState } from '../profile/host/trust.js';
import { VERSION } from '../version.js';
import { printable } from './printable.js';
// Static: a dynamic import('yaml') of the bundled CommonJS build yields no named exports.
import { stringify } from 'yaml';

function description(resolved: ResolvedProfile): string {
  const text = resolved.texts[resolved.chain[resolved.chain.length - 1]!.real] ?? '';
  return /^description:\s*["']?(.*?)["']?\s*$/m.exec(text)?.[1] ?? '';
}

/** One word for `list`: whether a run would use this profile, and why. */
function trustWord(trust: TrustState): string {
  switch (trust.kind) {
    case 'builtin':
      return 'builtin';
    case 'owner-checked':
      return 'ok';
    case 'trusted':
      return trust.by === 'pin' ? 'trusted' : 'trusted-by-hash';
    case 'untrusted':
      return trust.pin ? 'CHANGED' : 'UNTRUSTED';
  }
}

export async function listCommand(flags: { json?: boolean }): Promise<void> {
  const search = profileSearch(process.cwd(), process.env, process.getuid?.() ?? 0);
  const rows = await Promise.all(
    listProfiles(search).map(async (p) => {
      try {
        const resolved = await loadProfile(p.name, search, VERSION, { review: true });
        return {
          ...p,
          trust: trustWord(resolved.trust),
          hash: resolved.hash,
          description: description(resolved),
          ...(resolved.shadows ? { shadows: resolved.shadows } : {}),
        };
      } catch (error) {
        if (!isSbxError(error)) throw error;
        return { ...p, trust: error.code, description: error.message };
      }
    }),
  );
  if (flags.json) {
    process.stdout.write(JSON.stringify(rows, null, 2) + '\n');
    return;
  }
  const width = Math.max(...rows.map((p) => p.name.length), 4);
  const trustWidth = Math.max(...rows.map((p) => p.trust.length), 5);
  for (const p of rows) {
    const note = 'shadows' in p && p.shadows ? ' (shadows the built-in)' : '';
    const head = `${p.name.padEnd(width)}  ${p.source.padEnd(7)}  ${p.trust.padEnd(trustWidth)}  ${p.description}`;
    process.stdout.write(printable(`${head}\n${' '.repeat(width + 2)}${p.file}${note}`) + '\n');
  }
}

function describeTrust(resolved: ResolvedProfile): string {
  const ref = resolved.name;
  switch (resolved.trust.kind) {
    case 'builtin':
      return 'built-in (comes with sbx)';
    case 'owner-checked':
      return 'no pin needed (user or named file; owner and mode checks passed)';
    case 'trusted':
      return resolved.trust.by === 'pin'
        ? 'trusted (pinned with `sbx trust`)'
        : 'trusted for this invocation (--trust-profile / SBX_TRUST_PROFILE)';
    case 'untrusted':
      return `NOT TRUSTED${resolved.trust.pin ? ' (changed since trusted)' : ''}: runs refuse it until \`sbx trust ${ref}\``;
  }
}

export async function showCommand(name: string, flags: { json?: boolean }): Promise<void> {
  // Review mode: an untrusted project profile is shown (that is how it gets reviewed), never run.
  const resolved = await loadProfile(
    name,
    profileSearch(process.cwd(), process.env, process.getuid?.() ?? 0),
    VERSION,
    { review: true },
  );
  if (flags.json) {
    const { name: n, chain, profile, origins, hash, trust, shadows } = resolved;
    process.stdout.write(
      JSON.stringify(
        { name: n, chain, hash, trust: trustWord(trust), ...(shadows ? { shadows } : {}), profile, origins },
        null,
        2,
      ) + '\n',
    );
    return;
  }
  process.stdout.write(
    printable(
      `# ${resolved.name}: merged from ${resolved.chain.map((c) => `${c.name} (${c.source}: ${c.file})`).join(' <- ')}`,
    ) + '\n',
  );
  process.stdout.write(`# chain sha256: ${resolved.hash}\n# trust: ${describeTrust(resolved)}\n`);
  if (resolved.shadows) process.stdout.write(printable(`# shadows the built-in ${resolved.shadows}`) + '\n');
  process.stdout.write('# origin of each value:\n');
  for (const [path, from] of Object.entries(resolved.origins).sort())
    process.stdout.write(`#   ${path.padEnd(20)} ${from.join(', ')}\n`);
  process.stdout.write(stringify(resolved.profile));
}
