// Validates AsyncAPI documents with the official parser (@asyncapi/parser, installed by
// test_asyncapi.sh into PARSER_DIR): each must parse, with no error and no warning among the
// parser's diagnostics (its rule sets included). Prints every diagnostic of a file it refuses.
//   node validate.mjs PARSER_DIR FILE...   exit 0: every file valid; 1: one is not
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import path from 'node:path';

const [dir, ...files] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(dir), 'package.json'));
const { Parser, DiagnosticSeverity } = require('@asyncapi/parser');
const parser = new Parser();
let failed = false;
for (const file of files) {
  const { document, diagnostics } = await parser.parse(readFileSync(file, 'utf8'));
  const serious = diagnostics.filter(
    (d) => d.severity === DiagnosticSeverity.Error || d.severity === DiagnosticSeverity.Warning);
  const ok = document !== undefined && serious.length === 0;
  console.log(`${ok ? 'valid' : 'INVALID'}: ${file}`);
  for (const d of serious.length ? diagnostics : []) {
    const level = ['error', 'warning', 'info', 'hint'][d.severity] ?? d.severity;
    console.log(`  ${level} ${d.code} at ${d.path.join('.') || '(root)'}: ${d.message}`);
  }
  failed ||= !ok;
}
process.exit(failed ? 1 : 0);
