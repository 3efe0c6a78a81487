// What each parent of the current directory holds, for workspace/project-root.ts: its device, and
// whether a `.git` is there (with its owner and its directory's). lstat only: a `.git` symlink is
// not followed (its owner is the link's), and nothing is read.
import { lstatSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { chooseProjectRoot, type ParentFact, type ProjectRoot, projectRootCandidates } from '../project-root.js';

export function detectProjectRoot(cwd: string, home: string, uid: number): ProjectRoot | undefined {
  const facts: ParentFact[] = [];
  for (const dir of projectRootCandidates(cwd, home)) {
    let dev: number;
    let dirUid: number;
    try {
      const st = statSync(dir);
      dev = st.dev;
      dirUid = st.uid;
    } catch {
      break;
    }
    let git: ParentFact['git'];
    try {
      const st = lstatSync(join(dir, '.git'));
      git = { uid: st.uid, dirUid };
    } catch {
      git = undefined;
    }
    facts.push({ dir, dev, ...(git ? { git } : {}) });
    // The nearest `.git` decides: nothing above it is looked at.
    if (git) break;
  }
  return chooseProjectRoot(cwd, uid, facts);
}
