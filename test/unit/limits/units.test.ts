// Human units: what each spelling means, what is refused and with which message.
import { describe, expect, it } from 'vitest';
import {
  formatCpus,
  formatDuration,
  formatSize,
  parseCount,
  parseCpus,
  parseDuration,
  parseSize,
} from '../../../src/limits/units.js';
import { sbxErrorOf } from '../../helpers/errors.js';

const MiB = 1024 ** 2;
const GiB = 1024 ** 3;
const SIZE = { min: MiB, max: 1024 ** 5, example: '512MiB or 2GiB' };
const DURATION = { min: 1, max: 24 * 86_400_000, example: '30s, 10m or 1h30m' };

describe('parseSize', () => {
  it.each([
    ['512MiB', 512 * MiB],
    ['2GiB', 2 * GiB],
    ['2 GiB', 2 * GiB],
    ['1.5GiB', 1.5 * GiB],
    ['1.5G', 1.5 * GiB],
    ['100M', 100 * MiB],
    ['100m', 100 * MiB],
    ['512mib', 512 * MiB],
    ['512Mi', 512 * MiB],
    ['100MB', 100_000_000],
    ['100mb', 100_000_000],
    ['2GB', 2_000_000_000],
    ['1048576', MiB],
    ['1048576B', MiB],
    [' 64MiB ', 64 * MiB],
    [1048576, MiB],
    ['1PiB', 1024 ** 5],
    ['1.1G', Math.floor(1.1 * GiB)],
  ])('%j → %d bytes', (text, bytes) => {
    expect(parseSize(text, 'limits.memory', SIZE)).toBe(bytes);
  });

  it.each([
    ['3 potatoes', 'limits.memory: "3 potatoes" is not a size; use e.g. 512MiB or 2GiB'],
    ['', 'limits.memory: "" is not a size; use e.g. 512MiB or 2GiB'],
    ['-1G', 'limits.memory: "-1G" is negative: a size must be positive; use e.g. 512MiB or 2GiB'],
    ['0', 'limits.memory: "0" is below the minimum of 1MiB; use e.g. 512MiB or 2GiB'],
    ['512KiB', 'limits.memory: "512KiB" is below the minimum of 1MiB; use e.g. 512MiB or 2GiB'],
    ['2PiB', 'limits.memory: "2PiB" is above the maximum of 1PiB; use e.g. 512MiB or 2GiB'],
    ['1.5', 'limits.memory: "1.5" is not a whole number of bytes; use e.g. 512MiB or 2GiB'],
    ['1e9', 'limits.memory: "1e9" is not a size; use e.g. 512MiB or 2GiB'],
    ['NaN', 'limits.memory: "NaN" is not a size; use e.g. 512MiB or 2GiB'],
    ['12 XB', 'limits.memory: "12 XB" is not a size; use e.g. 512MiB or 2GiB'],
    [Number.NaN, 'limits.memory: NaN is not a whole number of bytes; use e.g. 512MiB or 2GiB'],
    [1.5, 'limits.memory: 1.5 is not a whole number of bytes; use e.g. 512MiB or 2GiB'],
    [-5, 'limits.memory: -5 is below the minimum of 1MiB; use e.g. 512MiB or 2GiB'],
    ['1\u001b[2J', 'limits.memory: "1\\u001b[2J" is not a size; use e.g. 512MiB or 2GiB'],
  ])('%j is refused', (value, message) => {
    const e = sbxErrorOf(() => parseSize(value, 'limits.memory', SIZE));
    expect(e.code).toBe('LIMIT_INVALID');
    expect(e.message).toBe(message);
    expect(e.hint).toMatch(/KiB MiB GiB TiB \(×1024\), kB MB GB TB \(×1000\)/);
  });
});

describe('parseDuration', () => {
  it.each([
    ['10m', 600_000],
    ['30s', 30_000],
    ['1h30m', 5_400_000],
    ['1h30m15s', 5_415_000],
    ['500ms', 500],
    ['1s500ms', 1_500],
    ['2d', 172_800_000],
    ['1.5h', 5_400_000],
    ['90', 90_000],
    ['0.25', 250],
    [45, 45_000],
  ])('%j → %d ms', (text, ms) => {
    expect(parseDuration(text, 'limits.timeout', DURATION)).toBe(ms);
  });

  it.each([
    ['soon', '"soon" is not a duration'],
    ['10M', '"10M" is not a duration'],
    ['10min', '"10min" is not a duration'],
    ['30m1h', '"30m1h" has its units out of order (largest first, each once)'],
    ['1m1m', '"1m1m" has its units out of order (largest first, each once)'],
    ['-5s', '"-5s" is negative: a duration must be positive'],
    ['0s', '"0s" is below the minimum of 1ms'],
    ['0', '"0" is below the minimum of 1ms'],
    ['25d', '"25d" is above the maximum of 24d'],
    [-1, '-1 is not a duration'],
  ])('%j is refused', (value, what) => {
    const e = sbxErrorOf(() => parseDuration(value, 'limits.timeout', DURATION));
    expect(e.code).toBe('LIMIT_INVALID');
    expect(e.message).toBe(`limits.timeout: ${what}; use e.g. 30s, 10m or 1h30m`);
    expect(e.hint).toMatch(/units d h m s ms in lower case/);
  });
});

