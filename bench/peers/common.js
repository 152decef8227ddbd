'use strict';
// What the peer scripts share: options, finding the installed libraries, the payload, clocks,
// the wait for a drain, cleanup on every way out, and the one JSON line on stdout.

const fs = require('fs');
const path = require('path');
const { createRequire } = require('module');
const { pathToFileURL } = require('url');

const PAYLOAD_LEN = 64;
const QUEUE = 'bench';
// A drain whose handler sees no new job for this long has stalled, and the run fails.
const STALL_S = 30;

let program = 'peer';

function log(...args) {
  process.stderr.write(`${program}: ${args.join(' ')}\n`);
}

// Ends the run with status 1 after the cleanups, the message on stderr.
function fail(message) {
  const err = new Error(message);
  err.benchFailure = true;
  throw err;
}

const usage = (sqlite) =>
  `usage: node ${program}.js ${sqlite ? '--path FILE' : '--url URL'} --workers N --batch N ` +
  '--rows N [--config NAME] [--modules DIR]';

// --name value pairs; every option must be known, and the counts whole numbers from 1.
function parseArgs(argv, { sqlite }) {
  const known = new Set(['workers', 'batch', 'rows', 'config', 'modules', sqlite ? 'path' : 'url']);
  const o = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const m = /^--([a-z]+)(?:=(.*))?$/.exec(a);
    if (!m || !known.has(m[1])) usageError(sqlite, `unknown argument ${a}`);
    let v = m[2];
    if (v === undefined) {
      if (i + 1 >= argv.length) usageError(sqlite, `${a} needs a value`);
      v = argv[++i];
    }
    o[m[1]] = v;
  }
  for (const k of ['workers', 'batch', 'rows']) {
    if (o[k] === undefined) usageError(sqlite, `--${k} is required`);
    if (!/^[1-9][0-9]*$/.test(o[k])) usageError(sqlite, `--${k} must be a whole number from 1`);
    o[k] = Number(o[k]);
  }
  const where = sqlite ? 'path' : 'url';
  if (!o[where]) usageError(sqlite, `--${where} is required`);
  return o;
}

function usageError(sqlite, message) {
  process.stderr.write(`${program}: ${message}\n${usage(sqlite)}\n`);
  process.exit(2);
}

// The installed libraries: DIR/node_modules for --modules DIR (the folder given to install.sh),
// else this folder's own node_modules (after `npm ci` here).
function modules(opts) {
  const dir = path.resolve(opts.modules || __dirname);
  const req = createRequire(path.join(dir, 'noop.js'));
  const load = (name) => {
    try {
      return req(name);
    } catch (e) {
      if (e.code === 'MODULE_NOT_FOUND' && e.message.includes(`'${name}'`))
        fail(`${name} is not installed under ${dir}/node_modules (bench/peers/install.sh DIR, then --modules DIR)`);
      throw e;
    }
  };
  // An ES module (plainjob ships only one): resolved through the same folder, then imported.
  const importESM = async (name) => {
    let file;
    try {
      file = req.resolve(name);
    } catch (e) {
      fail(`${name} is not installed under ${dir}/node_modules (bench/peers/install.sh DIR, then --modules DIR)`);
    }
    return import(pathToFileURL(file).href);
  };
  // Read from the file: a package whose "exports" leave out ./package.json (graphile-worker 0.18)
  // cannot be required for it.
  const version = (name) => {
    try {
      return JSON.parse(fs.readFileSync(path.join(dir, 'node_modules', name, 'package.json'), 'utf8')).version;
    } catch (e) {
      fail(`${name} is not installed under ${dir}/node_modules (bench/peers/install.sh DIR, then --modules DIR)`);
    }
  };
  return { dir, load, importESM, version };
}

// The i-th job's payload: 64 ASCII characters, its number first.
function payload(i) {
  const head = `job-${i}-`;
  return head + String.fromCharCode(97 + (i % 26)).repeat(PAYLOAD_LEN - head.length);
}

const monoS = () => Number(process.hrtime.bigint()) / 1e9;
// This process's CPU time (user + system), in microseconds.
const cpuUs = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

