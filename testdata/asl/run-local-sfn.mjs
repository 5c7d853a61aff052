// Runs the conformance corpus through npm aws-local-stepfunctions (the
// differential oracle for internal/twin/asl). Lambda tasks are overridden with the
// same deterministic functions as internal/twin/asl/corpus_test.go; waits and
// retry pauses are overridden to zero.
//
//   node run-local-sfn.mjs <module.js> <case.json>...        one JSON line per case
//   node run-local-sfn.mjs <module.js> --bench N [--warmup W] <case.json>
//                                                            W untimed executions (default N),
//                                                            then N timed ones; prints timing
//   node run-local-sfn.mjs <module.js> --serve W <case.json> W untimed executions, then for each
//                                                            line N on stdin, N timed ones and
//                                                            a timing line; ends at end of input

// aws-local-stepfunctions 3.0.0 calls Promise.withResolvers (Node >= 22); Node 20 lacks it.
if (!Promise.withResolvers) {
  Promise.withResolvers = function () {
    let resolve, reject;
    const promise = new Promise((res, rej) => { resolve = res; reject = rej; });
    return { promise, resolve, reject };
  };
}

import { readFileSync } from 'node:fs';
import { basename } from 'node:path';

const [modulePath, ...rest] = process.argv.slice(2);
const { StateMachine } = await import(modulePath);

function makeFunctions() {
  const calls = new Map();
  const fail = (name, msg) => { const e = new Error(msg); e.name = name; return e; };
  return {
    echo: async (p) => p,
    add: async (p) => ({ sum: (p.a ?? 0) + (p.b ?? 0) }),
    double: async (n) => n * 2,
    greet: async (p) => ({ greeting: `Hello, ${p.name}!` }),
    fail: async (p) => { throw fail(p.errorType || 'CustomError', p.message || 'failed on purpose'); },
    flaky: async (p) => {
      const n = (calls.get(p.key) ?? 0) + 1;
      calls.set(p.key, n);
      if (n <= (p.failures ?? 0)) throw fail('Transient', `attempt ${n} failed`);
      return { attempts: n };
    },
  };
}

// overridesFor walks every state (branches and Map processors included).
function overridesFor(definition, fns) {
  const taskResourceLocalHandlers = {}, waitTimeOverrides = {}, retryIntervalOverrides = {};
  const walk = (block) => {
    for (const [name, st] of Object.entries(block.States ?? {})) {
      if (st.Type === 'Task') {
        const m = /:function:([^:]+)/.exec(st.Resource ?? '');
        const fn = m && fns[m[1]];
        taskResourceLocalHandlers[name] = fn ?? (async () => { throw Object.assign(new Error('Function not found'), { name: 'Lambda.ResourceNotFoundException' }); });
      }
      if (st.Type === 'Wait') waitTimeOverrides[name] = 0;
      if (st.Retry) retryIntervalOverrides[name] = 0;
      for (const b of st.Branches ?? []) walk(b);
      if (st.ItemProcessor) walk(st.ItemProcessor);
      if (st.Iterator) walk(st.Iterator);
    }
  };
  walk(definition);
  return { taskResourceLocalHandlers, waitTimeOverrides, retryIntervalOverrides };
}

async function runOnce(c) {
  const sm = new StateMachine(c.definition, { validationOptions: { checkArn: true, checkPaths: true } });
  const exec = sm.run(c.input, { overrides: overridesFor(c.definition, makeFunctions()) });
  try {
    return { status: 'SUCCEEDED', output: await exec.result };
  } catch (e) {
    const cause = e.cause ?? e;
    return { status: 'FAILED', error: cause.name, cause: cause.message };
  }
}

// timedRuns runs the bench case n times, one after another, and reports their elapsed time
// and the process's CPU time (all its threads) meanwhile.
async function timedRuns(runBench, n) {
  const cpu = process.cpuUsage();
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await runBench();
  const ns = Number(process.hrtime.bigint() - start);
  const used = process.cpuUsage(cpu);
  return { executions: n, ns, cpuNs: (used.user + used.system) * 1000 };
}

if (rest[0] === '--serve') {
  const warmup = Number(rest[1]);
  const c = JSON.parse(readFileSync(rest[2], 'utf8'));
  const sm = new StateMachine(c.definition, { validationOptions: { checkArn: true, checkPaths: true } });
  const runBench = () => sm.run(c.input, { overrides: overridesFor(c.definition, makeFunctions()) }).result;
  for (let i = 0; i < warmup; i++) await runBench();
  console.log(JSON.stringify({ ready: true }));
  const { createInterface } = await import('node:readline');
  for await (const line of createInterface({ input: process.stdin })) {
    console.log(JSON.stringify(await timedRuns(runBench, Number(line))));
  }
} else if (rest[0] === '--bench') {
  // The state machine is built (and validated) once, as the Go benchmark parses once.
  const n = Number(rest[1]);
  let warmup = n, file = rest[2];
  if (rest[2] === '--warmup') {
    warmup = Number(rest[3]);
    file = rest[4];
  }
  const c = JSON.parse(readFileSync(file, 'utf8'));
  const sm = new StateMachine(c.definition, { validationOptions: { checkArn: true, checkPaths: true } });
  const runBench = () => sm.run(c.input, { overrides: overridesFor(c.definition, makeFunctions()) }).result;
  // V8 compiles the hot paths only after some thousands of executions: timed from cold, the
  // engine runs at a third of its steady speed, while the Go side is timed warm.
  for (let i = 0; i < warmup; i++) await runBench();
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await runBench();
  const ns = Number(process.hrtime.bigint() - start);
  console.log(JSON.stringify({ executions: n, ns }));
} else {
  for (const file of rest) {
    const c = JSON.parse(readFileSync(file, 'utf8'));
    const name = basename(file, '.json');
    let res;
    try {
      res = await runOnce(c);
    } catch (e) {
      res = { status: 'ERROR', error: String(e && e.message || e) };
    }
    console.log(JSON.stringify({ name, ...res }));
  }
}
