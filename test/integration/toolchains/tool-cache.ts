// A GitHub runner's tool cache as setup-node and setup-python leave it (actions/toolkit's tool-cache:
// $RUNNER_TOOL_CACHE/TOOL/VERSION/ARCH, a `.complete` file beside ARCH), for the toolchain and Action
// tests: node is a real copy of this Node.js with npm beside it (bin/npm links into lib/), python
// links to the system's python3, as `python`, which the system itself lacks.
import { copyFileSync, cpSync, linkSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const NODE_VERSION = '20.99.0';
export const PYTHON_VERSION = '3.11.99';
const NPM_SOURCE = '/usr/lib/node_modules/npm';

export interface ToolCache {
  /** $RUNNER_TOOL_CACHE */
  root: string;
  node: string;
  python: string;
  /** The PATH entries setup-node and setup-python add, in the order they put them first. */
  path: string[];
}

/** A file of the host, hard-linked where the kernel allows it (same filesystem, owner), else copied. */
export function place(source: string, dest: string): void {
  try {
    linkSync(source, dest);
  } catch {
    copyFileSync(source, dest);
  }
}

export function buildToolCache(root: string): ToolCache {
  const node = join(root, 'node', NODE_VERSION, 'x64');
  mkdirSync(join(node, 'bin'), { recursive: true });
  place(process.execPath, join(node, 'bin', 'node'));
  cpSync(NPM_SOURCE, join(node, 'lib', 'node_modules', 'npm'), { recursive: true });
  symlinkSync('../lib/node_modules/npm/bin/npm-cli.js', join(node, 'bin', 'npm'));
  writeFileSync(`${node}.complete`, '');
  const python = join(root, 'Python', PYTHON_VERSION, 'x64');
  mkdirSync(join(python, 'bin'), { recursive: true });
  for (const name of ['python', 'python3']) symlinkSync('/usr/bin/python3', join(python, 'bin', name));
  writeFileSync(`${python}.complete`, '');
  // setup-python puts both ARCH/bin and ARCH on PATH (pip's scripts and python itself).
  return { root, node, python, path: [join(python, 'bin'), python, join(node, 'bin')] };
}
