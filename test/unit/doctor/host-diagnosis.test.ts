// Every cause doctor/host-diagnosis.ts tells apart, read by doctor/host/host-facts.ts from a fixture /proc, /sys
// and /etc tree (test/fixtures/hosts-fs/<case>/), with the exact message and fix the user sees.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeCause, diagnoseHost, isNamespaceFailure } from '../../../src/doctor/host-diagnosis.js';
import { diagnoseUserNamespaces, probeHostFacts } from '../../../src/doctor/host/host-facts.js';
import { FIXTURES_DIR } from '../../helpers/paths.js';
import { makeTempDir } from '../../helpers/tmp.js';

const FS = join(FIXTURES_DIR, 'hosts-fs');
const BWRAP = '/usr/bin/bwrap';

function causesOf(fixture: string, opts: { uid?: number; bwrap?: string | null; env?: Record<string, string> } = {}) {
  const bwrap = opts.bwrap === null ? undefined : (opts.bwrap ?? BWRAP);
  return diagnoseUserNamespaces({ uid: opts.uid ?? 1000, bwrap, env: opts.env ?? {}, root: join(FS, fixture) });
}

/** The fix that changes nothing on the host, offered after every container or nested-sandbox fix. */
const OR_LANDLOCK =
  '; or, changing nothing: sbx run --backend auto (the landlock backend: Linux 6.12+, less isolation, see the README)';
const DOCKER_FIX =
  'start the container with: docker run --security-opt seccomp=unconfined --security-opt systempaths=unconfined ...' +
  OR_LANDLOCK;

