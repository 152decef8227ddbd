'use strict';
// The script's own PostgreSQL connection beside the library's pool: it makes sure the run's
// schema is new, counts the jobs in it, and drops it at the end, also after a failure or a signal.

const common = require('./common');

// A schema of this run's own: PREFIX_PID.
const runSchema = (prefix) => `${prefix}_${process.pid}`;

async function observer(pg, url, schema) {
  const client = new pg.Client({ connectionString: url, application_name: `${schema} observer` });
  client.on('error', (e) => common.log(`observer connection: ${e.message}`));
  await client.connect();
  const found = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
  if (found.rowCount > 0) {
    await client.end();
    common.fail(`schema ${schema} exists already (left by a killed run?); drop it by hand`);
  }
  common.onCleanup(async () => {
    try {
      // A library connection that did not stop may still hold a lock: wait for it, not forever.
      await client.query("SET lock_timeout = '10s'");
      await client.query(`DROP SCHEMA IF EXISTS ${client.escapeIdentifier(schema)} CASCADE`);
    } catch (e) {
      throw new Error(`could not drop schema ${schema} (drop it by hand): ${e.message}`);
    } finally {
      await client.end().catch(() => {});
    }
  });
  // One number from a query.
  client.count = async (sql, params) => Number((await client.query(sql, params)).rows[0].n);
  return client;
}

module.exports = { runSchema, observer };