describe('parseCount and parseCpus', () => {
  const PIDS = { min: 4, max: 4_194_304, example: '256' };
  const CPUS = { min: 0.01, max: 1024, example: '2 or 0.5' };

  it('reads whole counts from strings and numbers', () => {
    expect(parseCount('256', 'limits.pids', PIDS)).toBe(256);
    expect(parseCount(64, 'limits.pids', PIDS)).toBe(64);
  });

  it.each([
    ['lots', 'limits.pids: "lots" is not a whole number; use e.g. 256'],
    ['1.5', 'limits.pids: "1.5" is not a whole number; use e.g. 256'],
    [2.5, 'limits.pids: 2.5 is not a whole number; use e.g. 256'],
    ['-3', 'limits.pids: "-3" is negative: a count must be positive; use e.g. 256'],
    ['0', 'limits.pids: "0" is below the minimum of 4; use e.g. 256'],
    [5_000_000, 'limits.pids: 5000000 is above the maximum of 4194304; use e.g. 256'],
  ])('count %j is refused', (value, message) => {
    expect(sbxErrorOf(() => parseCount(value, 'limits.pids', PIDS)).message).toBe(message);
  });

  it('reads CPUs as decimals', () => {
    expect(parseCpus('2', 'limits.cpus', CPUS)).toBe(2);
    expect(parseCpus('0.5', 'limits.cpus', CPUS)).toBe(0.5);
    expect(parseCpus(1.25, 'limits.cpus', CPUS)).toBe(1.25);
  });

  it.each([
    ['50%', 'limits.cpus: "50%" is not a number of CPUs; use e.g. 2 or 0.5'],
    ['-1', 'limits.cpus: "-1" is negative: CPUs must be positive; use e.g. 2 or 0.5'],
    ['0', 'limits.cpus: "0" is below the minimum of 0.01; use e.g. 2 or 0.5'],
    [Number.POSITIVE_INFINITY, 'limits.cpus: Infinity is not a number of CPUs; use e.g. 2 or 0.5'],
    ['4096', 'limits.cpus: "4096" is above the maximum of 1024; use e.g. 2 or 0.5'],
  ])('cpus %j is refused', (value, message) => {
    const e = sbxErrorOf(() => parseCpus(value, 'limits.cpus', CPUS));
    expect(e.code).toBe('LIMIT_INVALID');
    expect(e.message).toBe(message);
  });
});

describe('formatting', () => {
  it.each([
    [512 * MiB, '512MiB'],
    [2 * GiB, '2GiB'],
    [1.5 * GiB, '1.5GiB'],
    [100_000_000, '95.37MiB'],
    [1024, '1KiB'],
    [1000, '1000B'],
    [1024 ** 5, '1PiB'],
  ])('size %d → %s', (bytes, text) => {
    expect(formatSize(bytes)).toBe(text);
  });

  it.each([
    [5_400_000, '1h30m'],
    [500, '500ms'],
    [1_500, '1s500ms'],
    [30_000, '30s'],
    [0, '0s'],
    [172_800_000, '2d'],
  ])('duration %d ms → %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });

  it('formats CPUs without trailing zeros', () => {
    expect([2, 0.5, 1.25, 0.333333].map(formatCpus)).toEqual(['2', '0.5', '1.25', '0.33']);
  });

  it.each(['512MiB', '1.5GiB', '3GiB', '64KiB'])('size %s survives a round trip', (text) => {
    expect(formatSize(parseSize(text, 'k', { min: 1, max: 1024 ** 5 }))).toBe(text);
  });

  it.each(['1h30m', '45s', '500ms', '2d', '1m30s'])('duration %s survives a round trip', (text) => {
    expect(formatDuration(parseDuration(text, 'k', DURATION))).toBe(text);
  });
});
