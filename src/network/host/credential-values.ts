// A run's credential values, read from where the Policy says (credentials.NAME.from) before anything
// starts, and refused when a source yields nothing usable or when the value would be in the sandbox
// anyway. Values appear in no message, hint or cause raised here: only names, paths and argv[0].
import { spawn } from 'node:child_process';
import { closeSync, constants, fstatSync, openSync, readSync, realpathSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { SbxError } from '../../errors.js';
import { isWithin } from '../../path-within.js';
import type { Policy } from '../../policy/types.js';
import type { CredentialRule } from '../credentials.js';

/** What a value is read with: the invoking environment and directory, and the caller's uid (a file must be theirs). */
export interface ValueContext {
  env: Record<string, string | undefined>;
  cwd: string;
  uid: number;
  policy: Policy;
}

/** A token, a key or a password is a line: more than this is not one. */
const MAX_VALUE_BYTES = 64 * 1024;
/** How long `from.command` may take (a password manager may wait for its unlock prompt). */
const COMMAND_TIMEOUT_MS = 120_000;

function unavailable(name: string, why: string, hint: string): SbxError {
  return new SbxError('CREDENTIAL_UNAVAILABLE', `credentials.${name}: ${why}`, {
    hint,
    source: { key: `credentials.${name}.from` },
  });
}

/** The trees the sandbox sees from the host: a value there is readable inside, whatever the proxy does. */
function visibleTrees(policy: Policy): string[] {
  return policy.mounts.flatMap((m) => (m.kind === 'bind' ? [m.source] : []));
}

/** One trailing newline dropped (a file or a program's output ends a line); then it must be a header-safe line. */
function checkValue(name: string, raw: string, where: string): string {
  const value = raw.replace(/\r?\n$/, '');
  if (value.length === 0) throw unavailable(name, `${where} is empty`, 'put the value there, or fix the source');
  // It goes into HTTP header fields (RFC 9110 §5.5): visible ASCII, spaces and tabs; never a line break.
  if (!/^[\x20-\x7e\t]+$/.test(value))
    throw unavailable(
      name,
      `${where} holds characters an HTTP header cannot carry (a line break, a control character or non-ASCII)`,
      'the value must be one line of printable ASCII, as tokens and keys are',
    );
  return value;
}

function fromEnv(rule: CredentialRule, variable: string, ctx: ValueContext): string {
  const value = ctx.env[variable];
  if (value === undefined)
    throw unavailable(
      rule.name,
      `${variable} is not set in the environment sbx was started with`,
      `export ${variable} before running sbx`,
    );
  return checkValue(rule.name, value, `the variable ${variable}`);
}

/** A file of the caller's, not writable by others, outside every tree the sandbox sees; read from the checked descriptor. */
function fromFile(rule: CredentialRule, path: string, ctx: ValueContext): string {
  const name = rule.name;
  let real: string;
  try {
    real = realpathSync(path);
  } catch (e) {
    throw unavailable(name, `cannot read ${path} (${(e as NodeJS.ErrnoException).code ?? 'error'})`, 'check the path');
  }
  const tree = visibleTrees(ctx.policy).find((t) => isWithin(real, t));
  if (tree)
    throw unavailable(
      name,
      `${path} lies in ${tree}, which the sandbox sees: the command could read the value there`,
      "keep the file outside every tree the sandbox is shown (e.g. under ~/.config, which the sandbox's HOME does not show)",
    );
  let fd: number;
  try {
    fd = openSync(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    throw unavailable(
      name,
      `cannot open ${path} (${(e as NodeJS.ErrnoException).code ?? 'error'})`,
      'check the path and its permissions',
    );
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw unavailable(name, `${path} is not a regular file`, 'name a plain file holding the value');
    const owners = [ctx.uid, 0];
    const dir = statSync(dirname(real));
    // Whoever else can write the file, or swap it in its directory, chooses the value sent to the hosts.
    for (const [what, s] of [
      [real, st],
      [dirname(real), dir],
    ] as const) {
      if (!owners.includes(s.uid) || ((s.mode & 0o022) !== 0 && !(s.isDirectory() && (s.mode & 0o1000) !== 0)))
        throw unavailable(
          name,
          `${what} can be changed by another user`,
          `chown it to yourself and chmod go-w ${what}`,
        );
    }
    if (st.size > MAX_VALUE_BYTES)
      throw unavailable(name, `${path} is over ${MAX_VALUE_BYTES / 1024} KiB`, 'name the file holding the one value');
    const buf = Buffer.alloc(MAX_VALUE_BYTES + 1);
    let n = 0;
    for (let got = 1; got > 0 && n < buf.length; n += got) got = readSync(fd, buf, n, buf.length - n, null);
    if (n > MAX_VALUE_BYTES)
      throw unavailable(name, `${path} is over ${MAX_VALUE_BYTES / 1024} KiB`, 'name the file holding the one value');
    return checkValue(name, buf.toString('utf8', 0, n), path);
  } finally {
    closeSync(fd);
  }
}

/**
 * argv[0] as the caller's shell would find it, but never in a tree the sandbox can write: a program
 * planted there (node_modules/.bin/gh) would be handed the user's credentials by the next run.
 */
function locate(rule: CredentialRule, program: string, ctx: ValueContext): string {
  const writable = ctx.policy.mounts.flatMap((m) => (m.kind === 'bind' && m.access === 'rw' ? [m.source] : []));
  const inWritable = (p: string) => {
    let real = p;
    try {
      real = realpathSync(p);
    } catch {
      /* absent: judged by the path as written */
    }
    return writable.some((t) => isWithin(real, t));
  };
  const executable = (p: string) => {
    try {
      return statSync(p).isFile() && (statSync(p).mode & 0o111) !== 0;
    } catch {
      return false;
    }
  };
  if (program.includes('/')) {
    const path = resolve(ctx.cwd, program);
    if (inWritable(path))
      throw unavailable(
        rule.name,
        `${program} lies in a tree the sandbox can write`,
        'name a program outside the workspace and writable roots',
      );
    return path;
  }
  const entries = (ctx.env.PATH ?? '').split(':').filter((e) => isAbsolute(e));
  const found = entries.map((e) => join(e, program)).find((p) => executable(p) && !inWritable(p));
  if (!found)
    throw unavailable(
      rule.name,
      `${program} was not found on PATH (entries the sandbox can write are not searched)`,
      `install ${program}, or give its absolute path in from.command`,
    );
  return found;
}

function fromCommand(rule: CredentialRule, argv: readonly string[], ctx: ValueContext): Promise<string> {
  const [program, ...args] = argv as [string, ...string[]];
  const file = locate(rule, program, ctx);
  const env = Object.fromEntries(Object.entries(ctx.env).filter((e): e is [string, string] => e[1] !== undefined));
  return new Promise((done, fail) => {
    // stdin is never the caller's: under `sbx mcp` it is the protocol, and a prompt must not eat it.
    const child = spawn(file, args, { cwd: ctx.cwd, env, stdio: ['ignore', 'pipe', 'ignore'] });
    const chunks: Buffer[] = [];
    let size = 0;
    const timer = setTimeout(() => child.kill('SIGKILL'), COMMAND_TIMEOUT_MS);
    child.stdout.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_VALUE_BYTES) child.kill('SIGKILL');
      else chunks.push(c);
    });
    child.on('error', (e) => {
      clearTimeout(timer);
      fail(
        unavailable(
          rule.name,
          `cannot run ${program} (${(e as NodeJS.ErrnoException).code ?? 'error'})`,
          `run ${program} yourself to see why`,
        ),
      );
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const hint = `run ${argv.join(' ')} yourself to see why; sbx uses its output only when it exits 0`;
      if (size > MAX_VALUE_BYTES)
        return fail(unavailable(rule.name, `${program} printed over ${MAX_VALUE_BYTES / 1024} KiB`, hint));
      if (signal)
        return fail(
          unavailable(
            rule.name,
            `${program} was ended by ${signal}${signal === 'SIGKILL' ? ' (it ran over 120 s)' : ''}`,
            hint,
          ),
        );
      if (code !== 0) return fail(unavailable(rule.name, `${program} exited with status ${code}`, hint));
      try {
        done(checkValue(rule.name, Buffer.concat(chunks).toString('utf8'), `the output of ${program}`));
      } catch (e) {
        fail(e);
      }
    });
  });
}

