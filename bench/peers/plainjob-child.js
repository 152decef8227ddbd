'use strict';
// One worker process of plainjob.js: node plainjob-child.js FILE MODULES_DIR, driven over IPC.
// It connects and defines plainjob's queue and worker, says "ready", starts the worker on "go",
// reports "idle" (jobs handled, completed and failed, CPU time since "go") the first time a claim finds
// no job left, and stops on "stop", SIGINT or SIGTERM.

const path = require('path');
const { createRequire } = require('module');
const { pathToFileURL } = require('url');

const PAYLOAD_LEN = 64;
const QUEUE = 'bench';
const [file, modulesDir] = process.argv.slice(2);
const say = (m) => process.connected && process.send(m);

async function main() {
  const req = createRequire(path.join(modulesDir, 'noop.js'));
  const { better, defineQueue, defineWorker } = await import(pathToFileURL(req.resolve('plainjob')).href);
  const Database = req('better-sqlite3');
  const none = () => {};
  const logger = {
    error: (...a) => process.stderr.write(`plainjob worker ${process.pid}: [error] ${a.join(' ')}\n`),
    warn: (...a) => process.stderr.write(`plainjob worker ${process.pid}: [warning] ${a.join(' ')}\n`),
    info: none,
    debug: none,
  };
  const queue = defineQueue({ connection: better(new Database(file)), logger, serializer: (d) => d });

  let handled = 0;
  let done = 0;
  let badPayloads = 0;
  let failed = 0;
  let cpu0 = null;
  let reported = false;
  // Observes the worker's claims: the first that finds nothing ends this process's drain.
  const claim = queue.getAndMarkJobAsProcessing;
  queue.getAndMarkJobAsProcessing = (type) => {
    const got = claim(type);
    if (!got && !reported) {
      reported = true;
      const u = process.cpuUsage();
      say({ type: 'idle', handled, done, failed, badPayloads, cpuUs: u.user + u.system - cpu0 });
    }
    return got;
  };
  const worker = defineWorker(
    QUEUE,
    async (job) => {
      handled++;
      if (typeof job.data !== 'string' || job.data.length !== PAYLOAD_LEN) badPayloads++;
    },
    { queue, logger, onCompleted: () => done++, onFailed: () => failed++ },
  );

  let stopping = null;
  const stop = () => {
    if (!stopping) {
      stopping = (async () => {
        await worker.stop();
        queue.close();
        process.disconnect && process.connected && process.disconnect();
      })().catch((e) => {
        process.stderr.write(`plainjob worker ${process.pid}: ${e.stack || e}\n`);
        process.exit(1);
      });
    }
    return stopping;
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  process.on('disconnect', stop); // the parent went away
  process.on('message', (m) => {
    if (m.type === 'go') {
      const u = process.cpuUsage();
      cpu0 = u.user + u.system;
      worker.start().catch((e) => {
        say({ type: 'error', message: String(e && e.message ? e.message : e) });
        stop();
      });
    } else if (m.type === 'stop') {
      stop();
    }
  });
  say({ type: 'ready' });
}

main().catch((e) => {
  say({ type: 'error', message: String(e && e.stack ? e.stack : e) });
  process.exit(1);
});
