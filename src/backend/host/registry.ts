// The backends sbx can launch with, one typed unit each (bwrap/, nsjail/, landlock/), and the choice of
// one for a run. The pipeline holds a ChosenBackend: the unit bound to the launcher it probed, so the
// unit's compile, read and describe only ever get their own launcher. Nothing outside this registry
// asks which backend a run uses.
import { isSbxError, SbxError } from '../../errors.js';
import type { Host } from '../../policy/host.js';
import type { Policy } from '../../policy/types.js';
import type { ExecOptions, ExecResult } from './exec.js';
import { type BwrapLauncher, bwrap } from '../bwrap/host/backend.js';
import { type LandlockLauncher, landlock } from '../landlock/host/backend.js';
import type { Launch, Session } from '../launch.js';
import { type NsjailLauncher, nsjail } from '../nsjail/host/backend.js';
import type {
  Backend,
  BackendDescription,
  BackendName,
  ExecResultUnder,
  LaunchResult,
  ProbeContext,
  Supervision,
} from './unit.js';

export type { BackendChoice, BackendName, LaunchResult, ProbeContext } from './unit.js';

/** The launcher binary a run uses. */
export type Launcher = BwrapLauncher | NsjailLauncher | LandlockLauncher;

export const BACKENDS = { bwrap, nsjail, landlock } as const;

/** A backend bound to the launcher it probed: what a run (and `sbx explain`) holds. */
export interface ChosenBackend
  extends Pick<
    Backend<Launcher>,
    'name' | 'egressOn' | 'commandLimits' | 'gaps' | 'approximations' | 'exposed' | 'expand'
  > {
  launcher: Launcher;
  /** How backend/host/exec.ts spawns and supervises it. */
  execOptions: (session: Session) => Pick<ExecOptions, 'supervision' | 'fdDir' | 'launcherKill'>;
  compile: (policy: Policy, session: Session, host: Host, arch: NodeJS.Architecture) => Promise<Launch>;
  read: (result: ExecResult, host: Host) => Promise<LaunchResult>;
  describe: (policy: Policy, launch: Launch, quote: (argv: string[]) => string) => Promise<BackendDescription>;
}

/**
 * backend/host/exec.ts returns a supervisor's result exactly when asked to supervise that way (its resultOf):
 * checked here once, for every unit, rather than in each unit's read.
 */
function resultUnder<S extends Supervision>(supervision: S, result: ExecResult): ExecResultUnder<S> {
  if ((result.kind === 'supervised') !== (supervision === 'supervisor')) {
    const why = `internal error: a launch supervised by ${supervision} ended as ${result.kind}`;
    throw new SbxError('INTERNAL', why, {
      hint: 'this is a bug in sbx: please report it with the command line and profile',
    });
  }
  return result as ExecResultUnder<S>;
}

function bind<L extends Launcher, S extends Supervision>(unit: Backend<L, S>, launcher: L): ChosenBackend {
  return {
    name: unit.name,
    egressOn: unit.egressOn,
    commandLimits: unit.commandLimits,
    execOptions: (session) => ({ supervision: unit.supervision, ...unit.execOptions(session) }),
    gaps: unit.gaps,
    approximations: unit.approximations,
    exposed: unit.exposed,
    expand: unit.expand,
    launcher,
    compile: (policy, session, host, arch) => unit.compile(policy, session, launcher, host, arch),
    read: async (result, host) => unit.read(resultUnder(unit.supervision, result), host, launcher),
    describe: (policy, launch, quote) => unit.describe(policy, launch, launcher, quote),
  };
}

/** The backend a launcher belongs to, bound to it: the switch is where the types pair them. */
export function backendOf(launcher: Launcher): ChosenBackend {
  switch (launcher.backend) {
    case 'bwrap':
      return bind(bwrap, launcher);
    case 'nsjail':
      return bind(nsjail, launcher);
    case 'landlock':
      return bind(landlock, launcher);
  }
}

/** `--backend auto` tries them in this order. */
const AUTO_ORDER: readonly BackendName[] = ['bwrap', 'nsjail', 'landlock'];

/**
 * The launcher asked for (flag, then profile, then bwrap). Fails closed: a named backend that is
 * missing is an error, never a silent switch. Only `auto` falls back, in AUTO_ORDER, past a backend
 * that is not installed, and past those that need user namespaces where none can be created here (a
 * container's seccomp profile, an outer sandbox).
 */
export async function chooseBackend(ctx: ProbeContext): Promise<ChosenBackend> {
  if (ctx.choice !== 'auto') return backendOf(await BACKENDS[ctx.choice].probe(ctx));
  let first: SbxError | undefined;
  let namespacesBlocked = false;
  for (const name of AUTO_ORDER) {
    const unit = BACKENDS[name];
    if (unit.needsUserNamespaces && namespacesBlocked) continue;
    let launcher: Launcher;
    try {
      launcher = { ...(await unit.probe(ctx)), chosenBy: 'auto' };
    } catch (error) {
      if (!isSbxError(error)) throw error;
      first ??= error;
      continue;
    }
    if (launcher.backend === 'bwrap') {
      // The check tries bwrap itself, so it runs only where bwrap is installed.
      const { userNamespacesBlocked } = await import('../landlock/host/landlock-probe.js');
      namespacesBlocked = userNamespacesBlocked(ctx.uid, launcher.path, ctx.env);
      if (namespacesBlocked) continue;
    }
    return backendOf(launcher);
  }
  const message = `--backend auto: neither bubblewrap, nsjail nor landlock is usable (${first?.message})`;
  throw new SbxError(first?.code ?? 'BWRAP_MISSING', message, { ...(first?.hint ? { hint: first.hint } : {}) });
}
