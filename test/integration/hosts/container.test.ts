// sbx where CI runners and dev containers put it: inside a real Docker container (the image and daemon of
// ../shared/tools/container-host.sh, always --network none), as root and as uid 1000.
//  - Docker's defaults (seccomp profile, masked /proc): sbx refuses, naming the container and the exact
//    `docker run` options; `sbx doctor --json` names the container.
//  - With exactly those options: sbx runs on bwrap, and really trying shows the HOME secret unreadable,
//    the workspace writable, /usr and a directory beside the workspace not; the report names the backend.
//  - sbx inside that sbx refuses, naming the outer sandbox.
//  - --backend auto under Docker's defaults, and nested inside an sbx (bwrap) run: sbx runs on landlock,
//    with the same probes, and the report names the backend and its approximations.
//  - --backend auto under Docker's defaults in a git repository: the agent commits, node runs, the HOME
//    secret stays unreadable, and the hook and core.hooksPath it plants are gone after the run; the
//    same nested inside an sbx (bwrap) run, with --memory holding there too.
//  - No cgroup is writable in the container: --memory 256MiB stops a 1 GiB allocation (control: --memory
//    none allocates it); a workspace .env refuses the run, naming it.
//  - An allow-list network on landlock needs pidfd_getfd, which Docker's profile gates on CAP_SYS_PTRACE:
//    doctor says so, and with --cap-add SYS_PTRACE the command reaches a local upstream through the
//    proxy only (a direct connect is refused and reported).
// Needs root and a running Docker with image sbx-host:latest; otherwise skipped, saying why.
import { spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { IS_ROOT } from '../../helpers/sbx-cli.js';
import { REPO_ROOT } from '../../helpers/paths.js';
import { makeTempDir } from '../../helpers/tmp.js';

const IMAGE = 'sbx-host:latest';
const FIX = ['--security-opt', 'seccomp=unconfined', '--security-opt', 'systempaths=unconfined'];
const DOCKER_HINT =
  'sbx: hint: this is a docker container (/.dockerenv exists) whose seccomp filter forbids new namespaces ' +
  '(Seccomp: 2, 1 filter); fix: start the container with: docker run --security-opt seccomp=unconfined ' +
  '--security-opt systempaths=unconfined ...; or, changing nothing: sbx run --backend auto (the landlock backend: ' +
  'Linux 6.12+, less isolation, see the README)';

function unavailable(): string | undefined {
  if (!IS_ROOT) return 'needs root to drive Docker';
  if (!existsSync(join(REPO_ROOT, 'dist', 'cli.js'))) return 'dist/ is missing: run npm run build';
  const info = spawnSync('docker', ['image', 'inspect', IMAGE], { encoding: 'utf8', timeout: 30_000 });
  if (info.status !== 0) return `no Docker with ${IMAGE}: run ../shared/tools/container-host.sh (as root)`;
  return undefined;
}
const SKIP = unavailable();

/** The probe each run executes inside the container; every line is `name:result`. */
const PROBE = `cd /ws
echo "control-secret:$(cat /home/u/.ssh/id_test 2>&1)"
echo "control-data:$( (echo x > /data/control && cat /data/control) 2>&1)"
/sbx/bin/sbx.js run --report-fd 3 -- sh -c '
  echo "secret:$(cat /home/u/.ssh/id_test 2>&1)"
  echo "ws:$( (echo w > /ws/made && cat /ws/made) 2>&1)"
  echo "usr:$( (echo x > /usr/sbx-x) 2>&1)"
  echo "data:$( (echo x > /data/x) 2>&1)"
' 3>/tmp/report.json
echo "exit:$?"
printf 'report:%s\\n' "$(cat /tmp/report.json)"
`;

/** PROBE under --backend auto; Landlock answers EACCES where bwrap's mounts answer ENOENT or EROFS. */
const AUTO_PROBE = PROBE.replace('run --report-fd 3 --', 'run --backend auto --report-fd 3 --');
const LANDLOCK_LINES = {
  secret: 'cat: /home/u/.ssh/id_test: Permission denied',
  ws: 'w',
  usr: 'sh: 4: cannot create /usr/sbx-x: Permission denied',
  data: 'sh: 5: cannot create /data/x: Permission denied',
  exit: '0',
};

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
  lines: Record<string, string>;
}

