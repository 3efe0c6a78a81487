// The `secrets` key and loadSecrets against real temp directories: a good store, every unsafe store
// refused by name (and its control: the same store made safe loads), missing and optional secrets,
// `from: env`, and no value ever in an error's message, hint, details or cause.
import { chmodSync, linkSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SbxError } from '../../../../src/errors.js';
import { SecretsSchema } from '../../../../src/profile/schema-secrets.js';
import { loadSecrets, secretStorePath, type SecretsContext } from '../../../../src/env/host/secrets.js';
import { makeTempDir } from '../../../helpers/tmp.js';

const UID = process.getuid!();
const VALUE = 'sk-ant-THE-VALUE-1234';
const OTHER = 'ghp_OTHER-VALUE-5678';
const STORE_TEXT = `ANTHROPIC_API_KEY: "${VALUE}"\nGITHUB_TOKEN: "${OTHER}"\n`;

/** A config home with a private store holding `text` (null: no store), and a separate workspace. */
function setup(text: string | null = STORE_TEXT): SecretsContext & { store: string; dir: string } {
  const configHome = makeTempDir('sbx-config-');
  const dir = join(configHome, 'sbx');
  mkdirSync(dir, { mode: 0o700 });
  const store = secretStorePath(configHome);
  if (text !== null) writeFileSync(store, text, { mode: 0o600 });
  return { configHome, dir, store, env: {}, uid: UID, workspace: makeTempDir('sbx-ws-') };
}

/** Through the schema, as a profile delivers them. */
const load = (input: unknown[], ctx: SecretsContext) => loadSecrets(SecretsSchema.parse(input), ctx);

async function failure(input: unknown[], ctx: SecretsContext): Promise<SbxError> {
  const error = await load(input, ctx).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(SbxError);
  const sbx = error as SbxError;
  // Everything a user, a report or SBX_DEBUG could print.
  const printable = [
    sbx.message,
    sbx.hint ?? '',
    ...sbx.details,
    String(sbx.cause ?? ''),
    JSON.stringify(sbx),
    sbx.stack ?? '',
  ].join('\n');
  for (const secret of [VALUE, OTHER]) expect(printable).not.toContain(secret);
  return sbx;
}

describe('SecretsSchema', () => {
  it('accepts names and maps; a bare name becomes { name }', () => {
    const parsed = SecretsSchema.parse([
      'ANTHROPIC_API_KEY',
      { name: 'GITHUB_TOKEN', from: 'env', as: 'GH_TOKEN', optional: true },
    ]);
    expect(parsed).toEqual([
      { name: 'ANTHROPIC_API_KEY' },
      { name: 'GITHUB_TOKEN', from: 'env', as: 'GH_TOKEN', optional: true },
    ]);
  });

  it.each([
    [['1BAD'], [0, 'name'], /valid environment variable name/],
    [['--setenv'], [0, 'name'], /valid environment variable name/],
    [['SBX_SESSION_ID'], [0, 'name'], /SBX_\* namespace is reserved/],
    [[{ name: 'A', as: 'SBX_PROFILE' }], [0, 'as'], /SBX_\* namespace is reserved/],
    [[{ name: 'A', from: 'file' }], [0, 'from'], /"store"\|"env"/],
    [[{ name: 'A', form: 'env' }], [0], /Unrecognized key: "form"/],
    [[42], [0], /must be a variable name .* or a map/],
  ])('refuses %j at its path', (input, path, message) => {
    const result = SecretsSchema.safeParse(input);
    expect(result.success).toBe(false);
    expect(result.error!.issues[0]!.path).toEqual(path);
    expect(result.error!.issues[0]!.message).toMatch(message);
  });
});

