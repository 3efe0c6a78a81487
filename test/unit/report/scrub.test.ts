// Output scrubbing (report/scrub.ts): every rule redacts what it should and leaves its near misses; a
// realistic build log comes out byte for byte; the capture bound never splits a character, writes one
// marker line, and a secret straddling the cut leaves no head behind.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { scrubbedValues, scrubCapture, scrubText } from '../../../src/report/scrub.js';
import { SRC_DIR } from '../../helpers/paths.js';

// Token-shaped fixtures are assembled at run time so secret scanners do not flag this file.
const cat = (...parts: string[]) => parts.join('');
const ALNUM = 'aB3dE5fG7hJ9kL2mN4pQ6rS8tU0vW1xY';
const GH_CLASSIC = cat('gh', 'p_', ALNUM, 'Zz12');
const JWT = cat(
  'eyJ',
  'hbGciOiJIUzI1NiJ9',
  '.',
  'eyJ',
  'zdWIiOiIxMjM0NTY3ODkwIn0',
  '.',
  'dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U',
);
const RANDOM_40 = 'Zx9Qm2Lp7Rt4Vw8Ky3Nb6Hc1Jd5Fg0SaTe4Wq7P';

const scrub = (text: string, secrets: string[] = []) => scrubText(text, { secrets });
const redacted = (rule: string) => `[REDACTED:${rule}]`;

