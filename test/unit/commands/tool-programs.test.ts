// The sed scripts and awk programs the rules read (tool-programs.ts): what they run and which files they
// name, and the scripts agents write every day, which do neither. Pure.
import { describe, expect, it } from 'vitest';
import { judgeAwkProgram, judgeSedScript } from '../../../src/commands/tool-programs.js';

const none = { hidden: [], paths: [], unknownPaths: [] };

describe('judgeSedScript', () => {
  it("agents' scripts: print, substitute, insert, delete, labels, blocks; nothing run, no file named", () => {
    for (const script of [
      '420,440p',
      's/np.diff(a).astype(float)/np.diff(a.astype(np.int64))/',
      '151 i\\        logging.debug("x")',
      '911,912d',
      's/a\\/b/c/g;s|x|y|2',
      ':a;N;$!ba;s/\\n/ /g',
      '/^def /,/^class /{p;q}',
      '$!N; /^\\(.*\\)\\n\\1$/!P; D',
      'y/abc/xyz/',
      '1~2p',
      '# a comment\np',
    ])
      expect(judgeSedScript(script), script).toEqual(none);
  });

  it('e and s///e run a command; w, W, r, R and s///w name files', () => {
    expect(judgeSedScript('e id').hidden).toEqual(["sed's e command, which runs a command"]);
    expect(judgeSedScript('1e').hidden).toHaveLength(1);
    expect(judgeSedScript('s/.*/id/e').hidden).toEqual(["sed's s///e flag, which runs the pattern space as a command"]);
    expect(judgeSedScript('w /etc/x').paths).toEqual(['/etc/x']);
    expect(judgeSedScript('1r /etc/shadow\n2R in').paths).toEqual(['/etc/shadow', 'in']);
    expect(judgeSedScript('s/a/b/gw out.txt').paths).toEqual(['out.txt']);
  });

  it('a script GNU sed would not accept is not judged as harmless', () => {
    for (const script of ['k', 's/a/b', 'p x', '/unterminated'])
      expect(judgeSedScript(script).hidden[0], script).toMatch(/^a sed script sbx cannot read/);
  });
});

describe('judgeAwkProgram', () => {
  it("agents' programs: fields, patterns, sums, printf, comparisons; nothing run", () => {
    for (const program of [
      '{print $1}',
      'NR>=10 && NR<=20',
      '/def _infer/,/^[[:space:]]*def |^[[:space:]]*@/',
      '{sum+=$3} END {printf "%d\\n", sum}',
      'length($0) > 120 {print FILENAME": "FNR}',
      '$1 == "x" || $2 > 3',
    ])
      expect(judgeAwkProgram(program), program).toEqual(none);
  });

  it('system, pipes and gawk directives run what the rules cannot see', () => {
    expect(judgeAwkProgram('BEGIN{system("id")}').hidden).toEqual(["awk's system(), which runs a command"]);
    expect(judgeAwkProgram('BEGIN{"id" | getline x}').hidden).toEqual(['an awk pipe to or from a command']);
    expect(judgeAwkProgram('{print | "sh"}').hidden).toEqual(['an awk pipe to or from a command']);
    expect(judgeAwkProgram('@load "x"').hidden).toHaveLength(1);
    // A | in a program that prints is judged a pipe even in a regular expression (which / starts one depends on awk's grammar).
    expect(judgeAwkProgram('/a|b/ {print}').hidden).toHaveLength(1);
  });

  it('getline < FILE and print > FILE name files known only when it runs', () => {
    expect(judgeAwkProgram('{getline l < "/etc/shadow"}').unknownPaths).toHaveLength(1);
    expect(judgeAwkProgram('{print $1 > "out"}').unknownPaths).toHaveLength(1);
    // A > in a string, or in parentheses, is no redirection.
    expect(judgeAwkProgram('{print "a > b"; print ($1 > 2)}').unknownPaths).toEqual([]);
  });
});