// Counts what the handler sees: jobs, and payload bytes (a job without its whole payload fails
// the run). wait() resolves once `rows` jobs were handled; it fails when no job arrives for
// STALL_S seconds, or at once after abort().
function tally(rows) {
  let resolveDone;
  let abortWith;
  const done = new Promise((r) => (resolveDone = r));
  const aborted = new Promise((r) => (abortWith = r));
  const t = {
    // Ends wait() at once with a failure: the library stopped on its own, for instance.
    abort(message) {
      abortWith(message);
    },
    handled: 0,
    badPayloads: 0,
    see(data) {
      if (typeof data !== 'string' || data.length !== PAYLOAD_LEN) t.badPayloads++;
      if (++t.handled === rows) resolveDone();
    },
    async wait(describe) {
      let seen = -1;
      for (;;) {
        let timer;
        const stalled = new Promise((r) => (timer = setTimeout(() => r(true), STALL_S * 1000)));
        const finished = await Promise.race([done.then(() => false), stalled, aborted]);
        clearTimeout(timer);
        if (typeof finished === 'string') fail(finished);
        if (!finished) return;
        if (t.handled === seen)
          fail(`no job handled for ${STALL_S} s (${t.handled} of ${rows}); ${await describe()}`);
        seen = t.handled;
      }
    },
  };
  return t;
}

// Polls check() (true once the database shows the drain complete) every `everyMs` until it
// holds, or fails after `timeoutS` with describe()'s account.
async function until(check, describe, { everyMs = 2, timeoutS = STALL_S } = {}) {
  const deadline = monoS() + timeoutS;
  for (;;) {
    if (await check()) return;
    if (monoS() > deadline) fail(`the database did not show the drain complete within ${timeoutS} s; ${await describe()}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

// Cleanups run last-registered first, once each, on the way out: success, failure, SIGINT,
// SIGTERM. One registered while they run is run too.
const cleanups = [];
let cleaning = Promise.resolve();
function onCleanup(fn) {
  cleanups.push(fn);
}
function cleanup() {
  cleaning = cleaning.then(async () => {
    while (cleanups.length) {
      const fn = cleanups.pop();
      try {
        await fn();
      } catch (e) {
        log(`cleanup: ${e && e.message ? e.message : e}`);
      }
    }
  });
  return cleaning;
}

// After SIGINT or SIGTERM the run goes no further: the scripts call this between their steps.
let interrupted = false;
function checkpoint() {
  if (interrupted) fail('interrupted');
}

// A promise that rejects after ms, for steps that must not hang the way out.
function within(ms, promise, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, rej) => (timer = setTimeout(() => rej(new Error(`${what} took over ${ms} ms`)), ms))),
  ]).finally(() => clearTimeout(timer));
}

// Exits with `code` once nothing keeps the loop alive; says what is left if something does.
function leave(code) {
  process.exitCode = code;
  setTimeout(() => {
    const handles = process._getActiveHandles ? process._getActiveHandles().map((h) => h.constructor.name) : [];
    log(`still running 10 s after the end (${handles.join(', ')}); exiting`);
    process.exit(code);
  }, 10000).unref();
}

// Runs main(opts) with cleanup on every way out. main returns the result object, printed as the
// one JSON line on stdout.
function run(name, { sqlite }, main) {
  program = name;
  const opts = parseArgs(process.argv.slice(2), { sqlite });
  for (const [sig, code] of [['SIGINT', 130], ['SIGTERM', 143]]) {
    process.on(sig, async () => {
      if (interrupted) return;
      interrupted = true;
      log(`${sig}: stopping and removing what this run created`);
      await cleanup();
      // A step that was under way may have registered one more cleanup as it ended.
      await new Promise((r) => setTimeout(r, 100));
      await cleanup();
      process.exit(code);
    });
  }
  // A library's own stray failure (an unhandled rejection while it shuts down, say) fails the
  // run but still lets the cleanups run, instead of ending the process before they did.
  let stray = null;
  const onStray = (e) => {
    log(`library error: ${stray ? (e && e.message) || e : (e && e.stack) || e}`);
    if (!stray) stray = e;
  };
  process.on('uncaughtException', onStray);
  process.on('unhandledRejection', onStray);
  main(opts)
    .then(async (result) => {
      if (stray) fail('the library failed outside the drain (above)');
      return result;
    })
    .then(async (result) => {
      await cleanup();
      if (interrupted) return;
      process.stdout.write(JSON.stringify(result) + '\n');
      leave(0);
    })
    .catch(async (e) => {
      if (interrupted) return;
      log(e && e.benchFailure ? e.message : e && e.stack ? e.stack : String(e));
      await cleanup();
      leave(1);
    });
}

// Rounds to one decimal, as the result line shows rates and costs.
const r1 = (x) => Math.round(x * 10) / 10;
const r3 = (x) => Math.round(x * 1000) / 1000;

module.exports = {
  PAYLOAD_LEN,
  QUEUE,
  STALL_S,
  log,
  fail,
  modules,
  payload,
  monoS,
  cpuUs,
  tally,
  until,
  onCleanup,
  checkpoint,
  within,
  run,
  r1,
  r3,
};
