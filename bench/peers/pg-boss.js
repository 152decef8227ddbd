'use strict';
// One drain of pg-boss on PostgreSQL (see README.md):
//   node pg-boss.js --url URL --workers N --batch N --rows N [--config poll-100ms]
// Seeds ROWS no-op jobs with its bulk insert into a schema of this run's own, starts WORKERS
// workers (one work() each) fetching BATCH jobs at a time, and waits until every job is in state
// completed; prints one JSON line. pg-boss 9 runs each worker as a loop that fetches, runs the
// handler, completes, then waits out the rest of newJobCheckInterval before its next fetch: the
// config sets that interval to 100 ms, the least pg-boss accepts (its default is 2 s).

const common = require('./common');
const { runSchema, observer } = require('./postgres');

const CONFIGS = { 'poll-100ms': { newJobCheckInterval: 100 } };

common.run('pg-boss', { sqlite: false }, async (opts) => {
  const config = opts.config || 'poll-100ms';
  if (!CONFIGS[config]) common.fail(`--config is one of ${Object.keys(CONFIGS).join(', ')}`);

  const mods = common.modules(opts);
  const PgBoss = mods.load('pg-boss');
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
    ...CONFIGS[config],
  });
  boss.on('error', (e) => common.log(`[error] ${e && e.message ? e.message : e}`));
  let stopped = false;
  const stop = () => {
    if (stopped) return undefined;
    stopped = true;
    const done = new Promise((resolve) => boss.once('stopped', resolve));
    return common.within(15000, boss.stop({ graceful: true, destroy: true, timeout: 5000 }).then(() => done), 'stopping pg-boss');
  };
  common.onCleanup(stop);
  await boss.start(); // creates the schema (untimed)

  const jobs = [];
  for (let i = 0; i < opts.rows; i++) jobs.push({ name: common.QUEUE, data: common.payload(i) });
  let t = common.monoS();
  await boss.insert(jobs);
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

  // The drain: from the first work() until every job is completed. Batch 1 is work()'s plain
  // form (a handler per job, completed on its own); a larger batch is its batchSize form (the
  // handler gets the array, completed in one statement).
  const cpu0 = common.cpuUs();
  t = common.monoS();
  for (let w = 0; w < opts.workers; w++) {
    if (opts.batch === 1) {
      await boss.work(common.QUEUE, {}, async (job) => seen.see(job.data));
    } else {
      await boss.work(common.QUEUE, { batchSize: opts.batch }, async (batch) => {
        for (const job of batch) seen.see(job.data);
      });
    }
  }
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
