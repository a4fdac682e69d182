// A fleet on loopback: three `sprout serve` replicas (stories260K) behind
// Debian's HAProxy with deploy/haproxy/haproxy.cfg. Multi-turn chats with a
// session header stay on one replica and hit its prefix cache, spread
// evenly; a replica drained with SIGTERM under load loses no request and
// rejoins; one killed with SIGKILL fails only what it was serving, and a
// retry succeeds; each replica's /metrics passes promtool and a parser
// here, and agrees with what was sent.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MODEL, SPROUT, check, finish, postJson } from '../server/harness.mjs';

const CONFIG = join(import.meta.dirname, '../../deploy/haproxy/haproxy.cfg');
const dir = mkdtempSync(join(tmpdir(), 'sprout-fleet-'));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const children = [];
process.on('exit', () => children.forEach((p) => p.exitCode === null && p.signalCode === null && p.kill('SIGKILL')));

async function freePort() {
  const s = createServer();
  await new Promise((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}

// An adapter every replica loads, to be named in "model".
const ADAPTER = join(dir, 'tutor.gguf');
const made = spawnSync(process.env.SPROUT_MAKE_LORA, [MODEL, ADAPTER, '--seed', '3'], { encoding: 'utf8' });
check(made.status === 0, 'make_lora', made.stderr);

// A replica on a port of its own (fixed: a restarted one comes back where HAProxy looks for it).
async function startReplica(id, port) {
  const args = ['serve', '-m', MODEL, '--port', String(port), '-t', '1', '-c', '2048', '--parallel', '24', '--replica-id', id,
    '--drain-timeout', '20s', '--lora', ADAPTER, '--lora-init-without-apply'];
  const proc = spawn(SPROUT, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  children.push(proc);
  let log = '';
  proc.stderr.on('data', (d) => (log += d));
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 200; i++) {
    try {
      if ((await fetch(`${url}/health/ready`)).status === 200) break;
    } catch {}
    await sleep(50);
  }
  return { id, port, url, proc, exited, log: () => log };
}

const replicas = [];
for (const id of ['r1', 'r2', 'r3']) replicas.push(await startReplica(id, await freePort()));
const lbPort = await freePort(), statsPort = await freePort();
const env = { ...process.env, SPROUT_LISTEN: `127.0.0.1:${lbPort}`, SPROUT_STATS: `127.0.0.1:${statsPort}` };
replicas.forEach((r, i) => (env[`SPROUT_${i + 1}`] = `127.0.0.1:${r.port}`));
const haproxy = spawn('haproxy', ['-db', '-f', CONFIG], { env, stdio: ['ignore', 'ignore', 'pipe'] });
children.push(haproxy);
let haproxyLog = '';
haproxy.stderr.on('data', (d) => (haproxyLog += d));
const LB = `http://127.0.0.1:${lbPort}`;

// HAProxy's view of each replica: "UP", "DOWN", ... (the session backend's rows).
async function states() {
  let csv = '';
  try {
    csv = await (await fetch(`http://127.0.0.1:${statsPort}/stats;csv`)).text();
  } catch {} // HAProxy still starting
  const out = {};
  for (const line of csv.split('\n')) {
    const f = line.split(',');
    if (f[0] === 'sprout_by_session' && /^s\d$/.test(f[1])) out[f[1]] = f[17];
  }
  return out;
}
async function waitState(server, want, ms) {
  for (const until = Date.now() + ms; Date.now() < until; await sleep(100)) if ((await states())[server]?.startsWith(want)) return true;
  return false;
}
for (const s of ['s1', 's2', 's3']) check(await waitState(s, 'UP', 10000), `haproxy sees ${s} up`, await states(), haproxyLog);

// What each replica was sent, by its own account (the header), to compare with its /metrics.
const sent = Object.fromEntries(replicas.map((r) => [r.id, { requests: 0, prompt: 0, completion: 0, cached: 0, adapter: 0 }]));
function tally(r, adapter = false) {
  const t = sent[r.headers.get('x-sprout-replica')];
  const u = r.json?.usage;
  if (!t || !u) return;
  t.requests++;
  t.prompt += u.prompt_tokens;
  t.completion += u.completion_tokens;
  t.cached += u.prompt_tokens_details.cached_tokens;
  t.adapter += adapter;
}

function chatTurn(messages, session, maxTokens = 8, model = 'stories260K') {
  return postJson(`${LB}/v1/chat/completions`, { model, messages, max_tokens: maxTokens, temperature: 0 },
    session ? { 'X-Session-Id': session } : {});
}

// --- 48 conversations of three turns at once, each with its session header ---
const TURNS = 3;
const chats = await Promise.all(Array.from({ length: 48 }, async (_, c) => {
  const session = `conversation-${c}`;
  const messages = [];
  const served = [];
  let ok = true, cachedLater = true, headerAgrees = true;
  for (let turn = 0; turn < TURNS; turn++) {
    messages.push({ role: 'user', content: `Tell me about the little ${['cat', 'dog', 'bird', 'fish'][c % 4]} number ${c}, part ${turn}.` });
    const r = await chatTurn(messages, session);
    if (r.status !== 200) {
      ok = false;
      check(false, `chat ${c} turn ${turn}`, r.status, r.text);
      break;
    }
    tally(r);
    served.push(r.headers.get('x-sprout-replica'));
    const cached = r.json.usage.prompt_tokens_details.cached_tokens;
    if (turn > 0 && !(cached > 0)) cachedLater = false;
    if (String(cached) !== r.headers.get('x-sprout-cached-tokens')) headerAgrees = false;
    messages.push({ role: 'assistant', content: r.json.choices[0].message.content });
  }
  return { ok, served, cachedLater, headerAgrees };
}));
const byReplica = { r1: 0, r2: 0, r3: 0 };
for (const [c, chat] of chats.entries()) {
  if (!chat.ok) continue;
  check(chat.served.every((s) => s === chat.served[0]), `chat ${c}: every turn on one replica`, chat.served);
  check(chat.cachedLater, `chat ${c}: turns after the first report cached prompt tokens`);
  check(chat.headerAgrees, `chat ${c}: X-Sprout-Cached-Tokens = usage.prompt_tokens_details.cached_tokens`);
  byReplica[chat.served[0]] = (byReplica[chat.served[0]] ?? 0) + 1;
}
for (const [id, n] of Object.entries(byReplica)) check(n >= 16 * 0.7 && n <= 16 * 1.3, `conversations on ${id} within ±30% of 16`, byReplica);
console.log('conversations per replica:', JSON.stringify(byReplica));

// --- without the header: least connections; with an adapter named in "model" ---
const loose = await Promise.all(Array.from({ length: 9 }, () => chatTurn([{ role: 'user', content: 'Hi' }], null, 4, 'stories260K:tutor')));
const looseOn = new Set();
for (const r of loose) {
  check(r.status === 200, 'a request without a session header, model stories260K:tutor', r.status, r.text);
  tally(r, true);
  looseOn.add(r.headers.get('x-sprout-replica'));
}
check(looseOn.size >= 2, 'requests without a session header reach several replicas', [...looseOn]);

// the adapter named in "model" is the adapter applied: the same greedy text as "lora": [{id 0, scale 1}], not the base model's
const greedy = async (extra) => {
  const r = await postJson(`${replicas[2].url}/v1/completions`, { prompt: 'Once upon a time', max_tokens: 16, temperature: 0, ...extra });
  tally(r, Boolean(extra.lora || extra.model !== 'stories260K'));
  return r.json?.choices?.[0]?.text;
};
const viaLora = await greedy({ model: 'stories260K', lora: [{ id: 0, scale: 1 }] });
check(viaLora && (await greedy({ model: 'tutor' })) === viaLora && (await greedy({ model: 'stories260K:tutor' })) === viaLora,
  '"model": "tutor" and "stories260K:tutor" apply the adapter as "lora" does');
check((await greedy({ model: 'stories260K' })) !== viaLora, 'the base model answers otherwise');
check((await postJson(`${replicas[2].url}/v1/completions`, { model: 'stories260K:nope', prompt: 'x', max_tokens: 1 })).status === 404,
  'an adapter name that is not there: 404');

// --- /metrics: promtool, a parser, and the values against what was sent ---
// Prometheus' text format: families from # TYPE, samples as name{labels} value.
function parseMetrics(text) {
  const types = {}, samples = [];
  for (const line of text.split('\n')) {
    if (!line) continue;
    let m;
    if ((m = /^# TYPE (\S+) (counter|gauge|histogram|summary|untyped)$/.exec(line))) {
      if (types[m[1]]) throw new Error(`family ${m[1]} twice`);
      types[m[1]] = m[2];
      continue;
    }
    if (/^# HELP \S+ /.test(line)) continue;
    if (!(m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line))) throw new Error(`bad line: ${line}`);
    const labels = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?/g)) labels[l[1]] = l[2].replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
    const value = Number(m[3] === '+Inf' ? Infinity : m[3]);
    if (Number.isNaN(value)) throw new Error(`bad value: ${line}`);
    const family = Object.keys(types).find((f) => m[1] === f || (types[f] === 'histogram' && /^_(bucket|sum|count)$/.test(m[1].slice(f.length)) && m[1].startsWith(f)));
    if (!family) throw new Error(`sample before its # TYPE: ${line}`);
    samples.push({ name: m[1], labels, value });
  }
  return { types, samples, get: (name, labels = {}) => samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)) };
}
const sum = (list) => list.reduce((a, s) => a + s.value, 0);
const VLLM = ['vllm:num_requests_running', 'vllm:num_requests_waiting', 'vllm:kv_cache_usage_perc', 'vllm:gpu_cache_usage_perc',
  'vllm:lora_requests_info', 'vllm:prompt_tokens_total', 'vllm:generation_tokens_total', 'vllm:prefix_cache_queries_total',
  'vllm:prefix_cache_hits_total', 'vllm:time_to_first_token_seconds', 'vllm:time_per_output_token_seconds', 'vllm:e2e_request_latency_seconds'];
