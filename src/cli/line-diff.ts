// A small line diff for `sbx trust`: what changed in a profile since it was trusted. Profiles are
// short; past MAX_CELLS of LCS table the caller gets a summary instead.
const MAX_CELLS = 4_000_000;

/** `-`/`+` lines (with their line numbers) turning `before` into `after`; undefined when too large to compute. */
export function lineDiff(before: string, after: string): string[] | undefined {
  const a = before.split('\n');
  const b = after.split('\n');
  if (a.length * b.length > MAX_CELLS) return undefined;
  // lcs[i][j]: length of the longest common subsequence of a[i..] and b[j..].
  const lcs = Array.from({ length: a.length + 1 }, () => new Uint32Array(b.length + 1));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--)
      lcs[i]![j] = a[i] === b[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
  }
  const out: string[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      i++;
      j++;
    } else if (j < b.length && (i === a.length || lcs[i]![j + 1]! > lcs[i + 1]![j]!)) {
      out.push(`+${String(j + 1).padStart(4)} ${b[j]}`);
      j++;
    } else {
      out.push(`-${String(i + 1).padStart(4)} ${a[i]}`);
      i++;
    }
  }
  return out;
}
