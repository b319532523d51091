// Runs Google's own Node client libraries (REST transport) against tests/fakegcp and checks that
// every call succeeds and returns what the fake holds. Usage: node check.mjs (run.sh installs first).
// Prints one line per call and ends with "node-clients: N passed, N failed"; exits 1 on any failure.
import {spawn} from 'node:child_process';
import {randomUUID} from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {fileURLToPath} from 'node:url';
import assert from 'node:assert/strict';

import aiplatform from '@google-cloud/aiplatform';
import compute from '@google-cloud/compute';
import cloudquotas from '@google-cloud/cloudquotas';
import {GoogleAuth, JWT, gaxios} from 'google-auth-library';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const PROJECT = 'vx-node-proj';
const REGION = 'us-central1';
const ZONE = 'us-central1-a';
const SCOPES = ['https://www.googleapis.com/auth/cloud-platform'];

let passed = 0;
let failed = 0;

async function step(name, fn) {
  try {
    const detail = await fn();
    passed++;
    console.log(`ok   ${name}${detail ? ': ' + detail : ''}`);
  } catch (e) {
    failed++;
    const msg = (e && (e.stack || e.message)) || String(e);
    console.log(`FAIL ${name}: ${msg.split('\n').slice(0, 6).join(' | ')}`);
    try {   // what the fake saw last, to tell a client-side error from a fake-side one
      for (const r of (await fake('GET', '/_fake/requests?log=4')).log) {
        console.log(`       fake saw: ${r.method} ${r.path} -> ${r.status} (${r.rpc})`);
      }
    } catch { /* the fake is gone */ }
  }
}

// ---- the fake -------------------------------------------------------------------------------
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'vx-node-clients-'));
const readyFile = path.join(tmp, 'ready');
// A frozen clock: jobs stay QUEUED until the checks move it, however slow the clients are.
const fakeProc = spawn('python3', [path.join(HERE, '..', 'fakegcp.py'), '--port', '0', '--ready-file', readyFile,
  '--clock', 'frozen'],
  {stdio: ['ignore', 'inherit', 'inherit']});
let fakeExited = false;
fakeProc.on('exit', () => { fakeExited = true; });

function stopFake() {
  if (!fakeExited) fakeProc.kill('SIGTERM');
  fs.rmSync(tmp, {recursive: true, force: true});
}

async function waitReady() {
  const deadline = Date.now() + 20000;
  while (Date.now() < deadline) {
    if (fakeExited) throw new Error('fakegcp.py exited before it was ready');
    if (fs.existsSync(readyFile)) {
      const u = fs.readFileSync(readyFile, 'utf8').trim();
      if (u) return u;
    }
    await new Promise(r => setTimeout(r, 50));
  }
  throw new Error('fakegcp.py not ready after 20 s');
}

