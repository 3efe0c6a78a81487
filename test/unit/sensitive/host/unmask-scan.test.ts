// The scan on a real temp tree (outside git): key-named files whose content is only public material
// are shown and reported "by content"; private keys and unparseable ones stay masked; --unmask and
// sensitive.except let files in and the scan says whose exception it was.
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compileSensitiveRules } from '../../../../src/sensitive/sensitive-files.js';
import { scanSensitiveFiles } from '../../../../src/sensitive/host/sensitive-scan.js';
import { REPO_ROOT } from '../../../helpers/paths.js';
import { makeTempDir, writeTree } from '../../../helpers/tmp.js';

const CERT = readFileSync(join(REPO_ROOT, 'test/fixtures/keys/cert.pem'), 'utf8');
const PRIVATE = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;

function tree(): string {
  const root = makeTempDir('sbx-unmask-');
  writeTree(root, {
    'fixtures/https_cert.pem': CERT,
    'fixtures/https_key.pem': PRIVATE,
    'fixtures/both.pem': CERT + PRIVATE,
    'fixtures/big.crt': CERT.repeat(20),
    'fixtures/id_rsa': PRIVATE,
    'fixtures/notes.key': 'not a key\n',
    '.env': 'A=1\n',
    '.env.example': 'A=\n',
  });
  return root;
}

const rel = (root: string, paths: { path: string }[]) => paths.map((p) => p.path.slice(root.length + 1));

describe('scanSensitiveFiles: public keys and certificates, --unmask, sensitive.except', () => {
  it('shows a public certificate by its content; every private or unparseable key stays masked', () => {
    const root = tree();
    const scan = scanSensitiveFiles(root, compileSensitiveRules());
    expect(rel(root, scan.masks)).toEqual([
      '.env',
      'fixtures/both.pem',
      'fixtures/https_key.pem',
      'fixtures/id_rsa',
      'fixtures/notes.key',
    ]);
    expect(scan.unmasked).toEqual([
      { path: join(root, 'fixtures/https_cert.pem'), by: 'content', what: 'certificate' },
    ]);
  });

  it('a .crt is masked only when a rule names it; then a bundle over the read bound stays masked', () => {
    const root = tree();
    const scan = scanSensitiveFiles(root, compileSensitiveRules({ files: ['*.crt'] }));
    expect(rel(root, scan.masks)).toContain('fixtures/big.crt');
  });

  it('--unmask lets the private keys in too, and says it was the request; sensitive.except says the profile', () => {
    const root = tree();
    const scan = scanSensitiveFiles(root, compileSensitiveRules({ except: ['.env'], unmask: ['fixtures/**'] }));
    expect(rel(root, scan.masks)).toEqual([]);
    const by = Object.fromEntries(scan.unmasked.map((u) => [u.path.slice(root.length + 1), u.by]));
    expect(by).toEqual({
      '.env': 'profile',
      'fixtures/both.pem': 'request',
      'fixtures/https_cert.pem': 'request',
      'fixtures/https_key.pem': 'request',
      'fixtures/id_rsa': 'request',
      'fixtures/notes.key': 'request',
    });
  });

  it('a glob matching nothing unmasks nothing (control: the same tree, the same masks)', () => {
    const root = tree();
    const plain = scanSensitiveFiles(root, compileSensitiveRules());
    const other = scanSensitiveFiles(root, compileSensitiveRules({ unmask: ['elsewhere/**'] }));
    expect(other.masks).toEqual(plain.masks);
  });
});
