// One `sprout serve` without -m over a store made for the test: models
// created through the ollama client (a blob uploaded, then `files`; another
// `from` the first with its own SYSTEM and PARAMETERs), listed, shown,
// copied, deleted, chatted with, loaded on demand and unloaded (keep_alive
// 0, a memory budget that holds one model, --max-loaded 1); the openai
// client's models.list sees them all; `sprout ps` and `sprout stop` talk
// to the same server.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { check, checkRejects, clients, finish, MODEL, postJson, SPROUT, startServer } from './harness.mjs';

const run = promisify(execFile);
const { OpenAI, Ollama } = clients();
const root = mkdtempSync(join(tmpdir(), 'sprout-models-'));
process.on('exit', () => rmSync(root, { recursive: true, force: true }));
const env = { ...process.env, SPROUT_MODELS: join(root, 'store'), OLLAMA_MODELS: join(root, 'ollama-empty') };
delete env.SPROUT_HOST;

// 4 slots of 2048 tokens: each model is its file and about 5 MiB of KV
// cache, so a budget of 10 MiB holds one of them and not two
const server = await startServer(['--parallel', '4', '-c', '2048', '--max-memory', '10M'], { model: null, env });
const ollama = new Ollama({ host: server.url });
const names = async () => (await ollama.list()).models.map((m) => m.name).sort();
const loaded = async () => (await ollama.ps()).models.map((m) => m.name);

// --- a blob, then models made of it ---
const bytes = readFileSync(MODEL);
const digest = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
check((await fetch(`${server.url}/api/blobs/${digest}`, { method: 'HEAD' })).status === 404, 'HEAD of a blob not uploaded: 404');
const wrong = `sha256:${'0'.repeat(64)}`;
const bad = await fetch(`${server.url}/api/blobs/${wrong}`, { method: 'POST', body: bytes });
check(bad.status === 400, 'a blob whose bytes do not match its digest: 400', bad.status);
const up = await fetch(`${server.url}/api/blobs/${digest}`, { method: 'POST', body: bytes });
check(up.status === 201, 'blob upload: 201', up.status);
check((await fetch(`${server.url}/api/blobs/${digest}`, { method: 'HEAD' })).status === 200, 'HEAD of an uploaded blob: 200');

const created = await ollama.create({ model: 'story-a', files: { 'stories260K.gguf': digest }, stream: false });
check(created.status === 'success', 'create from an uploaded file', created);
const lines = [];
for await (const part of await ollama.create({
  model: 'story-b', from: 'story-a', system: 'You are B.', parameters: { num_predict: 3, temperature: 0 },
  messages: [{ role: 'user', content: 'Who are you?' }, { role: 'assistant', content: 'A story teller.' }], stream: true,
})) lines.push(part.status);
check(lines.at(-1) === 'success' && lines.length > 1, 'create streams status lines ending in success', lines);

// from a GGUF path (the ollama client refuses local paths: the body as Ollama's CLI sends it)
const byPath = await postJson(`${server.url}/api/create`, { model: 'story-p', from: MODEL, stream: false });
check(byPath.status === 200 && byPath.json?.status === 'success', 'create from a path', byPath.text);
check((await names()).includes('story-p:latest'), 'list: the model made from a path');
await ollama.delete({ model: 'story-p' });
const badCreate = await postJson(`${server.url}/api/create`, { model: 'story-x', from: 'no-such-model', stream: false });
check(badCreate.status >= 400 && badCreate.json?.error, 'create from an unknown model fails', badCreate.text);
await checkRejects((async () => {
  for await (const part of await ollama.create({ model: 'story-x', from: 'no-such-model', stream: true })) void part;
})(), 'a streamed create from an unknown model ends in an error', (e) => /no-such-model/.test(e.message));
check(JSON.stringify(await names()) === '["story-a:latest","story-b:latest"]', 'list: both models', await names());
const tag = (await ollama.list()).models.find((m) => m.name === 'story-a:latest');
check(tag.size === bytes.length && /^[0-9a-f]{64}$/.test(tag.digest) && tag.details.family === 'llama' && tag.details.format === 'gguf',
  'list: size, digest and details', tag);
