// Why bwrap cannot build a sandbox on this host, and the exact change that fixes it. Pure: the facts come
// from doctor/host/host-facts.ts (a bounded read of /proc, /sys and /etc/apparmor.d), so every cause is
// tested against a fixture tree. bwrap keeps the last word: a cause is only a diagnosis of its failure.

export type ContainerKind = 'docker' | 'podman' | 'kubernetes' | 'lxc' | 'container';

export interface HostFacts {
  uid: number;
  /** The bwrap sbx would run, or undefined when none is installed. */
  bwrap: string | undefined;
  /** /proc/sys/user/max_user_namespaces (undefined when unreadable). */
  maxUserNamespaces: number | undefined;
  /** /proc/sys/kernel/unprivileged_userns_clone (Debian's pre-5.x knob; absent upstream). */
  unprivilegedUsernsClone: number | undefined;
  /** /proc/sys/kernel/apparmor_restrict_unprivileged_userns (Ubuntu 23.10+). */
  apparmorRestrictUserns: number | undefined;
  /** /sys/module/apparmor/parameters/enabled reads Y. */
  apparmorEnabled: boolean;
  /** Files under /etc/apparmor.d that name the bwrap in use and grant `userns`. */
  apparmorProfiles: string[];
  /** The container this process runs in, and the file or variable that says so. */
  container: { kind: ContainerKind; evidence: string } | undefined;
  /** /proc/self/status `Seccomp:` (0 none, 1 strict, 2 filter) and `Seccomp_filters:`. */
  seccompMode: number;
  seccompFilters: number;
  noNewPrivs: boolean;
  /** /proc/self/uid_map is not the initial namespace's identity map: some sandbox created our user namespace. */
  inUserNamespace: boolean;
  /** Mount points under /proc (Docker masks /proc/kcore, /proc/sys, ... so a new procfs may not be mounted). */
  procMasked: boolean;
  /** SBX_SESSION_ID: sbx sets it inside every sandbox it builds (policy/derive/command-env.ts). */
  outerSbxSession: string | undefined;
  /** WSL1 has no user namespaces at all; WSL2 is a real Linux kernel. */
  wsl: 1 | 2 | undefined;
}

export type CauseKind =
  | 'no-bwrap'
  | 'wsl1'
  | 'outer-sbx'
  | 'max-user-namespaces'
  | 'unprivileged-userns-clone'
  | 'apparmor-userns'
  | 'apparmor-profile-not-loaded'
  | 'container-seccomp'
  | 'container-proc-masked'
  | 'outer-sandbox'
  | 'seccomp-filter';

export interface Cause {
  kind: CauseKind;
  /** What blocks user namespaces here: one line. */
  message: string;
  /** The exact change that lets bwrap work here: one line. */
  fix: string;
}

const INSTALL_FIX =
  'install bubblewrap: apt-get install bubblewrap (Debian/Ubuntu), dnf install bubblewrap (Fedora), ' +
  'pacman -S bubblewrap (Arch)';

const SYSCTL_FILE = '/etc/sysctl.d/90-sbx-userns.conf';

function sysctlFix(line: string): string {
  return `as root: sysctl -w ${line} && echo '${line}' > ${SYSCTL_FILE} (kept across reboots)`;
}

/**
 * Where no namespace can be made, the landlock backend needs none (src/backend/landlock/compile.ts): the fix
 * that changes nothing on the host. It isolates less than bwrap, so it is offered, never chosen here.
 */
export const LANDLOCK_ALTERNATIVE =
  'or, changing nothing: sbx run --backend auto (the landlock backend: Linux 6.12+, less isolation, see the README)';

function orLandlock(fix: string): string {
  return `${fix}; ${LANDLOCK_ALTERNATIVE}`;
}

function filters(f: HostFacts, noun = 'filter'): string {
  return `${f.seccompFilters} ${noun}${f.seccompFilters === 1 ? '' : 's'}`;
}

/**
 * The container settings that give bwrap its namespaces (seccomp) and a procfs it may mount (Docker masks
 * /proc/kcore, /proc/sys, ... and the kernel refuses a new proc mount over a partly hidden one). Found by
 * trying bwrap in Docker: seccomp=unconfined alone still fails with "Can't mount proc".
 */
function containerFix(kind: ContainerKind, apparmor: boolean, needSeccomp: boolean): string {
  const seccomp = needSeccomp ? ['--security-opt seccomp=unconfined'] : [];
  const noApparmor = apparmor ? ['--security-opt apparmor=unconfined'] : [];
  const docker = [...seccomp, '--security-opt systempaths=unconfined', ...noApparmor].join(' ');
  const podman = [...seccomp, '--security-opt unmask=/proc/*', ...noApparmor].join(' ');
  switch (kind) {
    case 'kubernetes':
      return (
        "set the pod's securityContext: seccompProfile: {type: Unconfined}, " +
        'procMount: Unmasked (needs hostUsers: false)' +
        (apparmor ? ', appArmorProfile: {type: Unconfined}' : '')
      );
    case 'podman':
      return `start the container with: podman run ${podman} ...`;
    case 'docker':
      return `start the container with: docker run ${docker} ...`;
    case 'lxc':
    case 'container':
      return `let the container create user namespaces and mount proc (Docker: docker run ${docker} ...)`;
  }
}

