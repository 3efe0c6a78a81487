import { describe, expect, it } from 'vitest';
import { MAX_HOSTS_FILE_BYTES, parseHostsFile } from '../../../src/network/hosts-file.js';

describe('parseHostsFile', () => {
  it('maps each canonical address to its names in normal form, each once, comments and junk skipped', () => {
    const text = [
      '# comment line',
      '127.0.0.1\tlocalhost   Allowed.Test.  # trailing comment',
      '127.0.0.1 allowed.test other.test',
      '::1 localhost ip6-localhost',
      '0:0:0:0:0:0:0:1 six.test',
      '10.0.0.01 leading-zero.test', // not a canonical literal: skipped, as getaddrinfo would
      '192.0.2.5', // an address without names
      '192.0.2.6 bad_name! 10.0.0.1 ok.test', // an invalid name and a literal among the names
      '',
    ].join('\n');
    expect([...parseHostsFile(text)]).toEqual([
      ['127.0.0.1', ['localhost', 'allowed.test', 'other.test']],
      ['::1', ['localhost', 'ip6-localhost', 'six.test']],
      ['192.0.2.6', ['ok.test']],
    ]);
  });

  it('reads no further than MAX_HOSTS_FILE_BYTES of a large blocking list', () => {
    const lines = Array.from({ length: 60_000 }, (_, i) => `0.0.0.0 ads${i}.test`);
    const parsed = parseHostsFile(lines.join('\n'));
    const names = parsed.get('0.0.0.0') as string[];
    expect(names.length).toBeLessThan(60_000);
    expect(names.join('\n').length).toBeLessThanOrEqual(MAX_HOSTS_FILE_BYTES);
  });
});