const openai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused' });
const ids = [];
for await (const m of openai.models.list()) ids.push(m.id);
check(JSON.stringify(ids.sort()) === '["story-a:latest","story-b:latest"]', 'openai models.list sees them all', ids);

const shown = await ollama.show({ model: 'story-b' });
check(shown.system === 'You are B.', 'show: SYSTEM', shown.system);
check(/num_predict\s+3/.test(shown.parameters) && /temperature\s+0/.test(shown.parameters), 'show: parameters', shown.parameters);
check(/^FROM /m.test(shown.modelfile) && /SYSTEM/.test(shown.modelfile), 'show: the Modelfile', shown.modelfile);
check(shown.model_info['general.architecture'] === 'llama' && shown.details.family === 'llama', 'show: model_info and details');
check(shown.capabilities.includes('completion'), 'show: capabilities', shown.capabilities);
check(JSON.stringify(await loaded()) === '[]', 'nothing loaded before a request');

// --- loaded on first use, the Modelfile's parameters under the request's options ---
const ask = (model, options = {}, extra = {}) =>
  ollama.chat({ model, messages: [{ role: 'user', content: 'Once upon a time' }], options: { temperature: 0, ...options }, ...extra });
const metric = async (name) => Number(new RegExp(`^${name} (\\d+)`, 'm').exec(await (await fetch(`${server.url}/metrics`)).text())?.[1]);
// three at once for a model not loaded: one load, the others wait for it
const [a] = await Promise.all([ask('story-a', { num_predict: 8 }), ask('story-a', { num_predict: 2 }), ask('story-a', { num_predict: 2 })]);
check(a.message.content.length > 0 && a.eval_count === 8, 'chat with story-a', a);
check(await metric('sprout_model_loads_total') === 1, 'three requests, one load', await metric('sprout_model_loads_total'));
const ps = (await ollama.ps()).models;
check(ps.length === 1 && ps[0].name === 'story-a:latest' && ps[0].context_length === 2048 && ps[0].size_vram === 0, 'ps: story-a', ps);
const expires = Date.parse(ps[0].expires_at) - Date.now();
check(expires > 4 * 60e3 && expires <= 5 * 60e3 + 1000, 'ps: expires in the default 5 minutes', ps[0].expires_at);
const b = await ask('story-b');
check(b.eval_count <= 3, "story-b's PARAMETER num_predict 3 is the default", b.eval_count);
check(b.prompt_eval_count > a.prompt_eval_count + 8, "story-b's SYSTEM and MESSAGEs come before the request's", a.prompt_eval_count, b.prompt_eval_count);
check(JSON.stringify(shown.messages) === JSON.stringify([{ role: 'user', content: 'Who are you?' }, { role: 'assistant', content: 'A story teller.' }]),
  'show: messages', shown.messages);
const b6 = await ask('story-b', { num_predict: 6 });
check(b6.eval_count > 3, "the request's options override the Modelfile's", b6.eval_count);
check(JSON.stringify(await loaded()) === '["story-b:latest"]', 'the memory budget: loading story-b unloaded idle story-a', await loaded());
// both at once with room for one: the second waits for the first to go idle
const [x, y] = await Promise.all([ask('story-a', { num_predict: 4 }), ask('story-b', { num_predict: 4 })]);
check(x.eval_count === 4 && y.eval_count <= 4, 'two models at once within a budget of one');

