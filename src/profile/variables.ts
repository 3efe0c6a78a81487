// ${name} expansion in profile paths and env values. Pure. An unknown variable is an error: a typo
// must not turn into a literal "${worksapce}" directory that silently binds nothing.
import { SbxError } from '../errors.js';

export interface Variables {
  /** Host path of the workspace (after realpath). */
  workspace: string;
  /** The invoking user's HOME on the host. */
  home: string;
  /** The session id of this run. */
  session: string;
  /** The directory sbx was started in. */
  cwd: string;
}

export const variableNames: readonly (keyof Variables)[] = ['workspace', 'home', 'session', 'cwd'];

export function expandVariables(value: string, vars: Variables, where: string): string {
  const expanded = value.replace(/\$\{([^}]*)\}|\$\$/g, (match, name: string | undefined) => {
    if (match === '$$') return '$';
    if (name !== undefined && (variableNames as readonly string[]).includes(name)) return vars[name as keyof Variables];
    throw new SbxError('PROFILE_VARIABLE', `${where}: unknown variable \${${name ?? ''}}`, {
      hint: `known variables: ${variableNames.map((v) => `\${${v}}`).join(' ')} (write $$ for a literal $)`,
    });
  });
  if (/\$\{/.test(value.replace(/\$\{[^}]*\}|\$\$/g, ''))) {
    throw new SbxError('PROFILE_VARIABLE', `${where}: "\${" is not closed`, {
      hint: 'write ${name}, or $$ for a literal $',
    });
  }
  return expanded;
}

/** `~` and `~/x` mean the invoking HOME, as in a shell. */
export function expandPath(value: string, vars: Variables, where: string): string {
  const expanded = expandVariables(value, vars, where);
  if (expanded === '~') return vars.home;
  if (expanded.startsWith('~/')) return vars.home + expanded.slice(1);
  return expanded;
}
