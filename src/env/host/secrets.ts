// Resolves a profile's `secrets` to values: from the user's secret store or the invoking environment.
// Keys are injected, never stored in the workspace, never logged (docs/SECURITY.md). Values appear in no
// message, hint, detail or cause raised here; only names and paths do.
import { closeSync, constants, fstatSync, openSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { LineCounter, parseDocument } from 'yaml';
import { SbxError } from '../../errors.js';
import { isWithin } from '../../path-within.js';
import type { SecretEntry } from '../../profile/schema-secrets.js';

export interface SecretsContext {
  /** $XDG_CONFIG_HOME or ~/.config: the store is `${configHome}/sbx/secrets.yaml`. */
  configHome: string;
  /** The invoking environment, for `from: env`. */
  env: Record<string, string | undefined>;
  /** The invoking user: the store must be theirs alone. */
  uid: number;
  /** Host path of the workspace: the sandboxed command can read it, so the store must lie outside. */
  workspace: string;
}

export interface LoadedSecrets {
  /** Name inside the sandbox → value. */
  vars: Record<string, string>;
  /** The names set, in profile order: what reports and the ledger may show. */
  names: string[];
}

interface SecretRequest {
  name: string;
  from: 'store' | 'env';
  as: string;
  optional: boolean;
}

export function secretStorePath(configHome: string): string {
  return join(configHome, 'sbx', 'secrets.yaml');
}

function normalise(entry: SecretEntry): SecretRequest {
  return {
    name: entry.name,
    from: entry.from ?? 'store',
    as: entry.as ?? entry.name,
    optional: entry.optional ?? false,
  };
}

/** `extends` concatenates lists, so the same secret may arrive twice; two different sources for one variable is an error. */
function dedupe(requests: SecretRequest[]): SecretRequest[] {
  const byName = new Map<string, SecretRequest>();
  for (const r of requests) {
    const seen = byName.get(r.as);
    if (!seen) byName.set(r.as, r);
    else if (JSON.stringify(seen) !== JSON.stringify(r)) {
      throw new SbxError(
        'PROFILE_INVALID',
        `secrets: ${r.as} is set by two different entries (${seen.from}:${seen.name}, ${r.from}:${r.name})`,
        {
          hint: 'keep one entry per variable, or give one of them another `as:` name',
        },
      );
    }
  }
  return [...byName.values()];
}

function unsafe(message: string, hint: string): SbxError {
  return new SbxError('SECRET_STORE_UNSAFE', message, { hint });
}

function modeOf(st: { mode: number }): string {
  return (st.mode & 0o777).toString(8).padStart(4, '0');
}

/**
 * Open the store and read it, or undefined when there is none. The checks run on the open descriptor
 * (O_NOFOLLOW, fstat), so the file cannot be swapped between check and read.
 */
function readStore(path: string, ctx: SecretsContext): string | undefined {
  let fd: number;
  try {
    // O_NONBLOCK: a FIFO planted in place of the store must not hang the launch.
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'ELOOP')
      throw unsafe(
        `secret store ${path} is a symlink`,
        `replace it with the file itself (chmod 600), outside any workspace`,
      );
    throw new SbxError('SECRET_UNAVAILABLE', `cannot open the secret store ${path} (${code ?? 'error'})`, {
      hint: `check the owner and mode of ${path} (chmod 600)`,
    });
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile())
      throw unsafe(`secret store ${path} is not a regular file`, `replace it with a plain file (chmod 600)`);
    if (st.uid !== ctx.uid)
      throw unsafe(
        `secret store ${path} is owned by uid ${st.uid}, not ${ctx.uid}`,
        `chown ${ctx.uid} ${path}, or recreate it as yourself`,
      );
    if ((st.mode & 0o077) !== 0)
      throw unsafe(`secret store ${path} is accessible to group or others (mode ${modeOf(st)})`, `chmod 600 ${path}`);
    // A second name for the file could sit in the workspace, where the realpath check below cannot see it.
    if (st.nlink > 1)
      throw unsafe(
        `secret store ${path} has ${st.nlink} hard links`,
        `remove the other links, or copy it: cp ${path} ${path}.new && mv ${path}.new ${path}`,
      );
    const dir = realpathSync(dirname(path));
    const dirStat = statSync(dir);
    if (dirStat.uid !== ctx.uid)
      throw unsafe(
        `secret store directory ${dir} is owned by uid ${dirStat.uid}, not ${ctx.uid}`,
        `move the store to a directory of your own (XDG_CONFIG_HOME)`,
      );
    // Write access to the directory is enough to swap in another store. Reading it shows only that
    // secrets.yaml exists (the directory also holds profiles/, usually 0755).
    if ((dirStat.mode & 0o022) !== 0)
      throw unsafe(
        `secret store directory ${dir} is writable by group or others (mode ${modeOf(dirStat)})`,
        `chmod go-w ${dir}`,
      );
    const real = join(dir, 'secrets.yaml');
    if (isWithin(real, realWorkspace(ctx.workspace))) {
      throw unsafe(
        `secret store ${real} lies inside the workspace, where the sandboxed command can read it`,
        `move it out of the workspace (set XDG_CONFIG_HOME), or choose a narrower --workspace`,
      );
    }
    return readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
}