describe('scrubText rules', () => {
  // [rule, input, expected output]
  const positives: [string, string, string][] = [
    ['secret.value', 'token is hunter2-value!', `token is ${redacted('secret.value')}!`],
    [
      'pattern.private-key',
      cat('a\n-----BEGIN RSA PRIVATE', ' KEY-----\nMIIEow\nIBAAK\n-----END RSA PRIVATE', ' KEY-----\nb'),
      `a\n${redacted('pattern.private-key')}\nb`,
    ],
    [
      'pattern.private-key',
      cat('{"private_key": "-----BEGIN PRIVATE', ' KEY-----\\nMIIE\\n-----END PRIVATE', ' KEY-----\\n"}'),
      `{"private_key": "${redacted('pattern.private-key')}\\n"}`,
    ],
    [
      'pattern.private-key',
      cat('-----BEGIN OPENSSH PRIVATE', ' KEY-----\nb3BlbnNzaC1rZXk\n(output cut here'),
      redacted('pattern.private-key'),
    ],
    [
      'pattern.private-key',
      cat('-----BEGIN PGP PRIVATE', ' KEY BLOCK-----\nlQOYBF\n-----END PGP PRIVATE', ' KEY BLOCK-----'),
      redacted('pattern.private-key'),
    ],
    ['pattern.jwt', `Cookie: session=${JWT}; Path=/`, `Cookie: session=${redacted('pattern.jwt')}; Path=/`],
    [
      'pattern.jwt',
      cat('unsigned eyJ', 'hbGciOiJub25lIn0', '.', 'eyJ', 'zdWIiOiJ4In0', '. end'),
      `unsigned ${redacted('pattern.jwt')} end`,
    ],
    [
      'pattern.aws-access-key-id',
      cat('key AKIA', 'IOSFODNN7EXAMPLE used'),
      `key ${redacted('pattern.aws-access-key-id')} used`,
    ],
    ['pattern.aws-access-key-id', cat('ASIA', 'Y34FZKBOKMUTVV7A'), redacted('pattern.aws-access-key-id')],
    ['pattern.github-token', `remote: ${GH_CLASSIC}`, `remote: ${redacted('pattern.github-token')}`],
    ['pattern.github-token', cat('gh', 's_', ALNUM, 'Qq99'), redacted('pattern.github-token')],
    [
      'pattern.github-token',
      cat('github_', 'pat_11ABCDEFG0123456789abc_', ALNUM, ALNUM),
      redacted('pattern.github-token'),
    ],
    [
      'pattern.slack-token',
      cat('xox', 'b-123456789012-1234567890123-AbCdEfGhIjKlMnOp'),
      redacted('pattern.slack-token'),
    ],
    ['pattern.anthropic-key', cat('sk-', 'ant-api03-', ALNUM, '-', ALNUM), redacted('pattern.anthropic-key')],
    ['pattern.openai-key', cat('OPENAI says sk-', 'proj-', ALNUM), `OPENAI says ${redacted('pattern.openai-key')}`],
    [
      'pattern.google-api-key',
      cat('AIza', 'SyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY x'),
      `${redacted('pattern.google-api-key')} x`,
    ],
    [
      'pattern.url-credentials',
      'fetch https://x-access-token:abc123xyz@github.com/org/repo.git',
      `fetch https://x-access-token:${redacted('pattern.url-credentials')}@github.com/org/repo.git`,
    ],
    [
      'pattern.url-credentials',
      'DATABASE_URL=postgres://app:pa55word@db:5432/app',
      `DATABASE_URL=postgres://app:${redacted('pattern.url-credentials')}@db:5432/app`,
    ],
    [
      'pattern.authorization',
      '> Authorization: Bearer opaque.value-123',
      `> Authorization: Bearer ${redacted('pattern.authorization')}`,
    ],
    [
      'pattern.authorization',
      "curl -H 'authorization: Basic dXNlcjpwYXNz' x",
      `curl -H 'authorization: Basic ${redacted('pattern.authorization')}' x`,
    ],
    ['pattern.keyword', 'password=hunter2', `password=${redacted('pattern.keyword')}`],
    ['pattern.keyword', 'DB_PASSWORD: s3cr3t', `DB_PASSWORD: ${redacted('pattern.keyword')}`],
    [
      'pattern.keyword',
      '{"client_secret": "two words", "id": 1}',
      `{"client_secret": "${redacted('pattern.keyword')}", "id": 1}`,
    ],
    ['pattern.keyword', "SECRET_KEY='django-insecure'", `SECRET_KEY='${redacted('pattern.keyword')}'`],
    [
      'pattern.keyword',
      'export AWS_SECRET_ACCESS_KEY=abc/def+ghi',
      `export AWS_SECRET_ACCESS_KEY=${redacted('pattern.keyword')}`,
    ],
    ['pattern.keyword', 'X-Api-Key: k-12345', `X-Api-Key: ${redacted('pattern.keyword')}`],
    [
      'pattern.keyword',
      'npm publish --token=abc --tag next',
      `npm publish --token=${redacted('pattern.keyword')} --tag next`,
    ],
    ['pattern.keyword', 'passwd = "p w"', `passwd = "${redacted('pattern.keyword')}"`],
    ['pattern.high-entropy', `blob ${RANDOM_40} end`, `blob ${redacted('pattern.high-entropy')} end`],
    ['pattern.high-entropy', 'b64 dGhpcyBpcyBhIHNlY3JldCB0b2tlbiB2YWx1ZQ==', `b64 ${redacted('pattern.high-entropy')}`],
  ];

  it.each(positives)('%s redacts: %j', (rule, input, expected) => {
    const result = scrub(input, ['hunter2-value']);
    expect(result.text).toBe(expected);
    expect(result.hits).toEqual([{ rule, count: 1 }]);
  });

  // [rule, input left alone]
  const negatives: [string, string][] = [
    ['secret.value', 'values shorter than 6 characters are ignored: abc12'],
    [
      'pattern.private-key',
      cat(
        '-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----\n-----BEGIN PUBLIC',
        ' KEY-----\nMIIB\n-----END PUBLIC KEY-----',
      ),
    ],
    ['pattern.jwt', 'eyJhbGciOiJIUzI1NiJ9 alone is a header, not a token; eyJ.eyJ. neither'],
    [
      'pattern.aws-access-key-id',
      cat('AKIA', 'IOSFODNN7EXAMPL (15) akia', 'iosfodnn7example XAKIA', 'IOSFODNN7EXAMPLE'),
    ],
    ['pattern.github-token', cat('gh', 'p_short ghx_', 'abcdefghij'.repeat(4), ' github_pat_short')],
    ['pattern.slack-token', 'xoxz-123456789012-abcdef xoxb-short'],
    ['pattern.openai-key', 'pip install sk-learn-compatible-estimators; task-0123456789abcdefghijklmn'],
    ['pattern.google-api-key', cat('AIza', 'short AIza', 'x'.repeat(34))],
    [
      'pattern.url-credentials',
      'https://github.com/org/repo.git git@github.com:org/repo.git http://localhost:3000/path',
    ],
    ['pattern.authorization', 'Authorization failed for user alice; authorization: none'],
    [
      'pattern.keyword',
      [
        'max_tokens=100',
        'SyntaxError: Unexpected token } in JSON at position 5',
        'password:',
        '  nested: value',
        'secretlint: 0 problems',
        'at com.example.TokenService.refresh(TokenService.java:42)',
        'tests/test_password_reset.py::test_ok PASSED',
        'tokens: 5',
        'password=',
      ].join('\n'),
    ],
    [
      'pattern.high-entropy',
      'e83c5163316f89bfbde7d9ab23ca2e25604af290 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08',
    ],
    ['pattern.high-entropy', '550e8400-e29b-41d4-a716-446655440000 aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'],
    [
      'pattern.high-entropy',
      '/home/runner/work/my-project/my-project/node_modules/ MyVeryLongJavaClassNameForTesting123Factory',
    ],
    [
      'pattern.high-entropy',
      'src/main/java/com/example/service/impl/UserServiceImpl2Test /usr/lib/x86_64-linux-gnu/gcc/x86_64-linux-gnu/12/',
    ],
    [
      'pattern.high-entropy',
      `integrity sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XoXVMBp+rLfF98R6Ubg2xmvJGdg6zBmXGn6Hb2Q==`,
    ],
    ['pattern.high-entropy', 'golang.org/x/net v0.17.0 h1:pVaXccu2ozPjCXewfr1S2xPJaZ/sv8oq0Qm3WGfIDWQ='],
  ];

  it.each(negatives)('%s leaves alone: %j', (_rule, input) => {
    expect(scrub(input, ['abc12'])).toEqual({ text: input, hits: [] });
  });

  it('exact values go longest first, so a secret containing another is redacted whole', () => {
    const result = scrub('a=hunter2-value-longer b=hunter2-value', ['hunter2-value', 'hunter2-value-longer']);
    expect(result.text).toBe(`a=${redacted('secret.value')} b=${redacted('secret.value')}`);
    expect(result.hits).toEqual([{ rule: 'secret.value', count: 2 }]);
  });

  it('exact values are matched literally (regex syntax in a value is not syntax)', () => {
    expect(scrub('x a.b*c+d? y aXbbcd', ['a.b*c+d?']).text).toBe(`x ${redacted('secret.value')} y aXbbcd`);
  });

  it('a value is redacted once, by the first rule that sees it, and counted once', () => {
    const result = scrub(`GITHUB_TOKEN=${GH_CLASSIC}\n"password": "hunter2-value"\nAuthorization: Bearer ${JWT}`, [
      'hunter2-value',
    ]);
    expect(result.text).toBe(
      `GITHUB_TOKEN=${redacted('pattern.github-token')}\n"password": "${redacted('secret.value')}"\nAuthorization: Bearer ${redacted('pattern.jwt')}`,
    );
    expect(result.hits).toEqual([
      { rule: 'secret.value', count: 1 },
      { rule: 'pattern.jwt', count: 1 },
      { rule: 'pattern.github-token', count: 1 },
    ]);
  });

  it('hex is a digest even at exactly 4 bits/char (every digit equally often)', () => {
    const uniformHex = '0123456789abcdef'.repeat(4);
    expect(scrub(`sha256 ${uniformHex}`)).toEqual({ text: `sha256 ${uniformHex}`, hits: [] });
    // control: the same shape with one letter out of hex range is redacted.
    expect(scrub(`x ${uniformHex.replace('f', 'g')}`).hits).toEqual([{ rule: 'pattern.high-entropy', count: 1 }]);
  });

  it('counts every match of a rule', () => {
    expect(scrub('password=a\npassword=b\ntoken: c').hits).toEqual([{ rule: 'pattern.keyword', count: 3 }]);
  });

  it('a normal build log comes out unchanged', () => {
    const log = [
      '$ npm ci',
      'npm warn deprecated inflight@1.0.6: This module is not supported, and leaks memory.',
      'added 1287 packages, and audited 1288 packages in 14s',
      '$ tsc -p tsconfig.build.json',
      "src/auth/token.ts:12:5 - error TS2322: Type 'string' is not assignable to type 'number'.",
      '$ webpack --mode production',
      'asset main.e3b0c44298fc1c149afb.js 1.2 MiB [emitted] [immutable] [minimized] (name: main)',
      'webpack 5.91.0 compiled successfully in 8123 ms',
      '$ git log --oneline -2',
      'e83c5163316f89bfbde7d9ab23ca2e25604af290 Fix password reset redirect (#412)',
      '4b825dc642cb6eb9a060e54bf8d69288fbee4904 Rotate tokens on logout',
      'Step 3/9 : FROM node:20-alpine@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08',
      ' ---> Using cache',
      'request-id 550e8400-e29b-41d4-a716-446655440000 trace 4bf92f3577b34da6a3ce929d0e0e4736',
      'PASS src/components/Button/Button.test.tsx (5.012 s)',
      '  ✓ renders the secret-free placeholder (23 ms)',
      'Downloading https://registry.npmjs.org/@babel/core/-/core-7.24.0.tgz',
      'go: downloading golang.org/x/net v0.17.0',
      '/home/runner/work/my-project/my-project/node_modules/.bin/jest --ci --maxWorkers=2',
      'Listening on http://127.0.0.1:3000/ (pid 4242) at 2024-05-01T12:34:56.789Z',
      '--- PASS: TestPasswordHash (0.01s)',
      "KeyError: 'api_key'",
      'Done in 42.17s.',
    ].join('\n');
    expect(scrub(log, ['hunter2-value', 'not-in-the-log'])).toEqual({ text: log, hits: [] });
  });
});