/** One `docker run --network none` of `script` as `uid`; HOME holds a secret; HOME, /ws and /data belong to uid. */
function inContainer(uid: number, script: string, opts: string[] = []): Run {
  const host = makeTempDir('sbx-container-');
  for (const dir of ['home/.ssh', 'ws', 'data']) mkdirSync(join(host, dir), { recursive: true });
  writeFileSync(join(host, 'home/.ssh/id_test'), 'TOPSECRET\n');
  writeFileSync(join(host, 'probe.sh'), script);
  for (const path of ['home', 'home/.ssh', 'home/.ssh/id_test', 'ws', 'data']) chownSync(join(host, path), uid, uid);
  const r = spawnSync(
    'docker',
    [
      'run',
      '--rm',
      '--network',
      'none',
      ...opts,
      '--user',
      `${uid}:${uid}`,
      '-e',
      'HOME=/home/u',
      '-v',
      `${REPO_ROOT}:/sbx:ro`,
      '-v',
      `${host}/home:/home/u`,
      '-v',
      `${host}/ws:/ws`,
      '-v',
      `${host}/data:/data`,
      '-v',
      `${host}/probe.sh:/probe.sh:ro`,
      IMAGE,
      'sh',
      '/probe.sh',
    ],
    { encoding: 'utf8', timeout: 120_000 },
  );
  const lines = Object.fromEntries(
    r.stdout.split('\n').flatMap((line) => {
      const at = line.indexOf(':');
      return at > 0 ? [[line.slice(0, at), line.slice(at + 1)]] : [];
    }),
  );
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, lines };
}

