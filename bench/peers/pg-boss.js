'use strict';
// One drain of pg-boss on PostgreSQL (see README.md):
//   node pg-boss.js --url URL --workers N --batch N --rows N [--config defaults|burst]
// Seeds ROWS no-op jobs with its bulk insert into a schema of this run's own, starts one work()
// with WORKERS workers (localConcurrency) fetching BATCH jobs at a time, and waits until every
// job is in state completed; prints one JSON line.
//   defaults: batch 1, nothing else set: each worker fetches one job, then waits out the rest of
//             the 2 s polling interval before its next fetch.
//   burst:    batchSize BATCH, burstWhenBatchFull (a worker fetches again at once while its
//             fetches come back full) and pollingIntervalSeconds 0.5, the least pg-boss accepts
//             (the wait once a fetch comes back short).

const common = require('./common');
const { runSchema, observer } = require('./postgres');

const CONFIGS = {
  defaults: () => ({}),
  burst: (batch) => ({ batchSize: batch, burstWhenBatchFull: true, pollingIntervalSeconds: 0.5 }),
};

common.run('pg-boss', { sqlite: false }, async (opts) => {
  const config = opts.config || (opts.batch > 1 ? 'burst' : 'defaults');
  if (!CONFIGS[config]) common.fail(`--config is one of ${Object.keys(CONFIGS).join(', ')}`);
  if (config === 'defaults' && opts.batch !== 1) common.fail('--config defaults runs with --batch 1');
  // burstWhenBatchFull is ignored at batch 1 (every fetch that finds a job is "full").
  if (config === 'burst' && opts.batch < 2) common.fail('--config burst needs --batch 2 or more');

  const mods = common.modules(opts);
  // pg-boss 12 is an ES module that exports the class by name.
  const { PgBoss } = await mods.importESM('pg-boss');
  const pg = mods.load('pg');
  const version = mods.version('pg-boss');
  const schema = runSchema('tabq_peer_pgboss');
  const obs = await observer(pg, opts.url, schema);
  const jobTable = `${obs.escapeIdentifier(schema)}.job`;

  common.checkpoint();
  const boss = new PgBoss({
    connectionString: opts.url,
    schema,
    // node-postgres's default pool is 10; it grows with the workers (as tabq's: workers + 2).
    max: Math.max(10, opts.workers + 2),
  });
  boss.on('error', (e) => common.log(`[error] ${e && e.message ? e.message : e}`));
  let stopped = false;
  const stop = () => {
    if (stopped) return undefined;
    stopped = true;
    return common.within(15000, boss.stop({ graceful: true, close: true, timeout: 5000 }), 'stopping pg-boss');
  };
  common.onCleanup(stop);
  await boss.start(); // creates the schema (untimed)
  await boss.createQueue(common.QUEUE); // a queue must exist before jobs go in (standard policy)

  const jobs = [];
  for (let i = 0; i < opts.rows; i++) jobs.push({ data: common.payload(i) });
  let t = common.monoS();
  await boss.insert(common.QUEUE, jobs);
  const insertS = common.monoS() - t;
  const seeded = await obs.count(`SELECT count(*) AS n FROM ${jobTable} WHERE name = $1 AND state = 'created'`, [common.QUEUE]);
  if (seeded !== opts.rows) common.fail(`seeded ${seeded} jobs, not ${opts.rows}`);
  common.log(`${schema}: ${opts.rows} jobs seeded in ${insertS.toFixed(3)} s; draining with ${opts.workers} workers, batch ${opts.batch}, ${config}`);

  common.checkpoint();
  const seen = common.tally(opts.rows);
  const states = async () =>
    (await obs.query(`SELECT state, count(*) AS n FROM ${jobTable} WHERE name = $1 GROUP BY state ORDER BY state`, [common.QUEUE]))
      .rows.map((r) => `${r.state} ${r.n}`).join(', ');
  const describe = async () => `${seen.handled} handled; jobs by state: ${await states()}`;
  // Every job completed; a job in any state past active but completed fails the run at once.
  const drained = async () => {
    const r = (await obs.query(
      `SELECT count(*) FILTER (WHERE state = 'completed') AS completed,
              count(*) FILTER (WHERE state NOT IN ('created', 'active', 'completed')) AS failed
         FROM ${jobTable} WHERE name = $1`, [common.QUEUE])).rows[0];
    if (Number(r.failed)) common.fail(`${r.failed} jobs did not complete; ${await describe()}`);
    return Number(r.completed) === opts.rows;
  };

  // The drain: from work() until every job is completed. The handler gets an array (of one job at
  // batch 1); returning completes them all in one statement.
  const cpu0 = common.cpuUs();
  t = common.monoS();
  await boss.work(common.QUEUE, { localConcurrency: opts.workers, ...CONFIGS[config](opts.batch) }, async (batch) => {
    for (const job of batch) seen.see(job.data);
  });
  await seen.wait(describe);
  await common.until(drained, describe);
  const seconds = common.monoS() - t;
  const cpu = common.cpuUs() - cpu0;

  if (seen.handled !== opts.rows || seen.badPayloads)
    common.fail(`the handler ran ${seen.handled} times for ${opts.rows} jobs, ${seen.badPayloads} without their ${common.PAYLOAD_LEN}-byte payload`);
  const all = await obs.count(`SELECT count(*) AS n FROM ${jobTable} WHERE name = $1`, [common.QUEUE]);
  if (all !== opts.rows) common.fail(`the queue holds ${all} jobs, not ${opts.rows}; ${await describe()}`);
  await stop();

  return {
    db: 'postgres',
    side: 'pg-boss',
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
