// Continuous batching, measured: aggregate decode tokens/s of `sprout serve`
// with 1, 2, 4 and 8 concurrent streams (OpenAI completions, greedy,
// ignore_eos so every stream generates exactly -n tokens).
//
// usage: node bench/serve_batching.mjs SPROUT MODEL.gguf [-n TOKENS] [-t THREADS] [--stream]
//   MODEL: e.g. a TinyLlama-1.1B-shaped Q4_0 file from bench/make_model
// Prints a markdown table: streams, aggregate tokens/s, ratio to one stream,
// mean time per output token seen by each client.
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
const args = ['serve', '-m', model, '--port', '0', '--parallel', '8', '-c', '512', ...(threads ? ['-t', String(threads)] : [])];
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
