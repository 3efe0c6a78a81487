// The resolver files a captured sandbox sees (src/network/resolver-files.ts).
import { describe, expect, it } from 'vitest';
import { hostsContent, resolvConfContent } from '../../../src/network/resolver-files.js';

describe('the resolver files', () => {
  it('resolv.conf names the pool resolver over TCP; hosts keeps loopback and the hostname only', () => {
    expect(resolvConfContent()).toMatch(/^# .*\nnameserver 198\.18\.0\.1\noptions use-vc\n$/);
    expect(hostsContent('box')).toBe('127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n127.0.1.1 box\n');
  });
});