describe('loadSecrets: the store', () => {
  it('loads the named secrets, under their `as` names, from a private store outside the workspace', async () => {
    const ctx = setup();
    const loaded = await load(['ANTHROPIC_API_KEY', { name: 'GITHUB_TOKEN', as: 'GH_TOKEN' }], ctx);
    expect(loaded).toEqual({
      vars: { ANTHROPIC_API_KEY: VALUE, GH_TOKEN: OTHER },
      names: ['ANTHROPIC_API_KEY', 'GH_TOKEN'],
    });
  });

  it('does not read the store when no entry asks for it (an unsafe store is then irrelevant)', async () => {
    const ctx = setup();
    chmodSync(ctx.store, 0o644);
    const loaded = await load([{ name: 'HOME_TOKEN', from: 'env' }], { ...ctx, env: { HOME_TOKEN: 'x' } });
    expect(loaded.names).toEqual(['HOME_TOKEN']);
  });

  it.each([
    ['group-readable', 0o640, /accessible to group or others \(mode 0640\)/, /^chmod 600 /],
    ['world-readable', 0o604, /accessible to group or others \(mode 0604\)/, /^chmod 600 /],
    ['group-writable', 0o620, /accessible to group or others \(mode 0620\)/, /^chmod 600 /],
  ])('refuses a %s store file, and loads it once chmod 600', async (_what, mode, message, hint) => {
    const ctx = setup();
    chmodSync(ctx.store, mode);
    const error = await failure(['ANTHROPIC_API_KEY'], ctx);
    expect(error.code).toBe('SECRET_STORE_UNSAFE');
    expect(error.message).toMatch(message);
    expect(error.hint).toMatch(hint);
    chmodSync(ctx.store, 0o600);
    expect((await load(['ANTHROPIC_API_KEY'], ctx)).vars).toEqual({ ANTHROPIC_API_KEY: VALUE });
  });

  it('refuses a store in a directory others can write, accepts one they can only read', async () => {
    const ctx = setup();
    chmodSync(ctx.dir, 0o775);
    const error = await failure(['ANTHROPIC_API_KEY'], ctx);
    expect(error.code).toBe('SECRET_STORE_UNSAFE');
    expect(error.message).toMatch(/directory .* writable by group or others \(mode 0775\)/);
    expect(error.hint).toBe(`chmod go-w ${ctx.dir}`);
    chmodSync(ctx.dir, 0o755);
    expect((await load(['ANTHROPIC_API_KEY'], ctx)).vars).toEqual({ ANTHROPIC_API_KEY: VALUE });
  });

  it('refuses a store owned by another uid (file checked first)', async () => {
    const ctx = setup();
    const error = await failure(['ANTHROPIC_API_KEY'], { ...ctx, uid: UID + 1 });
    expect(error.code).toBe('SECRET_STORE_UNSAFE');
    expect(error.message).toBe(`secret store ${ctx.store} is owned by uid ${UID}, not ${UID + 1}`);
  });

  it('refuses a symlinked store, even to a private file', async () => {
    const ctx = setup(null);
    const elsewhere = join(makeTempDir('sbx-elsewhere-'), 'real.yaml');
    writeFileSync(elsewhere, STORE_TEXT, { mode: 0o600 });
    symlinkSync(elsewhere, ctx.store);
    const error = await failure(['ANTHROPIC_API_KEY'], ctx);
    expect(error.code).toBe('SECRET_STORE_UNSAFE');
    expect(error.message).toBe(`secret store ${ctx.store} is a symlink`);
  });

  it('refuses a store with a second hard link', async () => {
    const ctx = setup();
    linkSync(ctx.store, join(ctx.workspace, 'innocent.txt'));
    const error = await failure(['ANTHROPIC_API_KEY'], ctx);
    expect(error.code).toBe('SECRET_STORE_UNSAFE');
    expect(error.message).toMatch(/has 2 hard links/);
  });

  it('refuses a FIFO in place of the store without blocking', async () => {
    const ctx = setup(null);
    const { spawnSync } = await import('node:child_process');
    expect(spawnSync('mkfifo', ['-m', '600', ctx.store]).status).toBe(0);
    const error = await failure(['ANTHROPIC_API_KEY'], ctx);
    expect(error.code).toBe('SECRET_STORE_UNSAFE');
    expect(error.message).toMatch(/not a regular file/);
  });

  it('refuses a store inside the workspace (compared by realpath), and accepts the same store with another workspace', async () => {
    const ctx = setup();
    const viaLink = join(makeTempDir('sbx-link-'), 'ws');
    symlinkSync(ctx.configHome, viaLink);
    const error = await failure(['ANTHROPIC_API_KEY'], { ...ctx, workspace: viaLink });
    expect(error.code).toBe('SECRET_STORE_UNSAFE');
    expect(error.message).toMatch(/lies inside the workspace/);
    expect(error.hint).toMatch(/XDG_CONFIG_HOME|--workspace/);
    expect((await load(['ANTHROPIC_API_KEY'], ctx)).names).toEqual(['ANTHROPIC_API_KEY']);
  });

  it('refuses an unsafe store even when every secret is optional', async () => {
    const ctx = setup();
    chmodSync(ctx.store, 0o644);
    expect((await failure([{ name: 'ANTHROPIC_API_KEY', optional: true }], ctx)).code).toBe('SECRET_STORE_UNSAFE');
  });
});