for (const r of replicas) {
  const text = await (await fetch(`${r.url}/metrics`)).text();
  const file = join(dir, `${r.id}.prom`);
  writeFileSync(file, text);
  // promtool: a parse error is exit 1; exit 3 is lint only, and vLLM's names break one rule by design (':')
  const lint = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
  const problems = (lint.stdout + lint.stderr).split('\n').filter((l) => l && !/^vllm:\S+ metric names should not contain ':'$/.test(l));
  check(lint.status === 0 || (lint.status === 3 && problems.length === 0), `${r.id}: promtool check metrics`, lint.status, problems);
  let m;
  try {
    m = parseMetrics(text);
  } catch (e) {
    check(false, `${r.id}: /metrics parses`, e.message);
    continue;
  }
  for (const f of VLLM) check(m.types[f], `${r.id}: ${f} is there`);
  const t = sent[r.id], model = { model_name: 'stories260K' };
  check(sum(m.get('vllm:prompt_tokens_total', model)) === t.prompt, `${r.id}: prompt tokens`, sum(m.get('vllm:prompt_tokens_total')), t);
  check(sum(m.get('vllm:prefix_cache_queries_total', model)) === t.prompt, `${r.id}: prefix cache queries`);
  check(sum(m.get('vllm:prefix_cache_hits_total', model)) === t.cached, `${r.id}: prefix cache hits`, sum(m.get('vllm:prefix_cache_hits_total')), t);
  check(sum(m.get('vllm:generation_tokens_total', model)) === t.completion, `${r.id}: generation tokens`);
  check(sum(m.get('vllm:request_success_total', model)) === t.requests, `${r.id}: requests`, sum(m.get('vllm:request_success_total')), t);
  check(sum(m.get('vllm:e2e_request_latency_seconds_count', model)) === t.requests, `${r.id}: e2e latency count`);
  check(sum(m.get('vllm:time_per_output_token_seconds_count', model)) === t.completion - t.requests, `${r.id}: one TPOT per token after the first`);
  for (const h of ['vllm:time_to_first_token_seconds', 'vllm:time_per_output_token_seconds', 'vllm:e2e_request_latency_seconds']) {
    const buckets = m.get(`${h}_bucket`, model).map((s) => s.value);
    check(buckets.every((v, i) => i === 0 || v >= buckets[i - 1]), `${h}: buckets cumulative`);
    check(buckets.at(-1) === sum(m.get(`${h}_count`, model)), `${h}: +Inf bucket = count`);
  }
  check(m.get('vllm:time_to_first_token_seconds_bucket').length === 23 && m.get('vllm:e2e_request_latency_seconds_bucket').length === 22,
    `${r.id}: vLLM's bucket bounds`);
  check(m.get('vllm:num_requests_running', model)[0]?.value === 0 && m.get('vllm:num_requests_waiting', model)[0]?.value === 0,
    `${r.id}: nothing running or waiting when idle`);
  const kv = m.get('vllm:kv_cache_usage_perc', model)[0]?.value;
  check(kv >= 0 && kv <= 1, `${r.id}: KV cache usage is a fraction`, kv);
  const lora = m.get('vllm:lora_requests_info')[0];
  check(lora?.labels.max_lora === '1' && lora.labels.running_lora_adapters === 'tutor' && lora.labels.waiting_lora_adapters === '' &&
    Math.abs(lora.value - Date.now() / 1000) < 60, `${r.id}: lora_requests_info`, lora);
  check(sum(m.get('sprout_lora_requests_total', { adapter: 'tutor' })) === t.adapter, `${r.id}: requests with the adapter`, t);
}

