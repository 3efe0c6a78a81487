// The masked files named like keys or certificates (*.pem, *.crt, *.key, *.pub) whose first
// PUBLIC_CANDIDATE_MAX_BYTES are the whole file and hold only public material (sensitive/public-keys.ts)
// are shown instead. One bounded read per such candidate, never for any other entry: the scan runs on
// every launch (sensitive/host/sensitive-scan.ts). A file that cannot be read, is larger, or does not
// parse stays masked.
import { readRegularFile } from '../../git/host/git-index.js';
import { PUBLIC_CANDIDATE_MAX_BYTES, PUBLIC_CANDIDATE_NAME, publicKindOf } from '../public-keys.js';
import type { ScanReader, SensitiveMask, UnmaskedPath } from '../scan-result.js';

/** `masked` split into what stays masked and what is shown for its public content. */
export function showPublicKeys(
  masked: readonly SensitiveMask[],
  read: ScanReader,
): { masks: SensitiveMask[]; unmasked: UnmaskedPath[] } {
  const out: { masks: SensitiveMask[]; unmasked: UnmaskedPath[] } = { masks: [], unmasked: [] };
  for (const m of masked) {
    const name = m.path.slice(m.path.lastIndexOf('/') + 1);
    if (m.what !== 'file' || !PUBLIC_CANDIDATE_NAME.test(name)) {
      out.masks.push(m);
      continue;
    }
    read(m.path, 'file');
    const bytes = readRegularFile(m.path, PUBLIC_CANDIDATE_MAX_BYTES);
    const what = bytes && publicKindOf(bytes);
    if (what) out.unmasked.push({ path: m.path, by: 'content', what });
    else out.masks.push(m);
  }
  return out;
}