describe('host diagnosis: the cause and its exact fix', () => {
  it('a plain host with user namespaces on: nothing to blame', () => {
    expect(causesOf('plain-host')).toEqual([]);
    expect(causesOf('plain-host', { uid: 0 })).toEqual([]);
  });

  it('no bwrap', () => {
    expect(causesOf('no-bwrap', { bwrap: null })).toEqual([
      {
        kind: 'no-bwrap',
        message: 'bubblewrap (bwrap) is not installed or not on PATH',
        fix:
          'install bubblewrap: apt-get install bubblewrap (Debian/Ubuntu), dnf install bubblewrap (Fedora), ' +
          'pacman -S bubblewrap (Arch)',
      },
    ]);
  });

  it('user.max_user_namespaces=0 (binds root too)', () => {
    const expected = [
      {
        kind: 'max-user-namespaces',
        message: 'user namespaces are disabled: user.max_user_namespaces is 0',
        fix:
          "as root: sysctl -w user.max_user_namespaces=15000 && echo 'user.max_user_namespaces=15000' > " +
          '/etc/sysctl.d/90-sbx-userns.conf (kept across reboots)',
      },
    ];
    expect(causesOf('max-user-namespaces')).toEqual(expected);
    expect(causesOf('max-user-namespaces', { uid: 0 })).toEqual(expected);
  });

  it('kernel.unprivileged_userns_clone=0 (Debian 10 and older; root is not bound)', () => {
    expect(causesOf('unprivileged-userns-clone')).toEqual([
      {
        kind: 'unprivileged-userns-clone',
        message: 'unprivileged user namespaces are disabled: kernel.unprivileged_userns_clone is 0',
        fix:
          "as root: sysctl -w kernel.unprivileged_userns_clone=1 && echo 'kernel.unprivileged_userns_clone=1' " +
          '> /etc/sysctl.d/90-sbx-userns.conf (kept across reboots)',
      },
    ]);
    expect(causesOf('unprivileged-userns-clone', { uid: 0 })).toEqual([]);
  });

  it('Ubuntu 24.04+: AppArmor restricts user namespaces and no profile covers this bwrap', () => {
    expect(causesOf('ubuntu-apparmor')).toEqual([
      {
        kind: 'apparmor-userns',
        message:
          'AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1) ' +
          'and no profile under /etc/apparmor.d lets /usr/bin/bwrap create them',
        fix:
          'install one: sudo sbx setup (writes and loads /etc/apparmor.d/sbx-bwrap), or as root: sysctl -w ' +
          'kernel.apparmor_restrict_unprivileged_userns=0 && echo ' +
          "'kernel.apparmor_restrict_unprivileged_userns=0' > /etc/sysctl.d/90-sbx-userns.conf (kept across reboots)",
      },
    ]);
    expect(causesOf('ubuntu-apparmor', { uid: 0 })).toEqual([]);
  });

  it('Ubuntu 24.04+: a profile for the distribution bwrap exists, but sbx uses another bwrap', () => {
    expect(causesOf('ubuntu-apparmor-profile', { bwrap: '/opt/bwrap/bin/bwrap' })[0]!.kind).toBe('apparmor-userns');
  });

  it('Ubuntu 24.04+: a profile for this bwrap exists but bwrap still failed', () => {
    expect(causesOf('ubuntu-apparmor-profile')).toEqual([
      {
        kind: 'apparmor-profile-not-loaded',
        message:
          'AppArmor restricts unprivileged user namespaces; /etc/apparmor.d/bwrap-userns-restrict allows ' +
          '/usr/bin/bwrap but bwrap still failed (profile not loaded?)',
        fix: 'load it: sudo apparmor_parser -r /etc/apparmor.d/bwrap-userns-restrict',
      },
    ]);
  });

  it('Docker with its default seccomp profile, as root and as uid 1000', () => {
    const expected = [
      {
        kind: 'container-seccomp',
        message:
          'this is a docker container (/.dockerenv exists) whose seccomp filter forbids new namespaces ' +
          '(Seccomp: 2, 1 filter)',
        fix: DOCKER_FIX,
      },
    ];
    expect(causesOf('docker', { uid: 0 })).toEqual(expected);
    expect(causesOf('docker', { uid: 1000 })).toEqual(expected);
  });

  it('Docker on an AppArmor host: the docker-default profile must go too', () => {
    expect(causesOf('docker-apparmor', { uid: 0 })[0]!.fix).toBe(
      'start the container with: docker run --security-opt seccomp=unconfined --security-opt ' +
        'systempaths=unconfined --security-opt apparmor=unconfined ...' +
        OR_LANDLOCK,
    );
  });

  it('Docker with seccomp=unconfined but masked /proc paths: bwrap may not mount proc', () => {
    expect(causesOf('docker-seccomp-unconfined', { uid: 0 })).toEqual([
      {
        kind: 'container-proc-masked',
        message:
          'this is a docker container (/.dockerenv exists) that masks parts of /proc, so bwrap may not mount a ' +
          'new procfs',
        fix: 'start the container with: docker run --security-opt systempaths=unconfined ...' + OR_LANDLOCK,
      },
    ]);
  });

  it('Podman', () => {
    expect(causesOf('podman')).toEqual([
      {
        kind: 'container-seccomp',
        message:
          'this is a podman container (/run/.containerenv exists) whose seccomp filter forbids new namespaces ' +
          '(Seccomp: 2, 1 filter)',
        fix:
          'start the container with: podman run --security-opt seccomp=unconfined --security-opt unmask=/proc/* ...' +
          OR_LANDLOCK,
      },
    ]);
  });

  it('Kubernetes, from /proc/1/cgroup or from the service variable', () => {
    const fix =
      "set the pod's securityContext: seccompProfile: {type: Unconfined}, procMount: Unmasked (needs hostUsers: false)" +
      OR_LANDLOCK;
    expect(causesOf('kubernetes')).toEqual([
      {
        kind: 'container-seccomp',
        message:
          'this is a kubernetes container (/proc/1/cgroup names kubepods) whose seccomp filter forbids new ' +
          'namespaces (Seccomp: 2, 1 filter)',
        fix,
      },
    ]);
    expect(causesOf('docker', { env: { KUBERNETES_SERVICE_HOST: '10.0.0.1' } })[0]!.message).toBe(
      'this is a kubernetes container (KUBERNETES_SERVICE_HOST is set) whose seccomp filter forbids new ' +
        'namespaces (Seccomp: 2, 1 filter)',
    );
  });

  it('nested inside an sbx sandbox', () => {
    expect(causesOf('nested-sbx', { env: { SBX_SESSION_ID: 'mwtqcqog-874efb3e' } })).toEqual([
      {
        kind: 'outer-sbx',
        message: 'this is already inside an sbx sandbox (session mwtqcqog-874efb3e), which forbids new user namespaces',
        fix:
          'run the command directly (the outer sbx sandbox already confines it), or run sbx outside that sandbox' +
          OR_LANDLOCK,
      },
    ]);
  });

  it('a crafted SBX_SESSION_ID never reaches the terminal', () => {
    const [cause] = causesOf('nested-sbx', { env: { SBX_SESSION_ID: 'x\u001b]0;owned\u0007' } });
    expect(cause!.message).toBe(
      'this is already inside an sbx sandbox (session (unprintable id)), which forbids new user namespaces',
    );
  });

  it('nested inside another sandbox (bwrap --disable-userns, srt): its user namespace and seccomp filter', () => {
    expect(causesOf('outer-bwrap')).toEqual([
      {
        kind: 'outer-sandbox',
        message:
          'this is inside another sandbox (a user namespace and 1 seccomp filter, NoNewPrivs: bwrap ' +
          '--disable-userns, srt, Flatpak, ...) that forbids new user namespaces',
        fix:
          'run the command directly (the outer sandbox already confines it), or start it from outside that sandbox' +
          OR_LANDLOCK,
      },
    ]);
  });

  it('a seccomp filter inherited from a parent outside any container', () => {
    expect(causesOf('seccomp-filter')).toEqual([
      {
        kind: 'seccomp-filter',
        message: 'a seccomp filter set by a parent process (2 filters, NoNewPrivs) may forbid new namespaces',
        fix:
          'start sbx from a process without that filter (a systemd unit with SystemCallFilter=, a supervisor, ' +
          'a CI runner)',
      },
    ]);
  });

  it('WSL 1 has no namespaces; WSL 2 is a real kernel', () => {
    expect(causesOf('wsl1')).toEqual([
      {
        kind: 'wsl1',
        message: 'this is WSL 1, which has no Linux namespaces',
        fix: 'convert the distribution to WSL 2: wsl --set-version <distro> 2',
      },
    ]);
    expect(causesOf('wsl2')).toEqual([]);
    expect(probeHostFacts({ uid: 1000, bwrap: BWRAP, env: {}, root: join(FS, 'wsl2') }).wsl).toBe(2);
    expect(probeHostFacts({ uid: 1000, bwrap: BWRAP, env: {}, root: join(FS, 'plain-host') }).wsl).toBeUndefined();
  });

  it('describeCause gives the one-line hint sbx run prints', () => {
    const [cause] = causesOf('max-user-namespaces');
    expect(describeCause(cause!)).toBe(
      'user namespaces are disabled: user.max_user_namespaces is 0; fix: as root: sysctl -w ' +
        "user.max_user_namespaces=15000 && echo 'user.max_user_namespaces=15000' > " +
        '/etc/sysctl.d/90-sbx-userns.conf (kept across reboots)',
    );
  });
});

