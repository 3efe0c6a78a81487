// CLI flags → RunOptions (toRunOptions), the commander-free `sbx run` argv reader that feeds it, and
// `sbx mcp`'s (parseMcpArgv), which must read its flags as commander does from the same table.
import { describe, expect, it } from 'vitest';
import {
  addFlags,
  MCP_FLAGS,
  parseMcpArgv,
  parseRunArgv,
  toRunOptions,
  type RunFlags,
} from '../../../src/cli/run-flags.js';
import { ExitCode, SbxError } from '../../../src/errors.js';

const NO_FLAGS: RunFlags = { bind: [], roBind: [], env: [], keepEnv: [], allowDomain: [] };

function usageError(flags: Partial<RunFlags>): SbxError {
  try {
    toRunOptions({ ...NO_FLAGS, ...flags }, ['true']);
  } catch (error) {
    if (error instanceof SbxError) {
      expect(error.code).toBe('USAGE');
      expect(error.exitCode).toBe(ExitCode.USAGE);
      expect(error.hint).toEqual(expect.any(String));
      return error;
    }
    throw error;
  }
  throw new Error(`expected a USAGE error for ${JSON.stringify(flags)}`);
}

describe('toRunOptions', () => {
  it('maps empty flags to the defaults', () => {
    expect(toRunOptions(NO_FLAGS, ['make', 'test'])).toEqual({
      command: ['make', 'test'],
      binds: [],
      env: {},
      keepEnv: [],
      danger: false,
      limits: {},
    });
  });

  it('passes profile, workspace, network, danger and keep-env through', () => {
    const options = toRunOptions(
      {
        ...NO_FLAGS,
        profile: 'agent',
        workspace: '/w',
        network: 'host',
        danger: true,
        keepEnv: ['LC_*', 'NODE_OPTIONS'],
      },
      ['x'],
    );
    expect(options).toEqual({
      command: ['x'],
      profile: 'agent',
      workspace: '/w',
      network: 'host',
      danger: true,
      binds: [],
      env: {},
      keepEnv: ['LC_*', 'NODE_OPTIONS'],
      limits: {},
    });
  });

  it('--trust-profile: comma-separated chain hashes, from both readers', () => {
    const a = 'a'.repeat(64);
    const b = 'b'.repeat(64);
    expect(toRunOptions({ ...NO_FLAGS, trustProfile: `${a}, ${b}` }, ['x']).trustProfiles).toEqual([a, b]);
    expect(parseRunArgv(['--trust-profile', a, '--', 'true'])?.flags.trustProfile).toBe(a);
  });

  it('splits --bind / --ro-bind SRC[:DEST] at the first colon, rw binds first', () => {
    const options = toRunOptions({ ...NO_FLAGS, bind: ['/src', '/a:/b'], roBind: ['~/tools:/opt/tools', '/x:/y:z'] }, [
      'x',
    ]);
    expect(options.binds).toEqual([
      { source: '/src', access: 'rw' },
      { source: '/a', target: '/b', access: 'rw' },
      { source: '~/tools', target: '/opt/tools', access: 'ro' },
      { source: '/x', target: '/y:z', access: 'ro' },
    ]);
  });

  it('refuses an empty SRC or DEST', () => {
    for (const value of [':/dest', '/src:', ':', '']) {
      expect(usageError({ bind: [value] }).message, value).toBe(`--bind ${value}: expected SRC or SRC:DEST`);
      expect(usageError({ roBind: [value] }).message, value).toBe(`--ro-bind ${value}: expected SRC or SRC:DEST`);
    }
  });

  it('parses --env NAME=VALUE, the value kept verbatim (may hold = or be empty)', () => {
    const options = toRunOptions({ ...NO_FLAGS, env: ['A=1', 'B=', 'C=x=y', '_D= spaced ', 'A=2'] }, ['x']);
    expect(options.env).toEqual({ A: '2', B: '', C: 'x=y', _D: ' spaced ' });
  });

  it('refuses --env without NAME=', () => {
    for (const pair of ['NOEQUALS', '=value', ''])
      expect(usageError({ env: [pair] }).message, pair).toBe('--env: expected NAME=VALUE');
  });

  it('refuses --env names that are not variable names (could be read as bwrap options)', () => {
    for (const name of ['--chdir', '1ABC', 'A-B', 'A B', 'A.B', 'É']) {
      expect(usageError({ env: [`${name}=v`] }).message, name).toContain(`"${name}" is not a valid variable name`);
    }
  });

  it('never repeats an --env value in its error message', () => {
    const error = usageError({ env: ['GH-TOKEN=ghp_secretvalue123'] });
    expect(error.message).not.toContain('ghp_secretvalue123');
  });

  it('refuses --keep-env that is neither a name nor a * pattern', () => {
    for (const name of ['A-B', '--x', 'A=B', '', 'LC_?'])
      expect(usageError({ keepEnv: [name] }).message, name).toBe(`--keep-env ${name}: not a variable name or pattern`);
  });
});

