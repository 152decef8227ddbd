'use strict';
// One drain of graphile-worker on PostgreSQL (see README.md):
//   node graphile-worker.js --url URL --workers N --batch N --rows N
//                           [--config defaults|batched|local-queue-500]
// Seeds ROWS no-op jobs with its bulk addJobs into a schema of this run's own, runs one worker
// pool of WORKERS concurrent jobs until the jobs table is empty, prints one JSON line.
//   defaults: batch 1, every job fetched and completed on its own (the library's defaults);
//   batched:  localQueue of size BATCH (50 by default), completeJobBatchDelay 0 and
//             failJobBatchDelay 0: the batching options of graphile-worker's performance page,
//             the pool claiming as many jobs at once as tabq's batch;
//   local-queue-500: the same with localQueue of size 500, the configuration of that page's
//             quick stats (its fastest documented); BATCH is not used.
// Every handler call gets one job, whatever the config.

// Read once, when graphile-worker loads: no log line built for every completed job.
process.env.NO_LOG_SUCCESS = '1';

const { EventEmitter } = require('events');
const common = require('./common');
const { runSchema, observer } = require('./postgres');

const CONFIGS = ['defaults', 'batched', 'local-queue-500'];

common.run('graphile-worker', { sqlite: false }, async (opts) => {
  const config = opts.config || (opts.batch > 1 ? 'batched' : 'defaults');
  if (!CONFIGS.includes(config)) common.fail(`--config is one of ${CONFIGS.join(', ')}`);
  if (config === 'defaults' && opts.batch !== 1) common.fail('--config defaults runs with --batch 1');
  if (config === 'batched' && opts.batch < 2) common.fail('--config batched needs --batch 2 or more');

  const mods = common.modules(opts);
  const gw = mods.load('graphile-worker');
  const pg = mods.load('pg');
  const version = mods.version('graphile-worker');
  const schema = runSchema('tabq_peer_graphile');
  const obs = await observer(pg, opts.url, schema);
  const jobsTable = `${obs.escapeIdentifier(schema)}._private_jobs`;

  // The library's own warnings and errors go to stderr; its info and debug lines nowhere.
  common.checkpoint();
  const logger = new gw.Logger(() => (level, message) => {
    if (level === 'error' || level === 'warning') common.log(`[${level}] ${message}`);
  });
  // node-postgres's default pool is 10; a pool smaller than the concurrency makes workers wait
  // for a connection, so it grows with the workers (as tabq's does: workers + 2, at least 8).
  const shared = {
    connectionString: opts.url,
    schema,
    logger,
    maxPoolSize: Math.max(10, opts.workers + 2),
  };
  const batching = (size) => ({ localQueue: { size }, completeJobBatchDelay: 0, failJobBatchDelay: 0 });
  const preset = {
    worker: { defaults: {}, batched: batching(opts.batch), 'local-queue-500': batching(500) }[config],
  };

  // Seed: the schema (migrations, untimed), then every job in one addJobs call (timed).
  const utils = await gw.makeWorkerUtils(shared);
  let released = false;
  common.onCleanup(() => (released ? undefined : utils.release()));
  await utils.migrate();
  const specs = [];
  for (let i = 0; i < opts.rows; i++) specs.push({ identifier: common.QUEUE, payload: common.payload(i) });
  let t = common.monoS();
  await utils.addJobs(specs);
  const insertS = common.monoS() - t;
  released = true;
  await utils.release();
  const seeded = await obs.count(`SELECT count(*) AS n FROM ${jobsTable}`);
  if (seeded !== opts.rows) common.fail(`seeded ${seeded} jobs, not ${opts.rows}`);
  common.log(`${schema}: ${opts.rows} jobs seeded in ${insertS.toFixed(3)} s; draining with ${opts.workers} workers, ${config}`);

  common.checkpoint();
  const seen = common.tally(opts.rows);
  const describe = async () => {
    const r = (await obs.query(
      `SELECT count(*) AS left, count(*) FILTER (WHERE last_error IS NOT NULL) AS failed FROM ${jobsTable}`)).rows[0];
    return `${seen.handled} handled, ${r.left} jobs left in the table, ${r.failed} of them failed`;
  };
  const left = () => obs.count(`SELECT count(*) AS n FROM ${jobsTable}`);
  // A job that throws is retried later: one error fails the run, with its message.
  const events = new EventEmitter();
  let jobErrors = 0;
  events.on('job:error', ({ error }) => {
    if (jobErrors++ === 0) common.log(`a job failed: ${error && error.message ? error.message : error}`);
  });
  // graphile-worker's LISTEN channels are not per schema: when another graphile-worker creates
  // or migrates its schema in the same database, this pool hears "worker:migrate" and shuts down.
  let stopping = false;
  events.on('pool:gracefulShutdown', ({ message }) => {
    if (!stopping)
      seen.abort(`graphile-worker shut down by itself (${message}); another graphile-worker migrating a schema ` +
        'in the same database does that (its NOTIFY channels are database-wide): run one at a time per database');
  });
  const drained = async () => {
    if (jobErrors) common.fail(`${jobErrors} job runs failed; ${await describe()}`);
    return (await left()) === 0;
  };

  // The drain: from starting the pool until the table is empty (completed jobs are deleted).
  const cpu0 = common.cpuUs();
  t = common.monoS();
  const runner = await gw.run({
    ...shared,
    events,
    concurrency: opts.workers,
    noHandleSignals: true,
    taskList: { [common.QUEUE]: async (p) => seen.see(p) },
    preset,
  });
  let stopped = false;
  common.onCleanup(() => {
    if (stopped) return undefined;
    stopping = true;
    return common.within(15000, runner.stop(), 'stopping graphile-worker');
  });
  await seen.wait(describe);
  await common.until(drained, describe);
  const seconds = common.monoS() - t;
  const cpu = common.cpuUs() - cpu0;

  stopping = true;
  await common.within(15000, runner.stop(), 'stopping graphile-worker');
  stopped = true;
  if (jobErrors) common.fail(`${jobErrors} job runs failed; ${await describe()}`);
  if (seen.handled !== opts.rows || seen.badPayloads)
    common.fail(`the handler ran ${seen.handled} times for ${opts.rows} jobs, ${seen.badPayloads} without their ${common.PAYLOAD_LEN}-byte payload`);
  const n = await left();
  if (n !== 0) common.fail(`${n} jobs left after the drain; ${await describe()}`);

  return {
    db: 'postgres',
    side: 'graphile-worker',
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
