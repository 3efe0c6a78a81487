// Path containment, the one definition every layer uses: whether a path is a root or lies below it.
// Pure string work on absolute, normalised paths (callers normalise or realpath first): `/a/bc` is
// not inside `/a/b`, and every path is inside `/`.

/** Whether `path` is `root` or inside it (both absolute and normalised). */
export function isWithin(path: string, root: string): boolean {
  return path === root || root === '/' || path.startsWith(`${root}/`);
}