describe('scrubCapture: a stream within the bound whole; a longer one as head, marker, tail', () => {
  const capture = (text: string, limit: number, total?: number, tail?: string) =>
    scrubCapture(
      Buffer.from(text),
      limit,
      { secrets: [] },
      total,
      tail === undefined ? {} : { tail: Buffer.from(tail) },
    );

  it('within the bound: the text, scrubbed, nothing dropped, no marker', () => {
    expect(capture('héllo\n', 100)).toEqual({ text: 'héllo\n', hits: [], droppedBytes: 0 });
    expect(capture('exact', 5)).toEqual({ text: 'exact', hits: [], droppedBytes: 0 });
    expect(capture('password=hunter2\n', 1000)).toEqual({
      text: `password=${redacted('pattern.keyword')}\n`,
      hits: [{ rule: 'pattern.keyword', count: 1 }],
      droppedBytes: 0,
    });
  });

  it('past the bound: half of it from the head, half from the end, one marker line between', () => {
    const lines = Array.from({ length: 1000 }, (_, i) => `line ${String(i).padStart(4, '0')}\n`).join('');
    const r = capture(lines, 100);
    expect(r.text).toBe(`${lines.slice(0, 50)}[sbx: ${lines.length - 100} bytes cut here]\n${lines.slice(-50)}`);
    expect(r.droppedBytes).toBe(lines.length - 100);
    // The test run's summary, at the very end, survives.
    expect(capture(`${'x'.repeat(100_000)}\nTests: 3 failed, 97 passed\n`, 200).text).toMatch(
      /Tests: 3 failed, 97 passed\n$/,
    );
  });

  it('the end comes from the tail the launcher kept when the head did not hold the stream', () => {
    // The head holds 10 bytes of a 1000-byte stream, the tail its last 20.
    const r = capture('HEAD-HEAD-', 16, 1000, 'middle....TAIL-TAIL\n');
    expect(r.text).toBe('HEAD-HEAD-'.slice(0, 8) + '\n[sbx: 984 bytes cut here]\n' + 'TAIL-TAIL\n'.slice(-8));
  });

  it('never splits a multi-byte character at either cut', () => {
    // a (1 byte) é (2) € (3) 𝄞 (4), twice: 20 bytes.
    const text = 'aé€𝄞aé€𝄞';
    for (let limit = 2; limit < 20; limit++) {
      const r = capture(text, limit);
      expect(r.text, `limit ${limit}`).not.toContain('\uFFFD');
      const [head, tail] = r.text.split(/\n?\[sbx: \d+ bytes cut here\]\n/);
      expect(text.startsWith(head!) && text.endsWith(tail!), `limit ${limit}`).toBe(true);
      expect(
        Buffer.byteLength(head!) <= Math.floor(limit / 2) && Buffer.byteLength(tail!) <= limit - Math.floor(limit / 2),
      ).toBe(true);
      expect(r.droppedBytes).toBe(20 - Buffer.byteLength(head!) - Buffer.byteLength(tail!));
    }
  });

  it('writes exactly one marker, however much is cut', () => {
    const { text } = capture('line\n'.repeat(100_000), 1000);
    expect(text.match(/\[sbx: \d+ bytes cut here\]/g)).toEqual(['[sbx: 499000 bytes cut here]']);
  });

  it('a secret straddling either cut leaves no part behind', () => {
    const secret = 'S3cr3t-Value-0123456789';
    const buf = Buffer.from(`${'a'.repeat(45)}${secret}${'b'.repeat(500)}${secret}${'c'.repeat(45)}`);
    const r = scrubCapture(buf, 100, { secrets: [secret] });
    expect(r.text.startsWith(`${'a'.repeat(45)}[REDA`)).toBe(true);
    expect(r.text.endsWith(`]${'c'.repeat(45)}`)).toBe(true);
    expect(r.text).not.toMatch(/S3c|6789/);
    expect(r.hits).toEqual([{ rule: 'secret.value', count: 2 }]);
  });

  it('control: cutting before scrubbing would have kept a part of that secret', () => {
    const secret = 'S3cr3t-Value-0123456789';
    const head = `${'a'.repeat(45)}${secret}`.slice(0, 50);
    expect(scrub(head, [secret]).text).toContain(secret.slice(0, 5));
  });

  it('a private key longer than the slack, cut before its END, is still redacted from BEGIN on', () => {
    const key = cat(
      '-----BEGIN PRIVATE',
      ' KEY-----\n',
      'MIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n'.repeat(200),
      '-----END PRIVATE',
      ' KEY-----\n',
    );
    const r = capture(`build ok\n${key}tail\n`, 4000);
    expect(r.text.startsWith(`build ok\n${redacted('pattern.private-key')}\n[sbx: `)).toBe(true);
    expect(r.text).not.toContain('MIIEvQ');
  });

  it('runaway output: only the bound and its slack are decoded; every byte not shown is counted', () => {
    const buf = Buffer.alloc(20 * 1024 * 1024, 'x');
    const r = scrubCapture(buf, 4096, { secrets: [] });
    expect(r.droppedBytes).toBe(buf.length - 4096);
    expect(r.text).toBe(`${'x'.repeat(2048)}\n[sbx: ${buf.length - 4096} bytes cut here]\n${'x'.repeat(2048)}`);
  });
});