describe('loadSecrets: missing and optional', () => {
  it('names every missing secret, never a value', async () => {
    const ctx = setup();
    const error = await failure(['ANTHROPIC_API_KEY', 'OPENAI_API_KEY', 'MISTRAL_API_KEY'], ctx);
    expect(error.code).toBe('SECRET_UNAVAILABLE');
    expect(error.message).toBe(`secrets OPENAI_API_KEY, MISTRAL_API_KEY not found in ${ctx.store}`);
    expect(error.hint).toMatch(/^add OPENAI_API_KEY: "…" to .*, or mark it optional: true$/);
  });

  it('reports a missing store as SECRET_UNAVAILABLE naming the secret', async () => {
    const ctx = setup(null);
    const error = await failure(['ANTHROPIC_API_KEY'], ctx);
    expect(error.code).toBe('SECRET_UNAVAILABLE');
    expect(error.message).toBe(`secret ANTHROPIC_API_KEY not found in ${ctx.store} (no such file)`);
  });

  it('skips optional secrets that are missing, from the store, a missing store, or the environment', async () => {
    const ctx = setup();
    const specs = [
      'ANTHROPIC_API_KEY',
      { name: 'OPENAI_API_KEY', optional: true },
      { name: 'CI_TOKEN', from: 'env', optional: true },
    ];
    expect(await load(specs, ctx)).toEqual({ vars: { ANTHROPIC_API_KEY: VALUE }, names: ['ANTHROPIC_API_KEY'] });
    const noStore = setup(null);
    expect(await load([{ name: 'OPENAI_API_KEY', optional: true }], noStore)).toEqual({ vars: {}, names: [] });
  });

  it('refuses a value that is not a string, naming the key only', async () => {
    const ctx = setup(`ANTHROPIC_API_KEY: 12345\n`);
    const error = await failure(['ANTHROPIC_API_KEY'], ctx);
    expect(error.code).toBe('SECRET_UNAVAILABLE');
    expect(error.message).toBe(`secret ANTHROPIC_API_KEY in ${ctx.store} is not a string`);
    expect(`${error.message}${error.hint}`).not.toContain('12345');
  });

  it('refuses a value with a NUL byte (it would end an --args entry)', async () => {
    const ctx = setup(`ANTHROPIC_API_KEY: "${VALUE}\\0--bind"\n`);
    const error = await failure(['ANTHROPIC_API_KEY'], ctx);
    expect(error.message).toMatch(/contains a NUL byte/);
  });

  it('reports a YAML error by position only: the line holds a value', async () => {
    const ctx = setup(`ANTHROPIC_API_KEY: "${VALUE}"\nGITHUB_TOKEN: "${OTHER}\n`);
    const error = await failure(['ANTHROPIC_API_KEY'], ctx);
    expect(error.code).toBe('SECRET_UNAVAILABLE');
    expect(error.message).toMatch(/is not valid YAML \([A-Z_]+ at line \d+, col \d+\)$/);
  });

  it('reports a duplicate key by position only', async () => {
    const ctx = setup(`ANTHROPIC_API_KEY: "${VALUE}"\nANTHROPIC_API_KEY: "${OTHER}"\n`);
    const error = await failure(['ANTHROPIC_API_KEY'], ctx);
    expect(error.message).toMatch(/DUPLICATE_KEY at line 2, col 1/);
  });

  it('dedupes the same entry arriving twice through extends, and refuses two sources for one variable', async () => {
    const ctx = setup();
    expect((await load(['ANTHROPIC_API_KEY', 'ANTHROPIC_API_KEY'], ctx)).names).toEqual(['ANTHROPIC_API_KEY']);
    const error = await failure(['GH_TOKEN', { name: 'GITHUB_TOKEN', as: 'GH_TOKEN' }], ctx);
    expect(error.code).toBe('PROFILE_INVALID');
    expect(error.message).toMatch(/GH_TOKEN is set by two different entries/);
  });
});

describe('loadSecrets: from env', () => {
  it('passes a credential-named variable on from the invoking environment, optionally renamed', async () => {
    const ctx = { ...setup(null), env: { GITHUB_TOKEN: OTHER, UNRELATED_TOKEN: 'nope' } };
    expect(await load([{ name: 'GITHUB_TOKEN', from: 'env', as: 'GH_TOKEN' }], ctx)).toEqual({
      vars: { GH_TOKEN: OTHER },
      names: ['GH_TOKEN'],
    });
  });

  it('passes an empty value on (set is set)', async () => {
    const ctx = { ...setup(null), env: { EMPTY_TOKEN: '' } };
    expect((await load([{ name: 'EMPTY_TOKEN', from: 'env' }], ctx)).vars).toEqual({ EMPTY_TOKEN: '' });
  });

  it('refuses an unset variable by name, and never opens the store for it', async () => {
    const ctx = setup();
    chmodSync(ctx.store, 0o666);
    const error = await failure([{ name: 'GITHUB_TOKEN', from: 'env' }], { ...ctx, env: { OTHER_VAR: VALUE } });
    expect(error.code).toBe('SECRET_UNAVAILABLE');
    expect(error.message).toBe('secret GITHUB_TOKEN not found in the invoking environment');
    expect(error.hint).toMatch(/^export GITHUB_TOKEN /);
  });
});
