// The soak's client (bench/soak.sh starts the server and samples its RSS):
// CONNECTIONS workers, each sending one request after another for DURATION
// seconds, drawn from a fixed mix: plain and streamed generations of both
// APIs, streams the client drops after the first chunk, plain requests it
// abandons before the answer, bodies over --max-body, malformed JSON,
// unknown paths and methods, and the cheap GETs. Every answer is checked
// against what its kind must get; anything else (another status, a cut
// stream, a socket error) is an unexpected error. At the end /metrics is
// compared with the client's own counts. Prints one JSON line of figures
// and exits 1 on any unexpected error or inconsistency.
// usage: node soak.mjs URL DURATION_S CONNECTIONS MAX_BODY
import http from 'node:http';

const [url, durationS, connections, maxBody] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4]), Number(process.argv[5])];
const base = new URL(url);
const endAt = Date.now() + durationS * 1000;
const agent = new http.Agent({ keepAlive: true, maxSockets: connections });

const counts = { sent: 0, ok: 0, provokedErrors: 0, streamDrops: 0, abandons: 0, unexpected: 0, generations: 0 };
const unexpected = [];
let seed = 12345;
const random = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);

function note(what) {
  counts.unexpected++;
  if (unexpected.length < 20) unexpected.push(what);
}

// One request; `drop` ends it early: 'first-chunk' after the first body bytes, a number of ms after sending.
function send(method, path, body, { drop, headers = {} } = {}) {
  counts.sent++;
  return new Promise((resolve) => {
    const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    const req = http.request({ host: base.hostname, port: base.port, path, method, agent: drop ? false : agent,
      headers: { ...(payload !== undefined ? { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(payload) } : {}), ...headers } }, (res) => {
      let text = '';
      res.on('data', (d) => {
        text += d;
        if (drop === 'first-chunk') {
          req.destroy();
          resolve({ dropped: true });
        }
      });
      res.on('end', () => resolve({ status: res.statusCode, text }));
      res.on('error', () => resolve({ dropped: drop !== undefined, error: 'response error' }));
    });
    req.on('error', (e) => resolve({ dropped: drop !== undefined, error: String(e) }));
    req.setTimeout(300000, () => req.destroy(new Error('no answer in 300 s')));
    if (typeof drop === 'number') setTimeout(() => { req.destroy(); resolve({ dropped: true }); }, drop);
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

const prompt = () => ['Once upon a time', 'The little dog', 'Lily wanted to', 'One day, a bird'][Math.floor(random() * 4)];
const sse = (text) => /data: \[DONE\]/.test(text);
const ndjsonDone = (text) => text.trim().split('\n').some((l) => { try { return JSON.parse(l).done === true; } catch { return false; } });

// Each kind: its share of the mix, and what it sends and expects.
const kinds = [
  [25, 'completion', async () => {
    const r = await send('POST', '/v1/completions', { prompt: prompt(), max_tokens: 8, temperature: 0.8 });
    counts.generations++;
    return r.status === 200 && JSON.parse(r.text).choices?.length === 1 ? 'ok' : r;
  }],
  [20, 'chat stream', async () => {
    const r = await send('POST', '/v1/chat/completions', { messages: [{ role: 'user', content: prompt() }], max_tokens: 8, stream: true });
    counts.generations++;
    return r.status === 200 && sse(r.text) ? 'ok' : r;
  }],
  [10, 'ollama stream', async () => {
    const r = await send('POST', '/api/generate', { prompt: prompt(), options: { num_predict: 8 } });
    counts.generations++;
    return r.status === 200 && ndjsonDone(r.text) ? 'ok' : r;
  }],
  [10, 'stream dropped', async () => {
    const r = await send('POST', '/v1/completions', { prompt: prompt(), max_tokens: 64, ignore_eos: true, stream: true }, { drop: 'first-chunk' });
    if (r.dropped) counts.streamDrops++;
    return r.dropped || (r.status === 200 && sse(r.text)) ? 'ok' : r;
  }],
  [5, 'abandoned', async () => {
    const r = await send('POST', '/api/chat', { messages: [{ role: 'user', content: prompt() }], stream: false, options: { num_predict: 32 } }, { drop: 20 + Math.floor(random() * 300) });
    if (r.dropped) counts.abandons++;
    return r.dropped || (r.status === 200 && JSON.parse(r.text).done === true) ? 'ok' : r;
  }],
  [5, 'oversized', async () => {
    const r = await send('POST', '/v1/completions', JSON.stringify({ prompt: 'x'.repeat(maxBody + 1000) }));
    counts.provokedErrors++;
    return r.status === 413 ? 'ok' : r;
  }],
  [5, 'malformed', async () => {
    const bodies = ['{"prompt": "a", ', 'not json', '[1,2]', '{"messages": 5}', '{"prompt": "\\ud800"', '\u0000\u0001'];
    const r = await send('POST', random() < 0.5 ? '/v1/completions' : '/v1/chat/completions', bodies[Math.floor(random() * bodies.length)]);
    counts.provokedErrors++;
    return r.status === 400 ? 'ok' : r;
  }],
  [5, 'bad route', async () => {
    const r = random() < 0.5 ? await send('GET', '/v1/nothing-here') : await send('DELETE', '/v1/completions');
    counts.provokedErrors++;
    return r.status === 404 || r.status === 405 ? 'ok' : r;
  }],
  [15, 'cheap GET', async () => {
    const r = await send('GET', ['/health', '/v1/models', '/api/tags', '/api/version', '/api/ps'][Math.floor(random() * 5)]);
    return r.status === 200 ? 'ok' : r;
  }],
];
const totalShare = kinds.reduce((s, k) => s + k[0], 0);

async function worker() {
  while (Date.now() < endAt) {
    let pick = random() * totalShare, kind = kinds[0];
    for (const k of kinds) if ((pick -= k[0]) < 0) { kind = k; break; }
    let verdict;
    try {
      verdict = await kind[2]();
    } catch (e) {
      verdict = { error: String(e) };
    }
    if (verdict === 'ok') counts.ok++;
    else note(`${kind[1]}: ${verdict.status ?? ''} ${verdict.error ?? ''} ${(verdict.text ?? '').slice(0, 160)}`);
  }
}

const started = Date.now();
await Promise.all(Array.from({ length: connections }, worker));
const seconds = (Date.now() - started) / 1000;
await new Promise((r) => setTimeout(r, 1500)); // the server notices the last hang-ups

const metricsText = (await send('GET', '/metrics')).text ?? '';
const metric = (name) => Number(new RegExp(`^${name} (\\S+)`, 'm').exec(metricsText)?.[1]);
const m = {
  http_requests: metric('sprout_http_requests_total'),
  http_errors: metric('sprout_http_errors_total'),
  requests_done: metric('sprout_requests_total'),
  cancelled: metric('sprout_requests_cancelled_total'),
  rejected: metric('sprout_requests_rejected_total'),
  timeouts: metric('sprout_http_timeouts_total'),
};
// The server counts every request it read (the /metrics one too); a request the client abandoned may have been
// cut before its headers were read. Errors: the ones provoked, plus abandoned plain requests the server ended with
// an error status once it saw the client gone.
const inconsistent = [];
if (!(m.http_requests <= counts.sent + 0 && m.http_requests >= counts.sent - counts.abandons - counts.streamDrops)) inconsistent.push('http_requests');
if (!(m.http_errors >= counts.provokedErrors && m.http_errors <= counts.provokedErrors + counts.abandons)) inconsistent.push('http_errors');
if (!(m.cancelled <= counts.streamDrops + counts.abandons)) inconsistent.push('cancelled');
if (!(m.requests_done >= counts.generations)) inconsistent.push('requests_done');
if (m.rejected !== 0) inconsistent.push('rejected');
console.log(JSON.stringify({ seconds: Math.round(seconds), connections, ...counts, requests_per_s: +(counts.sent / seconds).toFixed(1), metrics: m, inconsistent, unexpected_samples: unexpected }));
process.exit(counts.unexpected || inconsistent.length ? 1 : 0);
