// The AppArmor profile `sbx setup` installs on Ubuntu 23.10+ (kernel.apparmor_restrict_unprivileged_userns=1):
// it attaches to one bwrap binary and grants it `userns`, the only thing the restriction takes away.
// `flags=(unconfined)` keeps every other access as before: the profile loosens nothing but user namespace
// creation, for that exact path. The `userns` rule and abi 4.0 need AppArmor 4 (Ubuntu 24.04's parser).

import { SbxError } from '../errors.js';

export const APPARMOR_PROFILE_NAME = 'sbx-bwrap';
export const APPARMOR_PROFILE_FILE = `/etc/apparmor.d/${APPARMOR_PROFILE_NAME}`;

/**
 * Attachment paths are written unquoted: refuse anything but plain path characters, so a crafted bwrap
 * path (spaces, globs `*?[{`, quotes, newlines) can never widen the attachment or inject rules.
 */
const SAFE_PATH = /^\/[A-Za-z0-9._+\-/]+$/;

export function apparmorProfile(bwrapRealPath: string): string {
  if (!SAFE_PATH.test(bwrapRealPath) || bwrapRealPath.split('/').some((part) => part === '..' || part === '.')) {
    throw new SbxError('HOST_SETUP', `cannot write an AppArmor profile for ${JSON.stringify(bwrapRealPath)}`, {
      hint: 'pass --bwrap with a path made of letters, digits and . _ + - / only (e.g. /usr/bin/bwrap)',
    });
  }
  return [
    '# Written by `sbx setup`: lets this bwrap create user namespaces under',
    '# kernel.apparmor_restrict_unprivileged_userns=1. Remove with: sudo sbx setup --remove',
    'abi <abi/4.0>,',
    'include <tunables/global>',
    '',
    `profile ${APPARMOR_PROFILE_NAME} ${bwrapRealPath} flags=(unconfined) {`,
    '  userns,',
    '',
    `  include if exists <local/${APPARMOR_PROFILE_NAME}>`,
    '}',
    '',
  ].join('\n');
}
