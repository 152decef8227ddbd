// Checks what a generated AsyncAPI document says, beyond its validity:
//   node check.mjs DOC EXPECT.json [--server ID PROTOCOL HOST PATHNAME|-]... [--absent TEXT]...
// - channels and operations: exactly the keys of EXPECT.json's, each holding at least what
//   EXPECT.json gives for it (a deep subset: every member and element given, equal);
// - servers: exactly the ids given by --server, each with that protocol, host and pathname ('-':
//   none), and nothing but host, pathname, protocol, title and description;
// - every operation's channel is a channel of the document and its messages are that channel's;
// - no --absent text anywhere in the document's text (passwords, user names, options, paths).
// Exit 0 when all holds; 1 with one line per failure.
import { readFileSync } from 'node:fs';

const args = process.argv.slice(2);
const text = readFileSync(args[0], 'utf8');
const doc = JSON.parse(text);
const expect = JSON.parse(readFileSync(args[1], 'utf8'));
const servers = {};
const absent = [];
for (let i = 2; i < args.length; i++) {
  if (args[i] === '--server') {
    const [id, protocol, host, pathname] = args.slice(i + 1, i + 5);
    servers[id] = { protocol, host, pathname: pathname === '-' ? undefined : pathname };
    i += 4;
  } else if (args[i] === '--absent') absent.push(args[++i]);
  else throw new Error(`unknown argument ${args[i]}`);
}

const failures = [];
const fail = (what) => failures.push(what);
const subset = (want, got) => {
  if (want === null || typeof want !== 'object') return want === got;
  if (got === null || typeof got !== 'object' || Array.isArray(want) !== Array.isArray(got))
    return false;
  return Object.keys(want).every((k) => subset(want[k], got[k]));
};
const sameKeys = (what, want, got) => {
  const w = Object.keys(want ?? {}).sort().join(', ');
  const g = Object.keys(got ?? {}).sort().join(', ');
  if (w !== g) fail(`${what}: expected {${w}}, the document has {${g}}`);
};

for (const part of ['channels', 'operations']) {
  sameKeys(part, expect[part], doc[part]);
  for (const [id, want] of Object.entries(expect[part] ?? {}))
    if (doc[part]?.[id] && !subset(want, doc[part][id]))
      fail(`${part}.${id}: expected at least ${JSON.stringify(want)}, the document has ` +
           JSON.stringify(doc[part][id]));
}
sameKeys('servers', servers, doc.servers);
for (const [id, want] of Object.entries(servers)) {
  const got = doc.servers?.[id];
  if (!got) continue;
  for (const k of ['protocol', 'host', 'pathname'])
    if (got[k] !== want[k]) fail(`servers.${id}.${k}: expected ${want[k]}, got ${got[k]}`);
  const extra = Object.keys(got).filter(
    (k) => !['host', 'pathname', 'protocol', 'title', 'description'].includes(k));
  if (extra.length) fail(`servers.${id}: members beyond where the server is: ${extra.join(', ')}`);
}
for (const [id, op] of Object.entries(doc.operations ?? {})) {
  const ref = op.channel?.$ref ?? '';
  const channel = ref.replace(/^#\/channels\//, '');
  if (!ref.startsWith('#/channels/') || !doc.channels?.[channel])
    fail(`operations.${id}: its channel ${ref} is not in the document`);
  for (const m of op.messages ?? []) {
    const [, c, , name] = (m.$ref ?? '').match(/^#\/channels\/([^/]+)\/(messages)\/([^/]+)$/) ?? [];
    if (c !== channel || !doc.channels?.[c]?.messages?.[name])
      fail(`operations.${id}: its message ${m.$ref} is not one of its channel's`);
  }
}
for (const a of absent)
  if (text.includes(a)) fail(`the document holds ${JSON.stringify(a)}, which it must never hold`);

for (const f of failures) console.log(`${args[0]}: ${f}`);
process.exit(failures.length ? 1 : 0);
