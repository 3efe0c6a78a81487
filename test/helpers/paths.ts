// Absolute locations the core tests share. Tests run from any cwd, so everything is anchored here.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const SRC_DIR = join(REPO_ROOT, 'src');
export const BUILTIN_PROFILES_DIR = join(REPO_ROOT, 'profiles');
export const GOLDEN_DIR = join(REPO_ROOT, 'test', 'golden');
export const FIXTURES_DIR = join(REPO_ROOT, 'test', 'fixtures');