let BASE;
async function fake(method, p, body) {
  const res = await fetch(BASE + p, {method, headers: {'content-type': 'application/json'},
    body: body === undefined ? undefined : JSON.stringify(body)});
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${p}: HTTP ${res.status} ${text}`);
  return JSON.parse(text);
}
const fakeJob = async name => (await fake('GET', '/_fake/jobs')).customJobs.find(j => j.name === name);
const fakeRes = async name => (await fake('GET', '/_fake/reservations')).reservations.find(r => r.name === name);
const fakePref = async name => (await fake('GET', '/_fake/quota-preferences')).quotaPreferences.find(q => q.name === name);

// What the fake counted for an RPC name since the last reset of the counters.
const rpcCount = async rpc => (await fake('GET', '/_fake/requests')).by_rpc[rpc] || 0;

// google-gax 5 REST errors carry the HTTP status in `code` (not a google.rpc.Code) and the body
// as the message. Check both: the status, and the API's error shape (status name or compute reason).
function expectError(e, httpStatus, statusOrReason) {
  if (!e || e.code !== httpStatus) throw e;
  let body;
  try { body = JSON.parse(e.message); } catch { throw e; }
  const err = body.error || {};
  const got = err.status || (err.errors && err.errors[0] && err.errors[0].reason);
  if (got !== statusOrReason) throw new Error(`expected ${statusOrReason}, got ${got}: ${e.message}`);
}

// ---- Compute Engine future reservations (calendar mode) ---------------------------------------
// FutureReservationsClient: insert (a draft), get, list, aggregatedList, update (the submit step, and
// the count while a draft), cancel and delete, each mutation's Operation waited on.
const fakeFr = async name => (await fake('GET', '/_fake/future-reservations')).futureReservations
  .find(r => r.name === name);

async function futureReservationChecks(mkAuth, common, zoneOps) {
  const frs = new compute.v1.FutureReservationsClient({...common, auth: mkAuth()});
  const name = 'vx-node-fr-' + randomUUID().slice(0, 8);
  const at = {project: PROJECT, zone: ZONE};
  const waitOp = async op => {
    const [done] = await zoneOps.wait({...at, operation: op.latestResponse.name});
    assert.equal(done.status, 'DONE');
    assert.ok(!done.error, 'operation has an error: ' + JSON.stringify(done.error));
    return done;
  };
  // The window starts a week after the fake's (frozen) clock and lasts five days.
  const now = (await fake('POST', '/_fake/clock', {advance_seconds: 0})).epoch_seconds;
  const iso = s => new Date(s * 1000).toISOString().replace('.000Z', 'Z');
  const startTime = iso(now + 7 * 86400);

  await step('compute FutureReservations.insert (a calendar-mode draft; requestId; repeat is idempotent)', async () => {
    const req = {...at, requestId: randomUUID(), futureReservationResource: {
      name, description: 'node client check', reservationMode: 'CALENDAR', planningStatus: 'DRAFT',
      autoDeleteAutoCreatedReservations: true, specificReservationRequired: true, deploymentType: 'DENSE',
      shareSettings: {shareType: 'LOCAL'},
      timeWindow: {startTime, duration: {seconds: String(5 * 86400)}},
      specificSkuProperties: {totalCount: '2', instanceProperties: {machineType: 'a3-highgpu-8g',
        guestAccelerators: [{acceleratorType: 'nvidia-h100-80gb', acceleratorCount: 8}]}}}};
    const [op] = await frs.insert(req);
    assert.equal(op.latestResponse.operationType, 'insert');
    assert.match(op.latestResponse.targetLink, new RegExp(`/projects/${PROJECT}/zones/${ZONE}/futureReservations/${name}$`));
    const [again] = await frs.insert(req);
    assert.equal(again.latestResponse.name, op.latestResponse.name);
    await waitOp(op);
    const held = await fakeFr(name);
    assert.ok(held, 'fake does not hold the future reservation');
    assert.equal(held.status.procurementStatus, 'DRAFTING');
    return `${op.latestResponse.name} DONE; repeat -> same operation`;
  });

  await step('compute FutureReservations.get', async () => {
    const [r] = await frs.get({...at, futureReservation: name});
    const held = await fakeFr(name);
    assert.equal(r.name, name);
    assert.equal(r.id, held.id);
    assert.equal(r.reservationMode, 'CALENDAR');
    assert.equal(r.planningStatus, 'DRAFT');
    assert.equal(r.status.procurementStatus, 'DRAFTING');
    assert.equal(r.specificSkuProperties.totalCount, '2');
    assert.equal(r.specificSkuProperties.instanceProperties.guestAccelerators[0].acceleratorCount, 8);
    assert.equal(r.timeWindow.startTime, startTime);
    assert.equal(r.timeWindow.duration.seconds, String(5 * 86400));
    return `${r.name} ${r.status.procurementStatus} ${r.specificSkuProperties.totalCount} VMs`;
  });

  await step('compute FutureReservations.list (filter, orderBy, auto-paging)', async () => {
    const [items] = await frs.list({...at, filter: `name = ${name}`, maxResults: 10,
      orderBy: 'creationTimestamp desc', returnPartialSuccess: true});
    assert.deepEqual(items.map(r => r.name), [name]);
    const [all] = await frs.list(at);
    assert.equal(all.filter(r => r.name === name).length, 1);
    return `${all.length} future reservation(s) in ${ZONE}`;
  });

  await step('compute FutureReservations.aggregatedList', async () => {
    const seen = [];
    for await (const [scope, scoped] of frs.aggregatedListAsync({project: PROJECT, maxResults: 5,
      returnPartialSuccess: true}, {autoPaginate: false})) {
      for (const r of scoped.futureReservations || []) seen.push(`${scope}/${r.name}`);
    }
    assert.deepEqual(seen.filter(x => x.endsWith('/' + name)), [`zones/${ZONE}/${name}`]);
    return `${seen.length} future reservation(s) across zones`;
  });

  await step('compute FutureReservations.update (a draft\'s count, then planningStatus: the submit)', async () => {
    const [op] = await frs.update({...at, futureReservation: name, requestId: randomUUID(),
      updateMask: 'specificSkuProperties.totalCount',
      futureReservationResource: {specificSkuProperties: {totalCount: '3'}}});
    assert.equal(op.latestResponse.operationType, 'update');
    await waitOp(op);
    const [sub] = await frs.update({...at, futureReservation: name, updateMask: 'planningStatus',
      futureReservationResource: {name, planningStatus: 'SUBMITTED'}});
    await waitOp(sub);
    const [r] = await frs.get({...at, futureReservation: name});
    assert.equal(r.specificSkuProperties.totalCount, '3');
    assert.equal(r.specificSkuProperties.instanceProperties.machineType, 'a3-highgpu-8g');
    assert.equal(r.planningStatus, 'SUBMITTED');
    assert.equal(r.status.procurementStatus, 'PENDING_APPROVAL');
    // Submitted: a calendar-mode request takes no more changes.
    try {
      await frs.update({...at, futureReservation: name, updateMask: 'description',
        futureReservationResource: {description: 'changed'}});
      throw new Error('update after submission succeeded');
    } catch (e) {
      expectError(e, 400, 'FAILED_PRECONDITION');
    }
    return `totalCount 2 -> 3, DRAFTING -> ${r.status.procurementStatus}; a later change refused`;
  });

  await step('compute FutureReservations.cancel, then delete (+ wait)', async () => {
    const [op] = await frs.cancel({...at, futureReservation: name, requestId: randomUUID()});
    assert.equal(op.latestResponse.operationType, 'cancel');
    await waitOp(op);
    assert.equal((await fakeFr(name)).status.procurementStatus, 'CANCELLED');
    const [del] = await frs.delete({...at, futureReservation: name, requestId: randomUUID()});
    assert.equal(del.latestResponse.operationType, 'delete');
    await waitOp(del);
    assert.equal(await fakeFr(name), undefined);
    try {
      await frs.get({...at, futureReservation: name});
      throw new Error('get after delete succeeded');
    } catch (e) {
      expectError(e, 404, 'notFound');
    }
    return 'CANCELLED, then gone (GET -> 404)';
  });
  await frs.close();
}

// ---- the run --------------------------------------------------------------------------------
async function main() {
  BASE = await waitReady();
  const port = Number(new URL(BASE).port);
  // No rate limits on the real clock: the run is short, but keep it deterministic.
  await fake('POST', '/_fake/rate-limits', {enabled: false});
  const key = await fake('POST', '/_fake/service-accounts', {project: PROJECT});
  const keyFile = path.join(tmp, 'key.json');
  fs.writeFileSync(keyFile, JSON.stringify(key));
  console.log(`fake at ${BASE}, service account ${key.client_email}`);

  // google-auth-library hardcodes Google's token endpoint (https://oauth2.googleapis.com/token).
  // A client that takes the JWT-bearer route (compute: the GAPIC compute clients do not turn on
  // useJWTAccessWithScope, so with scopes set they ask the token endpoint) is routed to the fake
  // through the supported `transporter` option: a Gaxios instance with a request interceptor. The
  // assertion's `aud` stays Google's URL, which the fake accepts. Nothing in node_modules is patched.
  const tokenTransporter = () => {
    const t = new gaxios.Gaxios();
    t.interceptors.request.add({resolved: async cfg => {
      const u = new URL(String(cfg.url));
      if (u.host === 'oauth2.googleapis.com') cfg.url = new URL(BASE + u.pathname);
      return cfg;
    }});
    return t;
  };
  // Each client gets its own GoogleAuth from google-auth-library 10.9.1 (the top-level copy; google-gax
  // would otherwise build one from its nested copy). The aiplatform and cloudquotas constructors set
  // useJWTAccessWithScope = true on it, so the key becomes a self-signed JWT with a `scope` claim.
  const mkAuth = () => new GoogleAuth({keyFilename: keyFile, scopes: SCOPES,
    clientOptions: {transporter: tokenTransporter()}});
  const common = {apiEndpoint: '127.0.0.1', port, protocol: 'http', fallback: true};

  const tokenCalls = () => rpcCount('oauth2.token');
  const authFlow = (t0, t1) => (t1 > t0 ? `token endpoint (JWT-bearer grant, ${t1 - t0} call(s))`
    : 'self-signed JWT (no token endpoint call)');

  // ---------------- Vertex AI JobService ----------------
  let t0 = await tokenCalls();
  const jobs = new aiplatform.v1.JobServiceClient({...common, auth: mkAuth()});
  const parent = `projects/${PROJECT}/locations/${REGION}`;
  const runLabel = 'node-' + randomUUID().slice(0, 8);
  const spec = (extra = {}) => ({
    workerPoolSpecs: [{
      machineSpec: {machineType: 'a3-highgpu-8g', acceleratorType: 'NVIDIA_H100_80GB', acceleratorCount: 8},
      replicaCount: 1,
      containerSpec: {imageUri: 'us-docker.pkg.dev/vx/train:1', command: ['python', '-m', 'train'],
        env: [{name: 'EPOCHS', value: '3'}]},
      diskSpec: {bootDiskType: 'pd-ssd', bootDiskSizeGb: 200},
    }],
    scheduling: {strategy: 'SPOT', timeout: {seconds: 7200}},
    ...extra,
  });
  let jobA;
  let jobB;
  await step('aiplatform JobService.createCustomJob', async () => {
    const [a] = await jobs.createCustomJob({parent, customJob: {displayName: 'vx-node-a',
      labels: {'vx-run': runLabel, 'vx-stack': 'research'}, jobSpec: spec()}});
    const [b] = await jobs.createCustomJob({parent, customJob: {displayName: 'vx-node-b',
      labels: {'vx-run': runLabel, 'vx-stack': 'prod'}, jobSpec: spec()}});
    await jobs.createCustomJob({parent, customJob: {displayName: 'vx-node-other',
      labels: {'vx-run': 'someone-else'}, jobSpec: spec()}});
    jobA = a;
    jobB = b;
    assert.match(a.name, /^projects\/\d+\/locations\/us-central1\/customJobs\/\d+$/);
    assert.equal(a.state, 'JOB_STATE_QUEUED');          // int on the wire, decoded to the name
    assert.equal(a.jobSpec.scheduling.strategy, 'SPOT');
    assert.equal(a.jobSpec.workerPoolSpecs[0].machineSpec.acceleratorType, 'NVIDIA_H100_80GB');
    assert.equal(a.jobSpec.scheduling.timeout.seconds, '7200');
    const held = await fakeJob(a.name);
    assert.ok(held, 'fake does not hold ' + a.name);
    assert.equal(held.displayName, a.displayName);
    assert.deepEqual(held.labels, a.labels);
    assert.equal(held.state, a.state);
    assert.equal(Date.parse(held.createTime),
      Number(a.createTime.seconds) * 1000 + Math.floor(a.createTime.nanos / 1e6));
    return `${a.name} ${a.state}`;
  });

  await step('aiplatform JobService.getCustomJob', async () => {
    const [g] = await jobs.getCustomJob({name: jobA.name});
    const held = await fakeJob(jobA.name);
    assert.equal(g.name, held.name);
    assert.equal(g.state, held.state);
    assert.deepEqual(g.labels, held.labels);
    assert.equal(g.jobSpec.workerPoolSpecs[0].replicaCount, String(held.jobSpec.workerPoolSpecs[0].replicaCount));
    assert.equal(g.jobSpec.workerPoolSpecs[0].diskSpec.bootDiskSizeGb,
      held.jobSpec.workerPoolSpecs[0].diskSpec.bootDiskSizeGb);
    assert.deepEqual(g.jobSpec.workerPoolSpecs[0].containerSpec.env, [{name: 'EPOCHS', value: '3'}]);
    return `${g.name} ${g.state}`;
  });

  await step('aiplatform JobService.listCustomJobs (labels filter, pageSize 1, auto-paging)', async () => {
    const before = await rpcCount('ListCustomJobs');
    const names = [];
    for await (const j of jobs.listCustomJobsAsync({parent, filter: `labels.vx-run=${runLabel}`, pageSize: 1},
        {autoPaginate: false})) {
      names.push(j.name);
    }
    names.sort();
    const want = (await fake('GET', '/_fake/jobs')).customJobs
      .filter(j => j.labels && j.labels['vx-run'] === runLabel).map(j => j.name).sort();
    assert.deepEqual(names, want);
    assert.deepEqual(names, [jobA.name, jobB.name].sort());
    const pages = (await rpcCount('ListCustomJobs')) - before;
    assert.ok(pages >= 2, `expected >= 2 list pages, fake saw ${pages}`);
    const [one] = await jobs.listCustomJobs({parent,
      filter: `labels.vx-run=${runLabel} AND labels.vx-stack="prod" AND state=JOB_STATE_QUEUED`});
    assert.deepEqual(one.map(j => j.name), [jobB.name]);
    return `${names.length} jobs over ${pages} pages; AND/state filter -> 1`;
  });

  await step('aiplatform JobService.cancelCustomJob', async () => {
    const [empty] = await jobs.cancelCustomJob({name: jobA.name});
    assert.deepEqual(empty, {});
    const [g] = await jobs.getCustomJob({name: jobA.name});
    assert.equal(g.state, 'JOB_STATE_CANCELLING');
    await fake('POST', '/_fake/clock', {advance_seconds: 60});
    const [c] = await jobs.getCustomJob({name: jobA.name});
    assert.equal(c.state, 'JOB_STATE_CANCELLED');
    assert.equal(c.error.code, 1);
    const held = await fakeJob(jobA.name);
    assert.equal(held.state, 'JOB_STATE_CANCELLED');
    assert.ok(c.endTime && c.endTime.seconds, 'endTime not set');
    return `CANCELLING -> ${c.state}, error.code ${c.error.code}`;
  });

  await step('aiplatform JobService.deleteCustomJob (LRO, operation.promise())', async () => {
    // The operation reports done only on the 3rd GetOperation: exercises google-gax's polling loop.
    await fake('POST', '/_fake/timings', {operation_polls: 2});
    const polls0 = await rpcCount('GetOperation');
    const [op] = await jobs.deleteCustomJob({name: jobA.name});
    assert.match(op.name, /^projects\/\d+\/locations\/us-central1\/operations\/\d+$/);
    const [result, metadata, final] = await op.promise();
    assert.equal(final.done, true);
    assert.deepEqual(Object.keys(result), []);                    // google.protobuf.Empty
    assert.ok(metadata && metadata.genericMetadata, 'DeleteOperationMetadata.genericMetadata missing');
    assert.equal(await fakeJob(jobA.name), undefined);
    try {
      await jobs.getCustomJob({name: jobA.name});
      throw new Error('getCustomJob after delete succeeded');
    } catch (e) {
      expectError(e, 404, 'NOT_FOUND');
    }
    const polls = (await rpcCount('GetOperation')) - polls0;
    assert.ok(polls >= 3, `expected >= 3 GetOperation polls, fake saw ${polls}`);
    const dec = await jobs.checkDeleteCustomJobProgress(op.name);
    assert.equal(dec.done, true);
    await fake('POST', '/_fake/timings', {operation_polls: 0});
    return `${op.name} done after ${polls} polls; job gone (GET -> NOT_FOUND)`;
  });
  await jobs.close();
  console.log(`     aiplatform auth: ${authFlow(t0, await tokenCalls())}`);
  t0 = await tokenCalls();

  // ---------------- Vertex AI PersistentResourceService ----------------
  const prs = new aiplatform.v1.PersistentResourceServiceClient({...common, auth: mkAuth()});
  await step('aiplatform PersistentResourceService: create, get, list, update, delete (LROs polled)', async () => {
    // The fake finishes an operation when the resource reaches its state; 0 s: by the next poll.
    await fake('POST', '/_fake/timings', {provisioning_seconds: 0, updating_seconds: 0, stopping_seconds: 0});
    const polls0 = await rpcCount('GetOperation');
    const prId = 'vx-node-' + randomUUID().slice(0, 8);
    const machineSpec = {machineType: 'g2-standard-8', acceleratorType: 'NVIDIA_L4', acceleratorCount: 1};
    const [op] = await prs.createPersistentResource({parent, persistentResourceId: prId, persistentResource: {
      displayName: 'node pool', labels: {'vx-run': runLabel},
      resourcePools: [{id: 'l4s', machineSpec, replicaCount: 2}]}});
    const [res] = await op.promise();
    // google-gax decodes an LRO's response (a google.protobuf.Any) with enums as numbers.
    assert.equal(aiplatform.protos.google.cloud.aiplatform.v1.PersistentResource.State[res.state], 'RUNNING');
    assert.match(res.name, new RegExp(`^projects/\\d+/locations/us-central1/persistentResources/${prId}$`));
    const [g] = await prs.getPersistentResource({name: res.name});
    assert.equal(g.resourcePools[0].replicaCount, '2');
    assert.equal(g.resourcePools[0].machineSpec.acceleratorType, 'NVIDIA_L4');
    assert.deepEqual(g.labels, {'vx-run': runLabel});
    const [list] = await prs.listPersistentResources({parent, pageSize: 1});
    assert.deepEqual(list.map(r => r.name), [res.name]);
    const [uop] = await prs.updatePersistentResource({updateMask: {paths: ['resource_pools']},
      persistentResource: {name: res.name, resourcePools: [{id: 'l4s', machineSpec, replicaCount: 3}]}});
    const [u] = await uop.promise();
    assert.equal(String(u.resourcePools[0].replicaCount), '3');       // int64 decoded as a Long here
    const [dop] = await prs.deletePersistentResource({name: res.name});
    await dop.promise();
    try {
      await prs.getPersistentResource({name: res.name});
      throw new Error('getPersistentResource after delete succeeded');
    } catch (e) {
      expectError(e, 404, 'NOT_FOUND');
    }
    const polls = (await rpcCount('GetOperation')) - polls0;
    assert.ok(polls >= 3, `expected >= 3 GetOperation polls, fake saw ${polls}`);
    await fake('POST', '/_fake/timings', {provisioning_seconds: 300, updating_seconds: 60, stopping_seconds: 60});
    return `${res.name}: RUNNING, replicas 2 -> 3, deleted; ${polls} operation polls`;
  });
  await prs.close();

  // ---------------- Compute Engine reservations ----------------
  const reservations = new compute.v1.ReservationsClient({...common, auth: mkAuth()});
  const zoneOps = new compute.v1.ZoneOperationsClient({...common, auth: mkAuth()});
  const resName = 'vx-node-' + randomUUID().slice(0, 8);
  const insertReq = () => ({
    project: PROJECT, zone: ZONE, requestId: insertId,
    reservationResource: {
      name: resName, description: 'node client check',
      specificReservationRequired: true,
      shareSettings: {shareType: 'LOCAL'},
      reservationSharingPolicy: {serviceShareType: 'ALLOW_ALL'},
      specificReservation: {count: 2, instanceProperties: {machineType: 'a3-highgpu-8g',
        guestAccelerators: [{acceleratorType: 'nvidia-h100-80gb', acceleratorCount: 8}]}},
    },
  });
  const insertId = randomUUID();
  let insertOp;
  await step('compute Reservations.insert (requestId; repeat is idempotent)', async () => {
    const [op] = await reservations.insert(insertReq());
    insertOp = op.latestResponse;
    assert.equal(insertOp.operationType, 'insert');
    assert.match(insertOp.targetLink, new RegExp(`/projects/${PROJECT}/zones/${ZONE}/reservations/${resName}$`));
    const [again] = await reservations.insert(insertReq());
    assert.equal(again.latestResponse.id, insertOp.id);
    assert.equal(again.latestResponse.name, insertOp.name);
    assert.ok(await fakeRes(resName), 'fake does not hold the reservation');
    return `${insertOp.name} ${insertOp.status}; repeat -> same operation`;
  });

  await step('compute ZoneOperations.wait', async () => {
    const [done] = await zoneOps.wait({project: PROJECT, zone: ZONE, operation: insertOp.name});
    assert.equal(done.status, 'DONE');
    assert.equal(done.name, insertOp.name);
    assert.ok(!done.error, 'operation has an error: ' + JSON.stringify(done.error));
    const [got] = await zoneOps.get({project: PROJECT, zone: ZONE, operation: insertOp.name});
    assert.equal(got.status, 'DONE');
    return `${done.name} ${done.status} (get agrees)`;
  });

  await step('compute Reservations.get', async () => {
    const [r] = await reservations.get({project: PROJECT, zone: ZONE, reservation: resName});
    const held = await fakeRes(resName);
    assert.equal(r.name, held.name);
    assert.equal(r.id, held.id);
    assert.equal(r.status, held.status);
    assert.equal(r.specificReservation.count, String(held.specificReservation.count));
    assert.equal(r.specificReservation.instanceProperties.machineType, 'a3-highgpu-8g');
    assert.equal(r.specificReservation.instanceProperties.guestAccelerators[0].acceleratorCount, 8);
    assert.equal(r.specificReservationRequired, true);
    assert.equal(r.reservationSharingPolicy.serviceShareType, 'ALLOW_ALL');
    return `${r.name} ${r.status} count ${r.specificReservation.count}`;
  });

  await step('compute Reservations.list', async () => {
    const [items] = await reservations.list({project: PROJECT, zone: ZONE});
    const mine = items.filter(r => r.name === resName);
    assert.equal(mine.length, 1);
    return `${items.length} reservation(s) in ${ZONE}`;
  });

  await step('compute Reservations.aggregatedList', async () => {
    const seen = [];
    for await (const [scope, scoped] of reservations.aggregatedListAsync({project: PROJECT},
      {autoPaginate: false})) {
      for (const r of scoped.reservations || []) seen.push(`${scope}/${r.name}`);
    }
    assert.deepEqual(seen.filter(s => s.endsWith('/' + resName)), [`zones/${ZONE}/${resName}`]);
    return `${seen.length} reservation(s) across zones`;
  });

  await step('compute Reservations.resize (+ wait)', async () => {
    const [op] = await reservations.resize({project: PROJECT, zone: ZONE, reservation: resName,
      requestId: randomUUID(), reservationsResizeRequestResource: {specificSkuCount: 3}});
    const [done] = await zoneOps.wait({project: PROJECT, zone: ZONE, operation: op.latestResponse.name});
    assert.equal(done.status, 'DONE');
    const [r] = await reservations.get({project: PROJECT, zone: ZONE, reservation: resName});
    assert.equal(r.specificReservation.count, '3');
    assert.equal((await fakeRes(resName)).specificReservation.count, '3');
    return `count 2 -> ${r.specificReservation.count}`;
  });

  await step('compute Reservations.delete (+ wait)', async () => {
    const [op] = await reservations.delete({project: PROJECT, zone: ZONE, reservation: resName,
      requestId: randomUUID()});
    assert.equal(op.latestResponse.operationType, 'delete');
    const [done] = await zoneOps.wait({project: PROJECT, zone: ZONE, operation: op.latestResponse.name});
    assert.equal(done.status, 'DONE');
    assert.equal(await fakeRes(resName), undefined);
    try {
      await reservations.get({project: PROJECT, zone: ZONE, reservation: resName});
      throw new Error('get after delete succeeded');
    } catch (e) {
      expectError(e, 404, 'notFound');
    }
    return 'gone (GET -> 404)';
  });
  await futureReservationChecks(mkAuth, common, zoneOps);
  await reservations.close();
  await zoneOps.close();
  console.log(`     compute auth: ${authFlow(t0, await tokenCalls())}`);
  t0 = await tokenCalls();

  // ---------------- Cloud Quotas ----------------
  const quotas = new cloudquotas.v1.CloudQuotasClient({...common, auth: mkAuth()});
  const qParent = `projects/${PROJECT}/locations/global`;
  const prefId = 'vx-node-h100-' + randomUUID().slice(0, 8);
  const QID = 'CustomModelTrainingH100GPUsPerProjectPerRegion';
  let pref;
  await step('cloudquotas CloudQuotas.createQuotaPreference', async () => {
    const [p] = await quotas.createQuotaPreference({parent: qParent, quotaPreferenceId: prefId,
      quotaPreference: {service: 'aiplatform.googleapis.com', quotaId: QID, dimensions: {region: REGION},
        quotaConfig: {preferredValue: '1200'}, justification: 'vx node client check',
        contactEmail: 'ml-platform@example.com'}});
    pref = p;
    assert.match(p.name, new RegExp(`^projects/[^/]+/locations/global/quotaPreferences/${prefId}$`));
    assert.equal(p.quotaConfig.preferredValue, '1200');
    assert.equal(p.quotaId, QID);
    assert.deepEqual(p.dimensions, {region: REGION});
    const held = await fakePref(p.name);
    assert.ok(held, 'fake does not hold ' + p.name);
    assert.equal(held.etag, p.etag);
    return `${p.name} preferred ${p.quotaConfig.preferredValue} granted ${p.quotaConfig.grantedValue?.value ?? '-'}`;
  });

  await step('cloudquotas CloudQuotas.getQuotaPreference', async () => {
    const [g] = await quotas.getQuotaPreference({name: pref.name});
    const held = await fakePref(pref.name);
    assert.equal(g.etag, held.etag);
    assert.equal(g.quotaConfig.preferredValue, String(held.quotaConfig.preferredValue));
    assert.equal(g.reconciling, Boolean(held.reconciling));
    assert.equal(g.service, held.service);
    return `${g.name} reconciling=${g.reconciling}`;
  });

  await step('cloudquotas CloudQuotas.listQuotaPreferences', async () => {
    const [items] = await quotas.listQuotaPreferences({parent: qParent, filter: `quota_id=${QID}`});
    assert.deepEqual(items.map(p => p.name), [pref.name]);
    const [all] = await quotas.listQuotaPreferences({parent: qParent});
    const held = (await fake('GET', '/_fake/quota-preferences')).quotaPreferences
      .filter(q => q.name.startsWith(`projects/`) && q.name.includes('/locations/global/'));
    assert.ok(all.length >= 1 && all.length <= held.length);
    return `filter quota_id -> ${items.length}, unfiltered -> ${all.length}`;
  });

  await step('cloudquotas CloudQuotas.updateQuotaPreference (updateMask, etag)', async () => {
    const [u] = await quotas.updateQuotaPreference({
      updateMask: {paths: ['quota_config.preferred_value']},
      quotaPreference: {name: pref.name, etag: pref.etag, service: pref.service, quotaId: QID,
        dimensions: {region: REGION}, quotaConfig: {preferredValue: '1100'},
        contactEmail: 'ml-platform@example.com'}});
    assert.equal(u.quotaConfig.preferredValue, '1100');
    assert.notEqual(u.etag, pref.etag);
    const held = await fakePref(pref.name);
    assert.equal(String(held.quotaConfig.preferredValue), '1100');
    assert.equal(held.etag, u.etag);
    try {   // a stale etag is refused with ABORTED (409)
      await quotas.updateQuotaPreference({updateMask: {paths: ['quota_config.preferred_value']},
        quotaPreference: {name: pref.name, etag: pref.etag, service: pref.service, quotaId: QID,
          dimensions: {region: REGION}, quotaConfig: {preferredValue: '1000'}}});
      throw new Error('update with a stale etag succeeded');
    } catch (e) {
      expectError(e, 409, 'ABORTED');
    }
    return `preferred 1200 -> ${u.quotaConfig.preferredValue}; stale etag -> ABORTED`;
  });

  await step('cloudquotas CloudQuotas.listQuotaInfos', async () => {
    const [infos] = await quotas.listQuotaInfos({parent: `${qParent.replace(/\/locations\/global$/, '')}/locations/global/services/aiplatform.googleapis.com`});
    const h100 = infos.find(i => i.quotaId === QID);
    assert.ok(h100, `${QID} not listed`);
    assert.equal(h100.service, 'aiplatform.googleapis.com');
    assert.ok(h100.dimensionsInfos.length >= 1);
    const regional = h100.dimensionsInfos.find(d => d.dimensions && d.dimensions.region === REGION);
    assert.ok(regional, 'no dimensionsInfo for ' + REGION);
    assert.equal(regional.details.value, '1100');         // the granted preference is the limit now
    assert.equal(h100.containerType, 'PROJECT');
    return `${infos.length} infos; ${QID} in ${REGION} = ${regional.details.value}`;
  });
  await quotas.close();
  console.log(`     cloudquotas auth: ${authFlow(t0, await tokenCalls())}`);

  // ---------------- google-auth-library token endpoint (JWT-bearer grant) ----------------
  // A bare JWT client (no GAPIC wrapper) with scopes and without useJWTAccessWithScope: JWT-bearer
  // grant at the token endpoint, then the access token used by a GAPIC client.
  await step('google-auth-library JWT.getAccessToken via the token endpoint', async () => {
    const transporter = tokenTransporter();
    const before = await rpcCount('oauth2.token');
    const jwt = new JWT({email: key.client_email, key: key.private_key, keyId: key.private_key_id,
      scopes: SCOPES, transporter});
    const {token} = await jwt.getAccessToken();
    assert.ok(token && token.length > 10);
    assert.equal(await rpcCount('oauth2.token'), before + 1);
    // The token works with a GAPIC client too (auth: an OAuth2 client carrying it).
    const quotas2 = new cloudquotas.v1.CloudQuotasClient({...common, auth: jwt});
    const [g] = await quotas2.getQuotaPreference({name: pref.name});
    assert.equal(g.name, pref.name);
    await quotas2.close();
    return 'access token minted by the fake and accepted by Cloud Quotas';
  });

  // ---------------- clients built the plain way: keyFilename, google-gax's own auth ----------------
  // No `auth` object: google-gax builds a GoogleAuth from its own nested google-auth-library copy.
  // Client options reach that GoogleAuth, so `clientOptions.transporter` is how compute's token
  // request gets to the fake.
  await step('keyFilename-only clients (google-gax\'s bundled google-auth-library)', async () => {
    const plain = {...common, keyFilename: keyFile};
    const j = new aiplatform.v1.JobServiceClient(plain);
    const [list] = await j.listCustomJobs({parent, filter: `labels.vx-run=${runLabel}`},
      {autoPaginate: true});
    assert.deepEqual(list.map(x => x.name), [jobB.name]);
    await j.close();
    const r = new compute.v1.ReservationsClient({...plain, clientOptions: {transporter: tokenTransporter()}});
    const [items] = await r.list({project: PROJECT, zone: ZONE});
    assert.equal(items.filter(x => x.name === resName).length, 0);
    await r.close();
    const q = new cloudquotas.v1.CloudQuotasClient(plain);
    const [g] = await q.getQuotaPreference({name: pref.name});
    assert.equal(g.quotaConfig.preferredValue, '1100');
    await q.close();
    return 'aiplatform list, compute list, cloudquotas get';
  });
}

try {
  await main();
} catch (e) {
  failed++;
  console.log(`FAIL setup: ${(e && (e.stack || e.message)) || e}`);
} finally {
  stopFake();
}
console.log(`node-clients: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
