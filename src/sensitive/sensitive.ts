// Credential stores in HOME that never enter a sandbox: not through a bind of HOME (danger mode, a
// workspace that is HOME), not through an explicit bind (README "Sensitive files"), including
// the equivalents of other CLIs. Paths are relative to the invoking HOME.
export const SENSITIVE_HOME_ROOTS: readonly string[] = [
  '.ssh',
  '.aws',
  '.gnupg',
  '.kube',
  '.config/gcloud',
  '.config/gh',
  '.docker',
  '.pypirc',
  '.npmrc',
  '.netrc',
  '.git-credentials',
  '.azure',
  '.config/doctl',
  '.config/hub',
  '.terraform.d',
  '.password-store',
  '.local/share/keyrings',
  '.vault-token',
  '.cargo/credentials.toml',
  '.cargo/credentials',
  '.config/op',
  '.oci',
];

/**
 * Absolute sensitive paths for this user: the HOME roots and a profile's additions (absolute,
 * expanded), plus the agent sockets named by the
 * environment (dropping SSH_AUTH_SOCK from the env is not enough when a bind exposes the socket).
 */
export function sensitivePaths(home: string, env: Record<string, string>, extra: readonly string[] = []): string[] {
  const paths = [...SENSITIVE_HOME_ROOTS.map((rel) => (home === '/' ? `/${rel}` : `${home}/${rel}`)), ...extra];
  for (const value of [env.SSH_AUTH_SOCK, env.GPG_AGENT_INFO?.split(':')[0]]) {
    if (value?.startsWith('/')) paths.push(value);
  }
  return paths;
}
