// HOME and XDG_* are validated before anything is read below them: a pseudo filesystem, a relative
// path or a `..` segment is ignored (XDG) or replaced by the passwd entry's home (HOME).
import { describe, expect, it } from 'vitest';
import { isUsableDir, resolveHome, resolveUserDirs, xdgDirs, xdgRuntimeDir } from '../../../src/policy/user-dirs.js';
import { sbxErrorOf } from '../../helpers/errors.js';

describe('isUsableDir', () => {
  it.each(['/home/u', '/', '/tmp/x', '/home/u/.local/state', '/devices', '/procfs'])('accepts %s', (p) =>
    expect(isUsableDir(p)).toBe(true),
  );
  it.each([
    undefined,
    '',
    'rel',
    './x',
    '/proc',
    '/proc/self',
    '/sys/fs',
    '/dev',
    '/dev/shm',
    '/home/../proc',
    '/a/./b',
    'a\0b',
  ])('refuses %j', (p) => expect(isUsableDir(p)).toBe(false));
});

describe('resolveHome', () => {
  const passwd = () => '/home/from-passwd';
  it('a valid HOME is used as it is', () => expect(resolveHome({ HOME: '/home/u' }, passwd)).toBe('/home/u'));
  it.each(['/proc', '/sys', '/dev/null', 'relative', '/x/../proc', ''])(
    'HOME=%j falls back to the passwd entry',
    (home) => {
      expect(resolveHome({ HOME: home }, passwd)).toBe('/home/from-passwd');
    },
  );
  it('no usable HOME and no usable passwd home: HOME_INVALID', () => {
    const error = sbxErrorOf(() => resolveHome({ HOME: '/proc' }, () => '/proc'));
    expect(error.code).toBe('HOME_INVALID');
    expect(error.message).toContain('HOME="/proc"');
    expect(sbxErrorOf(() => resolveHome({}, () => undefined)).code).toBe('HOME_INVALID');
  });
});

describe('xdgDirs', () => {
  it('valid values are used, invalid ones ignored as if unset (XDG base directory spec)', () => {
    expect(xdgDirs({ XDG_CONFIG_HOME: '/c', XDG_STATE_HOME: '/s', XDG_CACHE_HOME: '/k' }, '/h')).toEqual({
      configHome: '/c',
      stateHome: '/s',
      cacheHome: '/k',
    });
    expect(
      xdgDirs({ XDG_CONFIG_HOME: 'rel', XDG_STATE_HOME: '/proc/self/cwd', XDG_CACHE_HOME: '/a/../dev' }, '/h'),
    ).toEqual({
      configHome: '/h/.config',
      stateHome: '/h/.local/state',
      cacheHome: '/h/.cache',
    });
  });
  it('XDG_RUNTIME_DIR: only a usable one', () => {
    expect(xdgRuntimeDir({ XDG_RUNTIME_DIR: '/run/user/1' })).toBe('/run/user/1');
    expect(xdgRuntimeDir({ XDG_RUNTIME_DIR: '/proc/1' })).toBeUndefined();
    expect(xdgRuntimeDir({ XDG_RUNTIME_DIR: 'run' })).toBeUndefined();
  });
  it('resolveUserDirs: HOME=/proc puts nothing under /proc', () => {
    const dirs = resolveUserDirs({ HOME: '/proc' }, () => '/home/u');
    expect(Object.values(dirs).every((d) => d.startsWith('/home/u'))).toBe(true);
  });
});
