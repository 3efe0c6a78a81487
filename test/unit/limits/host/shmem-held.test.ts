// The pure readings under the watchdog's shared-memory count: mountinfo lines and device numbers.
import { describe, expect, it } from 'vitest';
import { deviceName, parseMountinfo } from '../../../../src/limits/host/shmem-held.js';

describe('parseMountinfo', () => {
  it('reads the device, the mount point (octal escapes decoded), the type after the optional fields, and rw', () => {
    const text = [
      '64 47 0:40 /newroot / ro,nosuid,nodev,relatime - tmpfs tmpfs rw',
      '78 64 0:44 / /tmp rw,nosuid,nodev,relatime shared:12 master:3 - tmpfs tmpfs rw,size=524288k',
      '79 64 0:45 / /home/a\\040b rw,relatime - tmpfs tmpfs rw',
      '80 64 253:1 /src /work rw,relatime - ext4 /dev/vda rw',
      '',
      'garbage',
    ].join('\n');
    expect(parseMountinfo(text)).toEqual([
      { id: 64, device: '0:40', mountPoint: '/', fstype: 'tmpfs', writable: false },
      { id: 78, device: '0:44', mountPoint: '/tmp', fstype: 'tmpfs', writable: true },
      { id: 79, device: '0:45', mountPoint: '/home/a b', fstype: 'tmpfs', writable: true },
      { id: 80, device: '253:1', mountPoint: '/work', fstype: 'ext4', writable: true },
    ]);
  });
});

describe('deviceName', () => {
  it("decodes the kernel's st_dev encoding as major:minor", () => {
    expect(deviceName(1)).toBe('0:1');
    expect(deviceName(0x2c)).toBe('0:44');
    expect(deviceName(0xfd01)).toBe('253:1');
    // A minor past 255 is split: its high bits sit above the major's.
    expect(deviceName(0x12300845)).toBe('8:74565');
  });
});