function apparmorCause(f: HostFacts & { bwrap: string }): Cause {
  const [profile] = f.apparmorProfiles;
  if (profile) {
    return {
      kind: 'apparmor-profile-not-loaded',
      message:
        `AppArmor restricts unprivileged user namespaces; ${f.apparmorProfiles.join(', ')} allows ${f.bwrap} ` +
        'but bwrap still failed (profile not loaded?)',
      fix: `load it: sudo apparmor_parser -r ${profile}`,
    };
  }
  return {
    kind: 'apparmor-userns',
    message:
      'AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1) ' +
      `and no profile under /etc/apparmor.d lets ${f.bwrap} create them`,
    fix:
      'install one: sudo sbx setup (writes and loads /etc/apparmor.d/sbx-bwrap), or ' +
      sysctlFix('kernel.apparmor_restrict_unprivileged_userns=0'),
  };
}

/** A container's seccomp filter or masked /proc, or a filter from some other sandbox or parent. */
function seccompCause(f: HostFacts): Cause | undefined {
  const nnp = f.noNewPrivs ? ', NoNewPrivs' : '';
  if (f.container) {
    const where = `this is a ${f.container.kind} container (${f.container.evidence})`;
    if (f.seccompMode === 2) {
      return {
        kind: 'container-seccomp',
        message: `${where} whose seccomp filter forbids new namespaces (Seccomp: 2, ${filters(f)})`,
        fix: orLandlock(containerFix(f.container.kind, f.apparmorEnabled, true)),
      };
    }
    if (!f.procMasked) return undefined;
    return {
      kind: 'container-proc-masked',
      message: `${where} that masks parts of /proc, so bwrap may not mount a new procfs`,
      fix: orLandlock(containerFix(f.container.kind, f.apparmorEnabled, false)),
    };
  }
  if (f.outerSbxSession !== undefined || f.seccompMode !== 2) return undefined;
  if (f.inUserNamespace) {
    return {
      kind: 'outer-sandbox',
      message:
        `this is inside another sandbox (a user namespace and ${filters(f, 'seccomp filter')}${nnp}: ` +
        'bwrap --disable-userns, srt, Flatpak, ...) that forbids new user namespaces',
      fix: orLandlock(
        'run the command directly (the outer sandbox already confines it), or start it from outside that sandbox',
      ),
    };
  }
  return {
    kind: 'seccomp-filter',
    message: `a seccomp filter set by a parent process (${filters(f)}${nnp}) may forbid new namespaces`,
    fix:
      'start sbx from a process without that filter ' +
      '(a systemd unit with SystemCallFilter=, a supervisor, a CI runner)',
  };
}

/**
 * Every visible reason bwrap cannot create its namespaces here, most specific first. Empty when nothing
 * visible blocks them (bwrap's own message then stands).
 */
export function diagnoseHost(f: HostFacts): Cause[] {
  const causes: Cause[] = [];
  if (!f.bwrap) {
    causes.push({ kind: 'no-bwrap', message: 'bubblewrap (bwrap) is not installed or not on PATH', fix: INSTALL_FIX });
  }
  if (f.wsl === 1) {
    causes.push({
      kind: 'wsl1',
      message: 'this is WSL 1, which has no Linux namespaces',
      fix: 'convert the distribution to WSL 2: wsl --set-version <distro> 2',
    });
  }
  if (f.outerSbxSession !== undefined) {
    causes.push({
      kind: 'outer-sbx',
      message:
        `this is already inside an sbx sandbox (session ${f.outerSbxSession}), ` + 'which forbids new user namespaces',
      fix: orLandlock(
        'run the command directly (the outer sbx sandbox already confines it), or run sbx outside that sandbox',
      ),
    });
  }
  if (f.maxUserNamespaces === 0) {
    causes.push({
      kind: 'max-user-namespaces',
      message: 'user namespaces are disabled: user.max_user_namespaces is 0',
      fix: sysctlFix('user.max_user_namespaces=15000'),
    });
  }
  if (f.uid !== 0 && f.unprivilegedUsernsClone === 0) {
    causes.push({
      kind: 'unprivileged-userns-clone',
      message: 'unprivileged user namespaces are disabled: kernel.unprivileged_userns_clone is 0',
      fix: sysctlFix('kernel.unprivileged_userns_clone=1'),
    });
  }
  // Ubuntu 23.10+: an unconfined process that creates a user namespace loses every capability in it unless
  // an AppArmor profile for the binary grants `userns`. Root keeps CAP_SYS_ADMIN and is not restricted.
  if (f.uid !== 0 && f.apparmorRestrictUserns === 1 && f.apparmorEnabled && f.bwrap) {
    causes.push(apparmorCause({ ...f, bwrap: f.bwrap }));
  }
  const seccomp = seccompCause(f);
  if (seccomp) causes.push(seccomp);
  return causes;
}

/** One line for an error hint: the first cause and its fix. */
export function describeCause(cause: Cause): string {
  return `${cause.message}; fix: ${cause.fix}`;
}

const NAMESPACE_FAILURE =
  /namespace|uid map|gid map|RTM_NEWADDR|mount proc|Permission denied|Operation not permitted|No space left/i;

/**
 * Whether bwrap's last words are about namespaces, mounts or permissions (what a blocked user namespace
 * produces: "No permissions to create new namespace", "setting up uid map: Permission denied",
 * "Creating new namespace failed: No space left on device", "Can't mount proc ...: Operation not
 * permitted", "loopback: Failed RTM_NEWADDR"). Another failure (a missing bind source) keeps the generic
 * hint rather than a wrong diagnosis. Unknown (not captured): the diagnosis is the best guess.
 */
export function isNamespaceFailure(bwrapStderr: string | undefined): boolean {
  if (bwrapStderr === undefined || bwrapStderr.trim() === '') return true;
  return NAMESPACE_FAILURE.test(bwrapStderr);
}
