// `sbx profiles list|show`.
import { profileSearch } from '../api.js';
import { listProfiles, loadProfile } from '../profile/load.js';
import { VERSION } from '../version.js';
import { readFileSync } from 'node:fs';
// Static: a dynamic import('yaml') of the bundled CommonJS build yields no named exports.
import { stringify } from 'yaml';

function firstComment(file: string): string {
  try {
    const text = readFileSync(file, 'utf8');
    const description = /^description:\s*["']?(.*?)["']?\s*$/m.exec(text)?.[1];
    return description ?? '';
  } catch {
    return '';
  }
}

export function listCommand(flags: { json?: boolean }): void {
  const all = listProfiles(profileSearch(process.cwd(), process.env));
  if (flags.json) {
    process.stdout.write(JSON.stringify(all, null, 2) + '\n');
    return;
  }
  const width = Math.max(...all.map((p) => p.name.length), 4);
  for (const p of all) process.stdout.write(`${p.name.padEnd(width)}  ${p.source.padEnd(7)}  ${firstComment(p.file)}\n${' '.repeat(width + 11)}${p.file}\n`);
}

export async function showCommand(name: string, flags: { json?: boolean }): Promise<void> {
  const resolved = await loadProfile(name, profileSearch(process.cwd(), process.env), VERSION);
  if (flags.json) {
    process.stdout.write(JSON.stringify({ name: resolved.name, chain: resolved.chain, profile: resolved.profile, origins: resolved.origins }, null, 2) + '\n');
    return;
  }
  process.stdout.write(`# ${resolved.name}: merged from ${resolved.chain.map((c) => `${c.name} (${c.source}: ${c.file})`).join(' <- ')}\n`);
  process.stdout.write('# origin of each value:\n');
  for (const [path, from] of Object.entries(resolved.origins).sort()) process.stdout.write(`#   ${path.padEnd(20)} ${from.join(', ')}\n`);
  process.stdout.write(stringify(resolved.profile));
}