describe('host facts probe: bounded', () => {
  it('a FIFO where a /proc file should be is not read (no hang), and a huge file is capped', () => {
    const root = makeTempDir('hosts-fs-');
    mkdirSync(join(root, 'proc/self'), { recursive: true });
    mkdirSync(join(root, 'proc/sys/user'), { recursive: true });
    execFileSync('mkfifo', [join(root, 'proc/self/status'), join(root, 'proc/sys/user/max_user_namespaces')]);
    writeFileSync(join(root, 'proc/self/uid_map'), 'x'.repeat(10 * 1024 * 1024));
    const facts = probeHostFacts({ uid: 1000, bwrap: BWRAP, env: {}, root });
    expect(facts.seccompMode).toBe(0);
    expect(facts.maxUserNamespaces).toBeUndefined();
    expect(facts.inUserNamespace).toBe(false);
    expect(diagnoseHost(facts)).toEqual([]);
  });
});

describe('isNamespaceFailure: only a namespace failure gets the host diagnosis', () => {
  it.each([
    'bwrap: No permissions to create new namespace, likely because the kernel does not allow non-privileged user ' +
      'namespaces.',
    'bwrap: setting up uid map: Permission denied',
    'bwrap: Creating new namespace failed: No space left on device',
    "bwrap: Can't mount proc on /newroot/proc: Operation not permitted",
    'bwrap: loopback: Failed RTM_NEWADDR: Operation not permitted',
  ])('%s', (stderr) => {
    expect(isNamespaceFailure(stderr)).toBe(true);
  });

  it('another failure keeps the generic hint; an uncaptured one gets the diagnosis', () => {
    expect(isNamespaceFailure("bwrap: Can't find source path /nope: No such file or directory")).toBe(false);
    expect(isNamespaceFailure(undefined)).toBe(true);
  });
});