/** Each rule's value, by variable name. Any failure refuses the run: a placeholder never goes unreplaced quietly. */
export async function readCredentialValues(
  rules: readonly CredentialRule[],
  ctx: ValueContext,
): Promise<Map<string, string>> {
  const values = new Map<string, string>();
  for (const rule of rules) {
    const from = rule.from;
    const value =
      'env' in from
        ? fromEnv(rule, from.env, ctx)
        : 'file' in from
          ? fromFile(rule, from.file, ctx)
          : await fromCommand(rule, from.command, ctx);
    values.set(rule.name, value);
  }
  return values;
}

/**
 * Refuses a run in which a credential's value would be in the sandbox anyway: in its environment (a
 * kept variable, a secret), on its command line (a host shell expanded `$GITHUB_TOKEN` before sbx
 * started) or in a file sbx generates for it. The placeholder would then guard nothing.
 */
export function refuseExposed(
  values: ReadonlyMap<string, string>,
  policy: Policy,
  secretEnv: Record<string, string>,
): void {
  const places: [string, string][] = [
    ...Object.entries(policy.env.vars).map(([k, v]): [string, string] => [`the variable ${k}`, v]),
    ...Object.entries(secretEnv).map(([k, v]): [string, string] => [`the secret ${k}`, v]),
    ...policy.command.map((arg, i): [string, string] => [`argument ${i} of the command`, arg]),
    ...(policy.shell !== undefined ? [['the shell string', policy.shell] as [string, string]] : []),
    ...policy.mounts.flatMap((m): [string, string][] =>
      m.kind === 'file' ? [[`the generated file ${m.target}`, m.content]] : [],
    ),
  ];
  for (const [name, value] of values) {
    // A short value inside a longer text is as likely chance as a leak: only an equal one counts then.
    const place = places.find(([, text]) => (value.length >= 8 ? text.includes(value) : text === value));
    if (!place) continue;
    throw new SbxError(
      'CREDENTIAL_EXPOSED',
      `credentials.${name}: its value is also in ${place[0]}, which the sandbox sees`,
      {
        hint: place[0].includes('command')
          ? `let the sandbox's shell expand the placeholder: sbx run --shell '... "$${name}" ...'`
          : `take it out of the sandbox's environment (env.keep, env.set, secrets): the command gets the placeholder in ${name}`,
        source: { key: `credentials.${name}` },
      },
    );
  }
}