function realWorkspace(workspace: string): string {
  try {
    return realpathSync(workspace);
  } catch {
    // A workspace that does not resolve is refused later by policy; compare against its literal path meanwhile.
    return workspace;
  }
}

/** The store's top-level map. yaml's messages can quote the source around an error, which may be a value: report its code and position only. */
async function parseStore(text: string, path: string): Promise<Map<unknown, unknown>> {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, uniqueKeys: true, prettyErrors: false });
  const error = doc.errors[0];
  if (error) {
    const { line, col } = lineCounter.linePos(error.pos[0]);
    throw new SbxError(
      'SECRET_UNAVAILABLE',
      `secret store ${path} is not valid YAML (${error.code} at line ${line}, col ${col})`,
      {
        location: { file: path, line, col },
        hint: 'it must be a flat map of NAME: "value" lines, values quoted',
      },
    );
  }
  let value: unknown;
  try {
    value = doc.toJS({ mapAsMap: true });
  } catch {
    // Alias expansion past yaml's maxAliasCount (a "billion laughs" file) throws here.
    throw new SbxError('SECRET_UNAVAILABLE', `secret store ${path} cannot be read as plain data`, {
      hint: 'write one NAME: "value" line per secret, without anchors or aliases',
    });
  }
  if (value === null || value === undefined) return new Map();
  if (!(value instanceof Map))
    throw new SbxError('SECRET_UNAVAILABLE', `secret store ${path} is not a map of NAME: "value"`, {
      hint: 'write one NAME: "value" line per secret',
    });
  return value;
}

function checkValue(r: SecretRequest, value: unknown, where: string): string {
  if (typeof value !== 'string') {
    throw new SbxError('SECRET_UNAVAILABLE', `secret ${r.name} in ${where} is not a string`, {
      hint: `quote the value: ${r.name}: "…"`,
    });
  }
  // The value reaches bwrap through a NUL-separated --args descriptor: a NUL would end it and start an option.
  if (value.includes('\0'))
    throw new SbxError('SECRET_UNAVAILABLE', `secret ${r.name} in ${where} contains a NUL byte`, {
      hint: 'environment variables cannot hold NUL; encode the value (e.g. base64)',
    });
  return value;
}

function missing(requests: SecretRequest[], where: string, hint: string): SbxError {
  const names = requests.map((r) => r.name).join(', ');
  return new SbxError(
    'SECRET_UNAVAILABLE',
    `${requests.length > 1 ? 'secrets' : 'secret'} ${names} not found in ${where}`,
    { hint },
  );
}

/** Resolve every secret a profile names. The store is read only when some entry asks for it. */
export async function loadSecrets(specs: readonly SecretEntry[], ctx: SecretsContext): Promise<LoadedSecrets> {
  const requests = dedupe(specs.map(normalise));
  const values = new Map<string, string>();

  const fromEnv = requests.filter((r) => r.from === 'env');
  const unsetEnv = fromEnv.filter((r) => ctx.env[r.name] === undefined && !r.optional);
  if (unsetEnv.length > 0) {
    throw missing(
      unsetEnv,
      'the invoking environment',
      `export ${unsetEnv[0]!.name} before running sbx, or mark it optional: true`,
    );
  }
  for (const r of fromEnv) {
    const value = ctx.env[r.name];
    if (value !== undefined) values.set(r.as, checkValue(r, value, 'the invoking environment'));
  }

  const fromStore = requests.filter((r) => r.from === 'store');
  if (fromStore.length > 0) {
    const path = secretStorePath(ctx.configHome);
    const text = readStore(path, ctx);
    const store = text === undefined ? new Map<unknown, unknown>() : await parseStore(text, path);
    const absent = fromStore.filter((r) => !store.has(r.name) && !r.optional);
    if (absent.length > 0) {
      const hint = `add ${absent[0]!.name}: "…" to ${path}${text === undefined ? ' (chmod 600, directory chmod 700)' : ''}, or mark it optional: true`;
      throw missing(absent, text === undefined ? `${path} (no such file)` : path, hint);
    }
    for (const r of fromStore) {
      if (store.has(r.name)) values.set(r.as, checkValue(r, store.get(r.name), path));
    }
  }

  const names = requests.map((r) => r.as).filter((name) => values.has(name));
  return { vars: Object.fromEntries(names.map((name) => [name, values.get(name)!])), names };
}
