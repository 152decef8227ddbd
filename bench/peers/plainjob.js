'use strict';
// One drain of plainjob on SQLite (see README.md):
//   node plainjob.js --path FILE --workers N --batch 1 --rows N [--config defaults]
// Creates a fresh database beside FILE with this process's id in its name (FILE = dir/q.db gives
// dir/q-PID.db), seeds ROWS no-op jobs with plainjob's addMany, then runs WORKERS worker
// processes (plainjob's own way to run workers side by side: better-sqlite3 is synchronous, so
// workers in one process would only take turns) until every job is done; prints one JSON line.
// plainjob sets WAL and synchronous=NORMAL (and busy_timeout 5000) on every connection itself.

const fs = require('fs');
const path = require('path');
const { fork } = require('child_process');
const common = require('./common');

common.run('plainjob', { sqlite: true }, async (opts) => {
  const config = opts.config || 'defaults';
  if (config !== 'defaults') common.fail('--config is defaults (plainjob has no other)');
  if (opts.batch !== 1) common.fail('plainjob claims and completes one job at a time: --batch 1 only');

  const mods = common.modules(opts);
  const { better, defineQueue, JobStatus } = await mods.importESM('plainjob');
  const Database = mods.load('better-sqlite3');
  const version = mods.version('plainjob');

  const given = path.resolve(opts.path);
  const ext = path.extname(given);
  const file = `${given.slice(0, given.length - ext.length)}-${process.pid}${ext || '.db'}`;
  const files = [file, `${file}-wal`, `${file}-shm`, `${file}-journal`];
  for (const f of files) if (fs.existsSync(f)) common.fail(`${f} exists already (left by a killed run?); remove it by hand`);
  common.onCleanup(() => {
    for (const f of files) fs.rmSync(f, { force: true });
  });

  common.checkpoint();
  const logger = quietLogger();
  // Seed: the tables (untimed), then every job in one addMany call, one transaction (timed).
  // The identity serializer stores each 64-byte payload string as it is.
  const queue = defineQueue({ connection: better(new Database(file)), logger, serializer: (d) => d });
  let closed = false;
  common.onCleanup(() => (closed ? undefined : queue.close()));
  const payloads = [];
  for (let i = 0; i < opts.rows; i++) payloads.push(common.payload(i));
  let t = common.monoS();
  queue.addMany(common.QUEUE, payloads);
  const insertS = common.monoS() - t;
  const seeded = queue.countJobs({ type: common.QUEUE, status: JobStatus.Pending });
  if (seeded !== opts.rows) common.fail(`seeded ${seeded} jobs, not ${opts.rows}`);
  const describe = () =>
    ['Pending', 'Processing', 'Done', 'Failed'].map((s) => `${s.toLowerCase()} ${queue.countJobs({ status: JobStatus[s] })}`).join(', ');
  common.log(`${file}: ${opts.rows} jobs seeded in ${insertS.toFixed(3)} s; draining with ${opts.workers} worker processes`);

  common.checkpoint();
  // The workers: each connects and defines its queue and worker, says ready, starts on "go",
  // and reports once it finds no job left (what it handled and completed, and its CPU time).
  const children = [];
  const exited = [];
  let failure = null;
  let settle = () => {};
  const interrupt = (e) => {
    if (!failure) failure = e;
    settle();
  };
  common.onCleanup(() => stopChildren(children, exited));
  for (let w = 0; w < opts.workers; w++) {
    const child = fork(path.join(__dirname, 'plainjob-child.js'), [file, mods.dir], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const state = { child, ready: false, idle: null };
    children.push(state);
    exited.push(new Promise((resolve) => child.once('exit', resolve)));
    child.on('message', (m) => {
      if (m.type === 'ready') state.ready = true;
      else if (m.type === 'idle') state.idle = m;
      else if (m.type === 'error') interrupt(new Error(`worker process ${w}: ${m.message}`));
      settle();
    });
    child.once('exit', (code, sig) => {
      state.exitedEarly = state.idle === null;
      if (state.exitedEarly) interrupt(new Error(`worker process ${w} exited (${sig || code}) before the drain ended`));
    });
  }
  const waitFor = async (cond, what, timeoutS) => {
    const deadline = common.monoS() + timeoutS;
    while (!cond()) {
      if (failure) common.fail(failure.message);
      if (common.monoS() > deadline) common.fail(`${what} within ${timeoutS} s; ${describe()}`);
      let timer;
      await new Promise((resolve) => {
        settle = resolve;
        timer = setTimeout(resolve, 1000);
      });
      clearTimeout(timer);
    }
    if (failure) common.fail(failure.message);
  };
  await waitFor(() => children.every((c) => c.ready), 'the worker processes were not ready', 60);

  common.checkpoint();
  // The drain: from "go" until every worker process found no job left.
  const cpu0 = common.cpuUs();
  t = common.monoS();
  for (const c of children) c.child.send({ type: 'go' });
  let lastPending = -1;
  let lastMove = common.monoS();
  await waitFor(() => {
    if (children.every((c) => c.idle)) return true;
    // Stalled: the pending count has not moved for STALL_S seconds.
    const pending = queue.countJobs({ status: JobStatus.Pending });
    if (pending !== lastPending) [lastPending, lastMove] = [pending, common.monoS()];
    else if (common.monoS() - lastMove > common.STALL_S) common.fail(`no job claimed for ${common.STALL_S} s; ${describe()}`);
    return false;
  }, 'the drain did not end', 24 * 3600);
  const seconds = common.monoS() - t;
  let cpu = common.cpuUs() - cpu0;

  let handled = 0;
  let done = 0;
  let bad = 0;
  let failed = 0;
  for (const c of children) {
    failed += c.idle.failed;
    handled += c.idle.handled;
    done += c.idle.done;
    bad += c.idle.badPayloads;
    cpu += c.idle.cpuUs;
  }
  for (const c of children) c.child.send({ type: 'stop' });
  await common.within(15000, Promise.all(exited), 'stopping the worker processes');
  if (handled !== opts.rows || done !== opts.rows || failed || bad)
    common.fail(`the handler ran ${handled} times for ${opts.rows} jobs, ${done} completed, ${failed} failed, ${bad} without their ${common.PAYLOAD_LEN}-byte payload; ${describe()}`);
  const inDb = queue.countJobs({ type: common.QUEUE, status: JobStatus.Done });
  const all = queue.countJobs({ type: common.QUEUE });
  if (inDb !== opts.rows || all !== opts.rows) common.fail(`the database holds ${inDb} done jobs of ${all}, not ${opts.rows}; ${describe()}`);
  closed = true;
  queue.close();

  return {
    db: 'sqlite',
    side: 'plainjob',
    config,
    workers: opts.workers,
    batch: opts.batch,
    rows: opts.rows,
    seconds: common.r3(seconds),
    msgs_per_s: common.r1(opts.rows / seconds),
    client_cpu_us_per_row: common.r1(cpu / opts.rows),
    insert_rows_per_s: common.r1(opts.rows / insertS),
    version,
  };
});

// plainjob logs each job at debug level through its logger (console by default, on stdout):
// its warnings and errors go to stderr, the rest nowhere.
function quietLogger() {
  const none = () => {};
  return {
    error: (...a) => common.log('[error]', ...a),
    warn: (...a) => common.log('[warning]', ...a),
    info: none,
    debug: none,
  };
}

// Asks every worker process still running to stop, then ends those that do not within 5 s.
async function stopChildren(children, exited) {
  for (const c of children) {
    if (c.child.exitCode === null && c.child.signalCode === null && c.child.connected) c.child.send({ type: 'stop' });
  }
  try {
    await common.within(5000, Promise.all(exited), 'stopping the worker processes');
  } catch (e) {
    for (const c of children) if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL');
    await Promise.all(exited);
    throw e;
  }
}
