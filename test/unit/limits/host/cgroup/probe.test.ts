// probeCgroupFacts against fake cgroupfs trees: v2 vs v1 vs none, the session parent, delegation,
// which controllers a session cgroup would get, systemd-run.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { probeCgroupFacts } from '../../../../../src/limits/host/cgroup/probe.js';
import { makeTempDir, writeTree } from '../../../../helpers/tmp.js';
import {
  delegateToAnyone,
  fakeCgroupfs,
  stubBin,
  V1_CPU,
  V1_MEMORY,
  V1_PIDS,
  V2_USER_PARENT,
} from '../../../../helpers/fake-cgroupfs.js';

const OWN_UID = process.getuid!();
const STRANGER = 4242;
const SCOPE = '/user.slice/user-1000.slice/user@1000.service/app.slice/app-org.gnome.Terminal.slice/vte-spawn-1.scope';

describe('cgroup v2', () => {
  it('a user in a delegated subtree with a user manager: writable beside its scope, cpu enableable, systemd-run usable', () => {
    const root = fakeCgroupfs('v2-user');
    delegateToAnyone(join(root, V2_USER_PARENT));
    const bin = stubBin({ 'systemd-run': '#!/bin/sh\nexit 0\n' });
    expect(probeCgroupFacts({ root, uid: 1000, env: { PATH: `/nonexistent:${bin}` } })).toEqual({
      uid: 1000,
      cgroup: {
        kind: 'v2',
        mount: join(root, 'sys/fs/cgroup'),
        ownPath: SCOPE,
        writable: true,
        controllers: ['memory', 'pids', 'cpu'],
      },
      systemdRun: true,
    });
  });

  it('the same tree for a uid it is not delegated to: not writable, only what is already enabled', () => {
    const root = fakeCgroupfs('v2-user');
    const facts = probeCgroupFacts({ root, uid: STRANGER, env: { PATH: '' } });
    expect(facts.cgroup).toEqual({
      kind: 'v2',
      mount: join(root, 'sys/fs/cgroup'),
      ownPath: SCOPE,
      writable: false,
      controllers: ['memory', 'pids'],
    });
    expect(facts.systemdRun).toBe(false);
  });

  it('a parent holding processes cannot enable more controllers (no internal processes)', () => {
    const root = fakeCgroupfs('v2-user');
    delegateToAnyone(join(root, V2_USER_PARENT));
    writeFileSync(join(root, V2_USER_PARENT, 'cgroup.procs'), '777\n');
    expect(probeCgroupFacts({ root, uid: 1000, env: {} }).cgroup).toMatchObject({
      writable: true,
      controllers: ['memory', 'pids'],
    });
  });

  it('systemd-run needs a manager socket too: XDG_RUNTIME_DIR without bus or systemd/private is not enough', () => {
    const root = fakeCgroupfs('v2-user');
    const bin = stubBin({ 'systemd-run': '#!/bin/sh\n' });
    const runtimeDir = makeTempDir();
    expect(probeCgroupFacts({ root, uid: 1000, env: { PATH: bin, XDG_RUNTIME_DIR: runtimeDir } }).systemdRun).toBe(
      false,
    );
    writeTree(runtimeDir, { 'systemd/private': '' });
    expect(probeCgroupFacts({ root, uid: 1000, env: { PATH: bin, XDG_RUNTIME_DIR: runtimeDir } }).systemdRun).toBe(
      true,
    );
  });

  it('at the root of the hierarchy (root in a VM): the session goes below the root, which may enable anything', () => {
    const root = fakeCgroupfs('v2-user');
    const procCgroup = join(makeTempDir(), 'cgroup');
    writeFileSync(procCgroup, '0::/\n');
    const facts = probeCgroupFacts({ root, procSelfCgroup: procCgroup, uid: OWN_UID, env: {} });
    expect(facts.cgroup).toEqual({
      kind: 'v2',
      mount: join(root, 'sys/fs/cgroup'),
      ownPath: '/',
      writable: true,
      controllers: ['cpuset', 'cpu', 'io', 'memory', 'pids', 'hugetlb', 'rdma', 'misc'],
    });
  });

  it('a mount of a subtree (mountinfo root field) is resolved relative to that subtree', () => {
    const root = makeTempDir();
    writeTree(root, {
      'proc/self/mountinfo': '40 30 0:40 /lxc/c1 /sys/fs/cgroup rw,relatime - cgroup2 cgroup2 rw\n',
      'proc/self/cgroup': '0::/lxc/c1/payload/init\n',
      'sys/fs/cgroup/cgroup.controllers': 'memory pids\n',
      'sys/fs/cgroup/payload/cgroup.procs': '',
      'sys/fs/cgroup/payload/cgroup.subtree_control': 'memory\n',
      'sys/fs/cgroup/payload/cgroup.events': 'populated 1\n',
    });
    expect(probeCgroupFacts({ root, uid: STRANGER, env: {} }).cgroup).toEqual({
      kind: 'v2',
      mount: join(root, 'sys/fs/cgroup'),
      ownPath: '/payload/init',
      writable: false,
      controllers: ['memory'],
    });
  });

  it('a process outside the mounted subtree cannot use it', () => {
    const root = makeTempDir();
    writeTree(root, {
      'proc/self/mountinfo': '40 30 0:40 /lxc/c1 /sys/fs/cgroup rw,relatime - cgroup2 cgroup2 rw\n',
      'proc/self/cgroup': '0::/user.slice\n',
      'sys/fs/cgroup/cgroup.controllers': 'memory pids\n',
      'sys/fs/cgroup/cgroup.procs': '',
    });
    expect(probeCgroupFacts({ root, uid: OWN_UID, env: {} }).cgroup).toMatchObject({
      kind: 'v2',
      ownPath: '/',
      writable: false,
    });
  });
});