// --- load: conversations that keep going while a replica goes away ---
async function load(n, tag, maxTokens) {
  return Promise.all(Array.from({ length: n }, async (_, c) => {
    const session = `${tag}-${c}`;
    try {
      const r = await chatTurn([{ role: 'user', content: `A story about ${session}.` }], session, maxTokens);
      return { status: r.status, replica: r.headers.get('x-sprout-replica'), session };
    } catch (e) {
      return { status: 0, error: e.message, session };
    }
  }));
}

// SIGTERM r1 while requests run: none fails, HAProxy marks it down, it exits 0, then rejoins.
const r1 = replicas[0];
// A stream straight to r1 that its client does not read yet: its megabytes of log-probabilities fill the socket's
// buffers, so it stays in flight, and r1's drain stays open, until the checks below have looked at the drain.
function unreadStream(port, body) {
  const sock = connect(port, '127.0.0.1');
  sock.pause();
  const payload = JSON.stringify(body);
  sock.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${Buffer.byteLength(payload)}\r\nConnection: close\r\n\r\n${payload}`);
  return () => new Promise((resolve) => {
    let text = '';
    sock.on('data', (d) => (text += d));
    sock.on('end', () => resolve(text));
    sock.on('error', () => resolve(text));
    sock.resume();
  });
}
const readLong = unreadStream(r1.port, { messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 1900, ignore_eos: true,
  stream: true, logprobs: true, top_logprobs: 20 });
const drainWave = load(36, 'drain', 48);
await sleep(150);
r1.proc.kill('SIGTERM');
const afterSignal = load(24, 'drain-late', 8);
await sleep(100);
const refused = await postJson(`${r1.url}/v1/chat/completions`, { messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2 });
check(refused.status === 503 && refused.headers.get('retry-after') === '1' && refused.headers.get('connection') === 'close' &&
  refused.headers.get('x-sprout-replica') === 'r1', 'draining: new work gets 503, Retry-After, Connection: close', refused.status,
  [...refused.headers]);
check((await fetch(`${r1.url}/health/ready`)).status === 503 && (await fetch(`${r1.url}/health`)).status === 503,
  'draining: /health and /health/ready say 503');
check((await fetch(`${r1.url}/health/live`)).status === 200, 'draining: /health/live says 200');
const busy = await fetch(`${r1.url}/metrics`);
check(busy.status === 200, 'draining: /metrics still answers');
try {
  // the held stream runs: one request running, its cells of the KV cache in use (2048 per slot, 24 slots)
  const m = parseMetrics(await busy.text()), model = { model_name: 'stories260K' };
  const kv = m.get('vllm:kv_cache_usage_perc', model)[0]?.value, gpu = m.get('vllm:gpu_cache_usage_perc', model)[0]?.value;
  check(m.get('vllm:num_requests_running', model)[0]?.value >= 1, 'draining: the held request is running');
  check(kv > 0 && kv < 1 && kv === gpu, 'draining: KV cache in use, as a fraction under both names', kv, gpu);
} catch (e) {
  check(false, 'draining: /metrics parses', e.message);
}
const longText = await readLong();
check(/^HTTP\/1\.1 200/.test(longText) && /"finish_reason":"length"/.test(longText) && /data: \[DONE\]/.test(longText),
  'draining: the generation in flight finishes', longText.length, longText.slice(0, 200), longText.slice(-200));
const drained = [...(await drainWave), ...(await afterSignal)];
const drainFailed = drained.filter((r) => r.status !== 200);
check(drainFailed.length === 0, 'SIGTERM under load: no request fails', drainFailed);
const r1exit = await r1.exited;
check(r1exit.code === 0, 'the drained replica exits 0', r1exit, r1.log());
check(/draining/.test(r1.log()), 'the replica said it drained', r1.log());
check(await waitState('s1', 'DOWN', 8000), 'haproxy marks the drained replica down', await states());
const onlyOthers = await load(12, 'while-down', 4);
check(onlyOthers.every((r) => r.status === 200 && r.replica !== 'r1'), 'while it is down the others serve', onlyOthers);
replicas[0] = await startReplica('r1', r1.port);
check(await waitState('s1', 'UP', 10000), 'the restarted replica rejoins', await states());
const rejoined = await load(24, 'rejoined', 4);
check(rejoined.every((r) => r.status === 200) && rejoined.some((r) => r.replica === 'r1'), 'it serves again after rejoining',
  rejoined.map((r) => r.replica));

// SIGKILL r2 under load: only what it was serving may fail; a retry through HAProxy succeeds.
const r2 = replicas[1];
const home = Object.fromEntries((await load(36, 'kill', 1)).map((r) => [r.session, r.replica])); // where each session hashes
const killWave = load(36, 'kill', 48);
await sleep(150);
r2.proc.kill('SIGKILL');
const killed = await killWave;
const killFailed = killed.filter((r) => r.status !== 200);
check(killFailed.every((r) => home[r.session] === 'r2'), 'only the killed replica\'s requests fail', killFailed, home);
check(killed.every((r) => r.status === 200 || r.status === 502 || r.status === 0), 'a killed replica fails requests as 502 or a reset',
  killFailed);
for (const f of killFailed) {
  const again = await chatTurn([{ role: 'user', content: `A story about ${f.session}.` }], f.session, 8);
  check(again.status === 200 && again.headers.get('x-sprout-replica') !== 'r2', `a retry of ${f.session} succeeds elsewhere`, again.status);
}
check(await waitState('s2', 'DOWN', 8000), 'haproxy marks the killed replica down', await states());
const afterKill = await load(24, 'after-kill', 4);
check(afterKill.every((r) => r.status === 200), 'no request fails once the health check saw it', afterKill.filter((r) => r.status !== 200));
console.log(`SIGTERM wave: ${drained.length} requests, ${drainFailed.length} failed; SIGKILL wave: ${killed.length} requests, ${killFailed.length} failed`);

haproxy.kill('SIGTERM');
for (const r of replicas) if (r.proc.exitCode === null && r.proc.signalCode === null) r.proc.kill('SIGTERM');
const ends = await Promise.all(replicas.map((r) => r.exited));
replicas.forEach((r, i) => r !== r2 && check(ends[i].code === 0, `${r.id} stops cleanly (exit 0)`, ends[i], r.log().slice(-2000)));
finish();