describe('parseRunArgv', () => {
  it('reads flags until -- and keeps the command verbatim', () => {
    expect(
      parseRunArgv([
        '-p',
        'agent',
        '--bind',
        '/a:/b',
        '--ro-bind=/c',
        '-e',
        'A=1',
        '--keep-env',
        'LC_*',
        '--network',
        'host',
        '--danger',
        '--',
        'sh',
        '-c',
        '--x',
      ]),
    ).toEqual({
      flags: {
        profile: 'agent',
        bind: ['/a:/b'],
        roBind: ['/c'],
        env: ['A=1'],
        keepEnv: ['LC_*'],
        allowDomain: [],
        allowPrivate: [],
        unmask: [],
        network: 'host',
        danger: true,
      },
      command: ['sh', '-c', '--x'],
    });
  });

  it('stops at the first non-flag', () => {
    expect(parseRunArgv(['--verbose', 'make', '--jobs', '2'])).toEqual({
      flags: {
        bind: [],
        roBind: [],
        env: [],
        keepEnv: [],
        allowDomain: [],
        allowPrivate: [],
        unmask: [],
        verbose: true,
      },
      command: ['make', '--jobs', '2'],
    });
  });

  it('gives up (undefined, for commander to explain) on anything unusual', () => {
    for (const args of [
      [],
      ['--'],
      ['--nope', 'x'],
      ['--network', 'internet', 'x'],
      ['--danger=1', 'x'],
      ['--profile'],
      ['--help'],
    ]) {
      expect(parseRunArgv(args), JSON.stringify(args)).toBeUndefined();
    }
  });

  it('feeds toRunOptions', () => {
    const parsed = parseRunArgv(['--bind', '/a:/b', '-e', 'X=1', '--', 'true'])!;
    expect(toRunOptions(parsed.flags, parsed.command)).toMatchObject({
      command: ['true'],
      binds: [{ source: '/a', target: '/b', access: 'rw' }],
      env: { X: '1' },
    });
  });

  it('limit flags, `none` included, become limit overrides under their profile keys', () => {
    const args = [
      '--memory',
      'none',
      '--cpu-time',
      'none',
      '--address-space',
      '16GiB',
      '--nofile',
      '1024',
      '--',
      'true',
    ];
    const parsed = parseRunArgv(args)!;
    expect(toRunOptions(parsed.flags, parsed.command).limits).toEqual({
      memory: 'none',
      cpu_time: 'none',
      address_space: '16GiB',
      nofile: '1024',
    });
  });
});

describe('--unmask and --allow-private (issue 24)', () => {
  it('are repeatable and become the library options unmask and allowPrivate', () => {
    const parsed = parseRunArgv([
      '--unmask',
      'test/fixtures/**',
      '--unmask=*.pem',
      '--allow-private',
      '127.0.0.1:5432',
      '--',
      'npm',
      'test',
    ])!;
    expect(parsed.flags.unmask).toEqual(['test/fixtures/**', '*.pem']);
    expect(parsed.flags.allowPrivate).toEqual(['127.0.0.1:5432']);
    const options = toRunOptions(parsed.flags, parsed.command);
    expect(options.unmask).toEqual(['test/fixtures/**', '*.pem']);
    expect(options.allowPrivate).toEqual(['127.0.0.1:5432']);
  });

  it('absent, they set nothing (control)', () => {
    const options = toRunOptions(parseRunArgv(['--', 'true'])!.flags, ['true']);
    expect('unmask' in options || 'allowPrivate' in options).toBe(false);
  });
});

describe('parseMcpArgv', () => {
  /** What commander makes of the same argv with the same table (program.ts addMcpCommand), or undefined when it refuses. */
  async function commanderFlags(args: string[]): Promise<Record<string, unknown> | undefined> {
    const { Command } = await import('commander');
    const mcp = new Command('mcp').exitOverride().configureOutput({ writeErr: () => {}, writeOut: () => {} });
    await addFlags(mcp, MCP_FLAGS);
    mcp.action(() => {});
    try {
      await mcp.parseAsync(args, { from: 'user' });
    } catch {
      return undefined;
    }
    return mcp.opts();
  }

  it.each([
    [[]],
    [['-p', 'agent']],
    [['--profile=builtin:agent', '--workspace', '/w']],
    [['-p', 'agent', '-w', '.', '--no-audit', '--max-runs', '2']],
    [['--backend', 'nsjail', '--trust-profile', 'abc,def', '--audit-file', '/tmp/a.jsonl']],
    [['--max-runs=8', '-p', 'a', '-p', 'b']],
  ])('%j is read as commander reads it', async (args) => {
    const ours = parseMcpArgv(args);
    expect(ours).toBeDefined();
    // commander's --no-audit gives `audit: true` when absent; mcpCommand only asks whether it is false.
    expect({ audit: true, ...ours }).toEqual(await commanderFlags(args));
  });

  it.each([
    [['--help']],
    [['extra']],
    [['-p', 'agent', '--', 'x']],
    [['--backend', 'nope']],
    [['--shell', 'ls']],
    [['--bind', '/a']],
    [['-p']],
    [['--no-audit=yes']],
  ])('%j is left to commander', (args) => {
    expect(parseMcpArgv(args)).toBeUndefined();
  });
});