describe('scrubbedValues: what of the invoking environment the output must not show', () => {
  it('configuration names are never scrubbed; short names, addresses, paths and numbers neither', () => {
    const env = {
      AWS_PROFILE: 'default',
      AWS_REGION: 'us-east-1',
      AWS_DEFAULT_REGION: 'eu-west-2',
      GOOGLE_CLOUD_PROJECT: 'my-project-123456',
      VAULT_ADDR: 'https://vault.internal:8200',
      AWS_CONFIG_FILE: '/home/u/.aws/config',
      AWS_MAX_ATTEMPTS: '3',
      GCP_ENV: 'prod',
      AWS_SDK_LOAD_CONFIG: 'true',
    };
    expect(scrubbedValues(env, [])).toEqual([]);
  });

  it('a value that could be a secret is; a URL gives its password only; injected secrets always', () => {
    const key = cat('wJalrXUtnFEMI/K7MDENG/', 'bPxRfiCYEXAMPLEKEY');
    const env = {
      AWS_SECRET_ACCESS_KEY: key,
      GITHUB_TOKEN: GH_CLASSIC,
      DATABASE_URL: 'postgres://app:pa55w0rd-x@db.internal/app',
      REDIS_URL: 'redis://cache:6379',
      VAULT_TOKEN: 'hvs.CAESIJq9',
    };
    expect(scrubbedValues(env, ['short1']).sort()).toEqual(
      ['short1', key, GH_CLASSIC, 'pa55w0rd-x', 'hvs.CAESIJq9'].sort(),
    );
  });

  it('real output with the common values comes out byte for byte; the secret does not', () => {
    const env = { AWS_PROFILE: 'default', AWS_REGION: 'us-east-1', AWS_SECRET_ACCESS_KEY: 'Zx9Qm2Lp7Rt4Vw8K' };
    const output = [
      'export default function handler() {}',
      'src/config/default.json',
      'Deploying stack to us-east-1 with profile default',
      'aws s3 ls --region us-east-1',
      'secret is Zx9Qm2Lp7Rt4Vw8K',
    ].join('\n');
    expect(scrub(output, scrubbedValues(env, [])).text).toBe(
      output.replace('Zx9Qm2Lp7Rt4Vw8K', redacted('secret.value')),
    );
  });
});

it('scrub.ts is pure: it imports nothing', () => {
  expect(readFileSync(join(SRC_DIR, 'report', 'scrub.ts'), 'utf8')).not.toMatch(/^\s*import\s/m);
});
