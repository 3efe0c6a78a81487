// Text from a repository (a profile, its description, its path) is hostile: shown on a terminal, its
// control characters would be escape sequences (retitle, clear, fake lines). They are shown as \xNN.

/** `text` with every C0/C1 control character but newline and tab as a visible `\xNN`. */
export function printable(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}