describe.skipIf(SKIP !== undefined)(`inside Docker${SKIP ? ` (skipped: ${SKIP})` : ''}`, () => {
  for (const uid of [0, 1000]) {
    it(`uid ${uid}, Docker's defaults: sbx refuses with the container and the exact docker run options`, () => {
      const r = inContainer(uid, 'cd /ws; node /sbx/bin/sbx.js run -- true; echo "exit:$?"');
      expect(r.lines.exit).toBe('125');
      expect(r.stderr).toContain(`${DOCKER_HINT}\n`);
    });

    it(`uid ${uid}, with those options: on bwrap, HOME secret unreadable, only the workspace writable`, () => {
      const r = inContainer(uid, PROBE, FIX);
      // Controls: unsandboxed, the secret reads and the directory beside the workspace takes a write.
      expect(r.lines['control-secret']).toBe('TOPSECRET');
      expect(r.lines['control-data']).toBe('x');
      expect(r.lines.secret).toBe('cat: /home/u/.ssh/id_test: No such file or directory');
      expect(r.lines.ws).toBe('w');
      expect(r.lines.usr).toBe('sh: 4: cannot create /usr/sbx-x: Read-only file system');
      expect(r.lines.data).toBe('sh: 5: cannot create /data/x: Directory nonexistent');
      expect(r.lines.exit).toBe('0');
      expect(JSON.parse(r.lines.report!)).toMatchObject({ backend: 'bwrap', exitCode: 0, setBy: 'child' });
    });
  }

  for (const uid of [0, 1000]) {
    it(`uid ${uid}, Docker's defaults, --backend auto: on landlock, HOME secret unreadable, workspace writable`, () => {
      const r = inContainer(uid, AUTO_PROBE);
      expect(r.lines['control-secret']).toBe('TOPSECRET');
      expect(r.lines['control-data']).toBe('x');
      expect(r.lines).toMatchObject(LANDLOCK_LINES);
      expect(r.stderr).toContain('sbx: --backend auto chose landlock\n');
      const report = JSON.parse(r.lines.report!) as { backend: string; exitCode: number; approximations: string[] };
      expect(report).toMatchObject({ backend: 'landlock', exitCode: 0, setBy: 'child' });
      const features = report.approximations.map((a) => a.split(':')[0]);
      expect(features).toEqual(expect.arrayContaining(['mounts.tmp', 'mounts.home', 'namespaces.pid']));
    });
  }

  /** A git repository in /ws with a commit; the agent commits, plants a hook and core.hooksPath. */
  const GIT_PROBE = `cd /ws && git init -q -b main && echo one > a && git add a
git -c user.name=h -c user.email=h@x commit -qm init
/sbx/bin/sbx.js run --backend auto -- sh -c '
  echo two >> a && git add a && git -c user.name=a -c user.email=a@x commit -qm agent
  echo "secret:$(cat /home/u/.ssh/id_test 2>&1)"
  echo "#!/bin/sh" > .git/hooks/pre-commit && git config core.hooksPath /tmp/evil
  echo "node:$(node -e "console.log(1 + 1)")"
'
echo "exit:$?"
echo "log:$(git log --format=%s | tr '\\n' ' ')"
echo "hooksPath:$(git config core.hooksPath || echo unset)"
echo "hook:$(test -e .git/hooks/pre-commit && echo planted || echo absent)"
`;

  for (const uid of [0, 1000]) {
    it(`uid ${uid}, Docker's defaults, --backend auto in a git repository: commits, and no plant survives`, () => {
      const r = inContainer(uid, GIT_PROBE);
      expect(r.lines).toMatchObject({
        secret: 'cat: /home/u/.ssh/id_test: Permission denied',
        node: '2',
        exit: '0',
        log: 'agent init ',
        hooksPath: 'unset',
        hook: 'absent',
      });
      expect(r.stderr).toContain('git-state (landlock.guard): /ws/.git/hooks/pre-commit: added; removed');
    });
  }

  it('nested: sbx --backend auto inside an sbx (bwrap) run works on landlock, stricter than the outer one', () => {
    // The outer sandbox (bwrap, Docker started with FIX) shows the checkout read-only and /ws writable; the
    // inner sbx runs in /ws/inner, so /ws/beside is writable to the outer sandbox (the control) and not to
    // the inner one: that EACCES is Landlock's.
    const nested = `cd /ws && mkdir inner
cat > /ws/inner.sh <<'EOF'
cd /ws/inner
echo "control-beside:$( (echo x > /ws/beside && cat /ws/beside) 2>&1)"
/sbx/bin/sbx.js run --backend auto --report-fd 3 -- sh -c '
  echo "ws:$( (echo w > /ws/inner/made && cat /ws/inner/made) 2>&1)"
  echo "beside:$( (echo y > /ws/beside) 2>&1)"
' 3>/tmp/report.json
echo "exit:$?"
printf 'report:%s\\n' "$(cat /tmp/report.json)"
EOF
/sbx/bin/sbx.js run --ro-bind /sbx -- sh /ws/inner.sh`;
    const r = inContainer(1000, nested, FIX);
    const beside = 'sh: 3: cannot create /ws/beside: Permission denied';
    expect(r.lines).toMatchObject({ 'control-beside': 'x', ws: 'w', beside, exit: '0' });
    expect(r.stderr).toContain('sbx: --backend auto chose landlock\n');
    expect(JSON.parse(r.lines.report!)).toMatchObject({ backend: 'landlock', exitCode: 0 });
  });

  it('nested: inside an sbx (bwrap) run, --backend auto in a git repository commits, leaves no plant, and holds --memory', () => {
    const inner = GIT_PROBE.replace(
      'echo "exit:$?"',
      `echo "exit:$?"
/sbx/bin/sbx.js run --backend auto --memory 256MiB -- python3 -c 'b = bytearray(1 << 30); print("allocated")'
echo "mem-exit:$?"`,
    );
    const nested = `cat > /data/inner.sh <<'OUTER'\n${inner}OUTER\ncd /ws && /sbx/bin/sbx.js run --ro-bind /sbx --ro-bind /data -- sh /data/inner.sh`;
    const r = inContainer(1000, nested, FIX);
    expect(r.lines).toMatchObject({ node: '2', exit: '0', log: 'agent init ', hooksPath: 'unset', hook: 'absent' });
    // Python's MemoryError (1) at the data limit, or the watchdog's SIGKILL (137); never a refusal (125).
    expect(r.lines['mem-exit']).toMatch(/^(1|137)$/);
    expect(r.stdout).not.toContain('allocated');
    expect(r.stderr).toContain('sbx: --backend auto chose landlock\n');
  });

  it('sbx doctor --json names the container and the cause', () => {
    const r = inContainer(1000, 'node /sbx/bin/sbx.js doctor --json');
    expect(r.status).toBe(1);
    type Doctor = { host: { container: unknown }; causes: { kind: string }[]; checks: unknown[] };
    const doctor = JSON.parse(r.stdout) as Doctor;
    expect(doctor.host.container).toEqual({ kind: 'docker', evidence: '/.dockerenv exists' });
    expect(doctor.causes.map((c) => c.kind)).toEqual(['container-seccomp']);
    const detail = 'a docker container (/.dockerenv exists); under 1 seccomp filter(s)';
    expect(doctor.checks).toContainEqual({ name: 'host', status: 'ok', detail });
    // Landlock works; only its network judge needs pidfd_getfd, which Docker's profile gates on CAP_SYS_PTRACE.
    expect(doctor.checks).toContainEqual(
      expect.objectContaining({
        name: 'landlock',
        status: 'warn',
        detail: expect.stringContaining('allow-list networks are refused here (pidfd_getfd: Operation not permitted)'),
        fix: expect.stringContaining('start the container with --cap-add SYS_PTRACE'),
      }),
    );
  });

  // Real work where no cgroup is writable: the memory limit holds (per-process data limit + the tree
  // watchdog), a workspace secret refuses the run by name, and an allow-list network goes through the
  // proxy only. Each beside its control.
  const WORK_PROBE = `cd /ws && git init -q -b main && echo one > a && git add a
git -c user.name=h -c user.email=h@x commit -qm init
echo TOKEN=x > .env
/sbx/bin/sbx.js run --backend auto -- true 2>/tmp/env.err; echo "env-exit:$?"
echo "env-named:$(grep -q '/ws/.env' /tmp/env.err && echo yes)"
rm .env
ALLOC='b = bytearray(1 << 30); print("allocated")'
echo "control-mem:$(/sbx/bin/sbx.js run --backend auto --memory none -- python3 -c "$ALLOC" 2>/dev/null)"
/sbx/bin/sbx.js run --backend auto --memory 256MiB --report-fd 3 -- python3 -c "$ALLOC" 3>/tmp/mem.json 2>/tmp/mem.err
echo "mem-exit:$?"
printf 'mem-report:%s\\n' "$(cat /tmp/mem.json)"
`;

  for (const uid of [0, 1000]) {
    it(`uid ${uid}, Docker's defaults: --memory 256MiB stops a 1 GiB allocation; .env refuses the run by name`, () => {
      const r = inContainer(uid, WORK_PROBE);
      expect(r.lines).toMatchObject({ 'env-exit': '125', 'env-named': 'yes', 'control-mem': 'allocated' });
      expect(r.lines['mem-exit']).toMatch(/^(1|137)$/);
      const report = JSON.parse(r.lines['mem-report']!) as { backend: string; limits: unknown };
      expect(report.backend).toBe('landlock');
      expect(JSON.stringify(report.limits)).toContain('watchdog');
    });
  }

  it('uid 1000, --cap-add SYS_PTRACE: an allow-list network under landlock reaches a local upstream only through the proxy (a direct connect captured into it)', () => {
    const script = `cd /ws
node -e 'require("http").createServer((q, s) => s.end("upstream " + q.url + "\\n")).listen(8080, "127.0.0.1")' &
server=$!
sleep 1
printf 'extends: default\\nnetwork:\\n  allow: ["127.0.0.1"]\\n  allow_private: ["127.0.0.1:8080"]\\n' > /tmp/allow.yaml
/sbx/bin/sbx.js run --backend auto -p /tmp/allow.yaml -- sh -c '
  echo "proxied:$(curl -s --noproxy "" http://127.0.0.1:8080/x)"
  echo "direct:$(curl -s --noproxy "*" http://127.0.0.1:8080/y)"
  echo "other-port:$(curl -s --noproxy "*" http://127.0.0.1:8081/z 2>&1; echo "rc=$?")"
'
echo "exit:$?"
kill $server`;
    const r = inContainer(1000, script, ['--cap-add', 'SYS_PTRACE']);
    // The direct connect is the judge's capture: the proxy's rules decide it, as for the proxied one.
    expect(r.lines).toMatchObject({ proxied: 'upstream /x', direct: 'upstream /y', 'other-port': 'rc=7', exit: '0' });
    expect(r.stderr).toMatch(/network\.private.*127\.0\.0\.1:8081|127\.0\.0\.1:8081.*network\.private/);
  });

  it('nested: sbx inside an sbx run refuses, naming the outer sbx session', () => {
    // sbx itself is bound read-only: a workspace holding sbx's own code is refused (host-state/host-state.ts).
    const nested =
      'cd /ws; node /sbx/bin/sbx.js run --ro-bind /sbx -- node /sbx/bin/sbx.js run -- true; echo "exit:$?"';
    const r = inContainer(1000, nested, FIX);
    expect(r.lines.exit).toBe('125');
    const session = /sbx: hint: this is already inside an sbx sandbox \(session ([a-z0-9]+-[0-9a-f]+)\)/.exec(r.stderr);
    expect(session).not.toBeNull();
    expect(r.stderr).toContain(
      `(session ${session![1]}), which forbids new user namespaces; fix: run the command directly ` +
        '(the outer sbx sandbox already confines it), or run sbx outside that sandbox; or, changing nothing: ' +
        'sbx run --backend auto (the landlock backend: Linux 6.12+, less isolation, see the README)\n',
    );
  });
});
