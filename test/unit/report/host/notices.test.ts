// A notice is said once per host: remembered under the host facts that decide it (boot id, cgroup
// layout, uid) and its text; another boot, layout or user, or an unreadable state file, says it again.
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { firstOnHost, type HostNoticeFacts, noticeKey } from '../../../../src/report/host/notices.js';
import { makeTempDir } from '../../../helpers/tmp.js';

const UID = process.getuid!();
const FACTS: HostNoticeFacts = { bootId: 'b1', uid: UID, cgroupLayout: 'cgroup /sys/fs/cgroup/memory' };
const NOTICE =
  'memory limit 2GiB and cpus limit 2 not enforced: cgroup v1 is not writable by uid 1001 (see sbx doctor)';

describe('firstOnHost', () => {
  it('says a notice once, then not again on the same host; another notice is said', () => {
    const stateDir = join(makeTempDir(), 'sbx');
    const ctx = { stateDir, uid: UID, facts: FACTS };
    expect(firstOnHost([NOTICE], ctx)).toEqual([NOTICE]);
    expect(firstOnHost([NOTICE], ctx)).toEqual([]);
    expect(firstOnHost([NOTICE, 'other'], ctx)).toEqual(['other']);
  });

  it('says it again after a reboot, a cgroup change or for another uid', () => {
    const stateDir = join(makeTempDir(), 'sbx');
    expect(firstOnHost([NOTICE], { stateDir, uid: UID, facts: FACTS })).toEqual([NOTICE]);
    for (const facts of [
      { ...FACTS, bootId: 'b2' },
      { ...FACTS, cgroupLayout: 'cgroup2 /sys/fs/cgroup' },
      { ...FACTS, uid: UID + 1 },
    ]) {
      expect(noticeKey(facts, NOTICE)).not.toBe(noticeKey(FACTS, NOTICE));
      expect(firstOnHost([NOTICE], { stateDir, uid: UID, facts })).toEqual([NOTICE]);
    }
  });

  it('a corrupt or foreign-writable state file remembers nothing (the notice is said), and is replaced privately', () => {
    const stateDir = makeTempDir();
    const file = join(stateDir, 'notices.json');
    writeFileSync(file, 'not json');
    expect(firstOnHost([NOTICE], { stateDir, uid: UID, facts: FACTS })).toEqual([NOTICE]);
    expect(JSON.parse(readFileSync(file, 'utf8')).seen).toHaveLength(1);
    chmodSync(file, 0o666);
    expect(firstOnHost([NOTICE], { stateDir, uid: UID, facts: FACTS })).toEqual([NOTICE]);
  });
});
