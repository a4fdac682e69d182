// Continuous batching, measured: aggregate decode tokens/s of `sprout serve`
// with 1, 2, 4 and 8 concurrent streams (OpenAI completions, greedy,
// ignore_eos so every stream generates exactly -n tokens).
//
// usage: node bench/serve_batching.mjs SPROUT MODEL.gguf [-n TOKENS] [-t THREADS] [--stream]
//        node bench/serve_batching.mjs SPROUT MODEL.gguf --arrival [-p PROMPT_WORDS (300)] [-n TOKENS (160)] [-t THREADS]
//   MODEL: e.g. a TinyLlama-1.1B-shaped Q4_0 file from bench/make_model
// Prints a markdown table: streams, aggregate tokens/s, ratio to one stream,
// mean time per output token seen by each client.
// --arrival: 3 streams generate on `--parallel 4`; once each has 8 tokens a
// request with a long prompt arrives. Prints the streams' median gap
// between tokens before it arrived, their longest gap while its prompt was
// computed (the stall it caused), and its time to first token.
import { spawn } from 'node:child_process';

const [sprout, model, ...rest] = process.argv.slice(2);
const opt = (name, dflt) => (rest.indexOf(name) >= 0 ? Number(rest[rest.indexOf(name) + 1]) : dflt);
const nTokens = opt('-n', 64), threads = opt('-t', 0), counts = [1, 2, 4, 8];
// --stream: server-sent events (the client then parses every chunk, and on a
// small machine its CPU time is taken from the server's)
const STREAM = rest.includes('--stream');
if (!sprout || !model) {
  console.error('usage: node bench/serve_batching.mjs SPROUT MODEL.gguf [-n TOKENS] [-t THREADS]');
  process.exit(2);
}
const ARRIVAL = rest.includes('--arrival');
const args = ['serve', '-m', model, '--port', '0', '--parallel', ARRIVAL ? '4' : '8', '-c', ARRIVAL ? '1024' : '512', ...(threads ? ['-t', String(threads)] : [])];
const server = spawn(sprout, args, { stdio: ['ignore', 'ignore', 'pipe'] });
let log = '';
const url = await new Promise((resolve, reject) => {
  server.stderr.on('data', (d) => {
    log += d;
    const port = /listening on http:\/\/[^ ]*:(\d+)/.exec(log)?.[1];
    if (port && /ready/.test(log)) resolve(`http://127.0.0.1:${port}`);
  });
  server.on('exit', () => reject(new Error(log)));
});

const prompts = ['Once upon a time', 'The little dog', 'Mom said', 'The sun was', 'Bob and Sue', 'A cat sat', 'One day', 'The bird flew'];
async function stream(i) {
  const body = { prompt: prompts[i % prompts.length], max_tokens: nTokens, temperature: 0, ignore_eos: true, stream: STREAM, stream_options: STREAM ? { include_usage: true } : undefined };
  const r = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  const text = await r.text();
  const usage = STREAM ? text.split('\n').filter((l) => l.startsWith('data: {')).map((l) => JSON.parse(l.slice(6))).find((c) => c.usage)?.usage
                       : JSON.parse(text).usage;
  return usage?.completion_tokens ?? 0;
}

await stream(0); // warm-up: page in the weights
if (ARRIVAL) {
  await arrival();
  server.kill('SIGTERM');
  process.exit(0);
}
const rows = [];
for (const n of counts) {
  const t0 = performance.now();
  const tokens = (await Promise.all(Array.from({ length: n }, (_, i) => stream(i)))).reduce((a, b) => a + b, 0);
  const seconds = (performance.now() - t0) / 1e3;
  rows.push({ n, tps: tokens / seconds, tpot: (seconds * 1e3) / nTokens });
}
console.log(`| streams | aggregate tokens/s | vs 1 stream | ms per token per client |`);
console.log(`|---|---|---|---|`);
for (const r of rows) console.log(`| ${r.n} | ${r.tps.toFixed(1)} | ${(r.tps / rows[0].tps).toFixed(2)}x | ${r.tpot.toFixed(1)} |`);
server.kill('SIGTERM');

// One streamed completion: the time each chunk with text arrived, from t0.
async function timedStream(prompt, maxTokens, t0, onToken) {
  const body = { prompt, max_tokens: maxTokens, temperature: 0, ignore_eos: true, stream: true };
  const r = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  const times = [], decoder = new TextDecoder(), reader = r.body.getReader();
  let pending = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    pending += decoder.decode(value, { stream: true });
    const lines = pending.split('\n');
    pending = lines.pop();
    for (const l of lines) {
      if (!l.startsWith('data: {')) continue;
      if (JSON.parse(l.slice(6)).choices?.[0]?.text) {
        times.push(performance.now() - t0);
        onToken?.(times.length);
      }
    }
  }
  return times;
}

async function arrival() {
  const words = opt('-p', 300), nStream = 3, maxTokens = opt('-n', 160); // the streams outlast the long prompt's prefill
  const long = Array.from({ length: words }, (_, i) => ['the', 'little', 'dog', 'ran', 'to', 'a', 'big', 'tree', 'and', 'sat'][i % 10]).join(' ');
  const t0 = performance.now();
  let started = 0, tArrive = 0, tFirst = 0;
  let arrived;
  const arriving = new Promise((resolve) => (arrived = resolve));
  const streams = Array.from({ length: nStream }, (_, i) =>
    timedStream(prompts[i], maxTokens, t0, (n) => n === 8 && ++started === nStream && arrived()));
  await arriving;
  tArrive = performance.now() - t0;
  const longTimes = await timedStream(long, 4, t0, (n) => n === 1 && (tFirst = performance.now() - t0));
  const all = await Promise.all(streams);
  const gaps = (lo, hi) => all.flatMap((t) => t.slice(1).map((x, j) => [t[j], x - t[j]])).filter(([at]) => at >= lo && at < hi).map(([, g]) => g);
  const before = gaps(0, tArrive).slice().sort((a, b) => a - b), during = gaps(tArrive, tFirst);
  const cut = all.some((t) => t[t.length - 1] < tFirst);
  console.log(`| streams | long prompt (words) | median gap before (ms) | longest gap while it prefills (ms) | its time to first token (ms) |`);
  console.log(`|---|---|---|---|---|`);
  console.log(`| ${nStream} | ${words} | ${before[before.length >> 1].toFixed(0)} | ${Math.max(...during).toFixed(0)}${cut ? ' (streams ended first)' : ''} | ${(tFirst - tArrive).toFixed(0)} |`);
  if (!longTimes.length) console.error('the long request gave no text');
}
