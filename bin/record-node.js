// Records the Node.js that runs this script (its real path) in <package root>/node-path, which the
// shell half of bin/sbx.js executes instead of looking `node` up on PATH (docs/SECURITY.md, "sbx's own launcher"). PATH may hold
// a directory a sandbox can write (an activated .venv/bin, node_modules/.bin, direnv's PATH_add, a CI
// GITHUB_PATH entry): a sandboxed command plants `node` there, and the next `sbx`, `sbx hook` call or
// Action step would run it with the user's full rights. Run by npm at install (the package's
// `install` script), by ./install.sh and by the Action; the Node.js they start is the one the user
// chose, before any sandbox ran. Self-contained: it runs before the build (npm ci in a checkout).
//
// Recorded only when no one but root and this user can replace it: the binary and every directory
// above it owned by root or this user and not writable by group or others, the rule sbx applies to
// its own state (docs/SECURITY.md, "sbx's own launcher"). Once recorded, every run refuses a
// writable bind that contains its directory (host-state/host-state.ts: "the Node.js that runs sbx").
// Otherwise nothing is recorded and the launcher keeps looking `node` up on PATH, as it says.
import { lstatSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const record = join(root, 'node-path');
const uid = process.getuid?.() ?? 0;

/** Why `path` could be replaced by someone other than root or this user, or undefined. */
function untrusted(path) {
  for (let p = path; ; p = dirname(p)) {
    const st = lstatSync(p);
    if (st.uid !== 0 && st.uid !== uid) return `${p} is owned by uid ${st.uid}, not by root or you (uid ${uid})`;
    if ((st.mode & 0o022) !== 0) return `${p} is writable by group or others (mode ${(st.mode & 0o7777).toString(8)})`;
    if (p === '/') return undefined;
  }
}

const node = realpathSync(process.execPath);
const why = untrusted(node);
if (why) {
  process.stderr.write(
    `sbx: Node.js ${node} not recorded for sbx's launcher: ${why}; bin/sbx.js will look \`node\` up on PATH\n`,
  );
} else if (/[\n\0]/.test(node)) {
  process.stderr.write(`sbx: Node.js path ${JSON.stringify(node)} not recorded: it holds a newline\n`);
} else {
  const tmp = `${record}.${process.pid}.tmp`;
  try {
    writeFileSync(tmp, `${node}\n`, { mode: 0o644 });
    renameSync(tmp, record);
  } catch (error) {
    rmSync(tmp, { force: true });
    // A read-only package directory (a global install owned by root, run by a user) keeps what it has.
    process.stderr.write(`sbx: could not record Node.js in ${record}: ${error.message}\n`);
  }
}
