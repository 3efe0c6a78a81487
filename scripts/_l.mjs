import ts from 'typescript';
import { readFileSync } from 'node:fs';
import { execSync } from 'node:child_process';
const files = execSync('git ls-files src', { encoding: 'utf8' }).trim().split('\n').filter(f => f.endsWith('.ts'));
const max = Number(process.argv[2] ?? 80);
for (const f of files) {
  const text = readFileSync(f, 'utf8');
  const sf = ts.createSourceFile(f, text, ts.ScriptTarget.Latest, true);
  const visit = (n) => {
    if (ts.isFunctionDeclaration(n) || ts.isMethodDeclaration(n) || ts.isArrowFunction(n) || ts.isFunctionExpression(n)) {
      const a = sf.getLineAndCharacterOfPosition(n.getStart()).line, b = sf.getLineAndCharacterOfPosition(n.getEnd()).line;
      if (b - a + 1 > max) console.log(`${f}:${a+1} ${b-a+1} ${n.name?.getText?.() ?? '(anon)'}`);
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
}