describe('cgroup v1', () => {
  it('the hybrid layout: v1 controllers (cpu,cpuacct co-mounted) win over an empty cgroup2 hierarchy', () => {
    const root = fakeCgroupfs('v1-root');
    expect(probeCgroupFacts({ root, uid: OWN_UID, env: {} })).toEqual({
      uid: OWN_UID,
      cgroup: {
        kind: 'v1',
        controllers: { memory: join(root, V1_MEMORY), pids: join(root, V1_PIDS), cpu: join(root, V1_CPU) },
        writable: true,
      },
      systemdRun: false,
    });
  });

  it('not writable for another uid', () => {
    const root = fakeCgroupfs('v1-root');
    expect(probeCgroupFacts({ root, uid: STRANGER, env: {} }).cgroup).toMatchObject({ kind: 'v1', writable: false });
  });

  it('a read-only cgroup mount is not writable, even for us', () => {
    const root = fakeCgroupfs('v1-root');
    const mountinfo = join(root, 'proc/self/mountinfo');
    writeFileSync(
      mountinfo,
      readFileSync(mountinfo, 'utf8').replace('/sys/fs/cgroup/memory rw,', '/sys/fs/cgroup/memory ro,'),
    );
    expect(probeCgroupFacts({ root, uid: OWN_UID, env: {} }).cgroup).toMatchObject({ kind: 'v1', writable: false });
  });

  it('control: once the unified hierarchy has controllers, v2 is chosen', () => {
    const root = fakeCgroupfs('v1-root');
    writeFileSync(join(root, 'sys/fs/cgroup/unified/cgroup.controllers'), 'memory pids\n');
    expect(probeCgroupFacts({ root, uid: OWN_UID, env: {} }).cgroup.kind).toBe('v2');
  });

  it('a controller that is not mounted is null', () => {
    const root = makeTempDir();
    writeTree(root, {
      'proc/self/mountinfo': '35 31 0:30 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n',
      'proc/self/cgroup': '6:memory:/\n',
      'sys/fs/cgroup/memory/cgroup.procs': '',
    });
    expect(probeCgroupFacts({ root, uid: OWN_UID, env: {} }).cgroup).toEqual({
      kind: 'v1',
      controllers: { memory: join(root, 'sys/fs/cgroup/memory'), pids: null, cpu: null },
      writable: true,
    });
  });
});

describe('no cgroups', () => {
  it('is none, and never looks for systemd-run', () => {
    const root = makeTempDir();
    writeTree(root, { 'proc/self/mountinfo': '22 1 0:21 / /proc rw - proc proc rw\n', 'proc/self/cgroup': '' });
    const bin = stubBin({ 'systemd-run': '#!/bin/sh\n' });
    expect(probeCgroupFacts({ root, uid: 1000, env: { PATH: bin, XDG_RUNTIME_DIR: root } })).toEqual({
      uid: 1000,
      cgroup: { kind: 'none' },
      systemdRun: false,
    });
  });

  it('an unreadable /proc is none, not a crash', () => {
    expect(probeCgroupFacts({ root: join(makeTempDir(), 'missing'), uid: 1000, env: {} }).cgroup).toEqual({
      kind: 'none',
    });
  });
});
