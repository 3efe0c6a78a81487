// Where sbx's own files (profiles/, dist/) are: this file sits one level below the package root both as
// source (src/package-root.ts) and bundled (dist/*.js, whose chunks stay beside the entries).
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export function packageRoot(): string {
  return join(dirname(fileURLToPath(import.meta.url)), '..');
}