// --- unloading: keep_alive 0, and `sprout stop` ---
await ollama.generate({ model: 'story-b', prompt: 'Hi', keep_alive: 0, options: { num_predict: 1 } });
await ollama.generate({ model: 'story-a', prompt: '', keep_alive: 0 });
check(JSON.stringify(await loaded()) === '[]', 'keep_alive 0 unloads after the request', await loaded());
await ollama.generate({ model: 'story-a', prompt: '', keep_alive: '1h' }); // a preload
const kept = (await ollama.ps()).models;
check(kept.length === 1 && Date.parse(kept[0].expires_at) - Date.now() > 50 * 60e3, 'an empty request preloads, keep_alive "1h"', kept);
const host = ['--host', server.url.replace('http://', '')];
const psOut = (await run(SPROUT, ['ps', ...host])).stdout;
check(/^NAME/.test(psOut) && /story-a:latest .*100% CPU .*2048/.test(psOut), 'sprout ps lists the loaded model', psOut);
await run(SPROUT, ['stop', 'story-a', ...host]);
check(JSON.stringify(await loaded()) === '[]', 'sprout stop unloads it', await loaded());
await checkRejects(run(SPROUT, ['stop', 'nope', ...host]), 'sprout stop of an unknown model', (e) => e.code === 1 && /story-a:latest/.test(e.stderr));
await checkRejects(run(SPROUT, ['ps', '--host', '127.0.0.1:1']), 'sprout ps without a server', (e) => e.code === 1 && /cannot connect/.test(e.stderr));

// --- copy, delete, unknown names ---
await ollama.copy({ source: 'story-a', destination: 'story-c' });
check((await names()).includes('story-c:latest'), 'copy');
const c = await ask('story-c', { num_predict: 2 });
check(c.eval_count === 2, 'chat with the copy');
await ollama.delete({ model: 'story-c' });
check(!(await names()).includes('story-c:latest'), 'delete');
await checkRejects(ask('story-c'), 'a deleted model', (e) => e.status_code === 404);
await checkRejects(ask('no-such-model'), 'an unknown model: 404 naming the models there are',
  (e) => e.status_code === 404 && /story-a:latest/.test(e.message) && /story-b:latest/.test(e.message));
const missing = await postJson(`${server.url}/v1/chat/completions`, { model: 'gone', messages: [{ role: 'user', content: 'x' }] });
check(missing.status === 404 && /story-b:latest/.test(missing.json?.error?.message), 'OpenAI route: 404 naming them', missing.text);
check(await metric('sprout_model_unloads_total') >= 4 && await metric('sprout_models_loaded') <= 1, 'metrics count unloads');
const stopped = await server.stop();
check(stopped.code === 0, 'the server stops cleanly', stopped);

// --- --max-loaded 1: a second model unloads the idle first, or waits for a busy one, then 503 ---
const one = await startServer(['--max-loaded', '1', '--parallel', '1', '-c', '16384', '--load-timeout', '300ms'], { model: null, env });
const small = new Ollama({ host: one.url });
await small.generate({ model: 'story-a', prompt: '' });
await small.generate({ model: 'story-b', prompt: '' });
const only = (await small.ps()).models.map((m) => m.name);
check(JSON.stringify(only) === '["story-b:latest"]', '--max-loaded 1: loading story-b unloaded story-a', only);
// story-b kept busy by a stream the test holds open (16,000 tokens would take
// seconds even on a fast machine) until story-a has been refused; then the
// stream is dropped, which cancels it
const hold = new AbortController();
const busy = await fetch(`${one.url}/v1/completions`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, signal: hold.signal,
  body: JSON.stringify({ model: 'story-b', prompt: 'Once', max_tokens: 16000, ignore_eos: true, stream: true }) });
const reader = busy.body.getReader();
await reader.read(); /* generating */
const started = Date.now();
const refused = await postJson(`${one.url}/api/generate`, { model: 'story-a', prompt: 'Once', stream: false });
const waited = Date.now() - started;
check(refused.status === 503 && /no room/.test(refused.text) && waited >= 250, 'a busy model and no room: 503 after --load-timeout', refused.text, waited);
hold.abort();
await reader.closed.catch(() => {});
// with the stream gone, story-b is idle and story-a loads in its place
const after = await small.generate({ model: 'story-a', prompt: 'Once', options: { num_predict: 4 } });
check(after.done && after.eval_count > 0, 'after the busy stream is cancelled, story-a loads', after);
check((await one.stop()).code === 0, 'the second server stops cleanly');
finish();
