// Embeddings through the real clients: the openai SDK (whose default asks
// for base64) and the ollama SDK (embed, and the older embeddings), against
// each other, against `sprout embed` and against token-id input; shortened
// vectors, Ollama's truncation, errors that name the field, requests running
// together with a generation, and a client that leaves mid-request.
import { spawnSync } from 'node:child_process';
import { check, checkRejects, clients, finish, MODEL, postJson, SPROUT, startServer } from './harness.mjs';

const { OpenAI, Ollama } = clients();
const server = await startServer(['-c', '64', '--parallel', '4']);
const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
const ollama = new Ollama({ host: server.url });
const texts = ['Once upon a time', 'A cat sat', 'Lily wanted to play with her ball in the park.'];
const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
// the same float32s, whether they came as decimals (shortest that round-trip) or as base64 bytes
const same = (a, b) => a.length === b.length && a.every((x, i) => Math.fround(x) === Math.fround(b[i]));
const near = (a, b, tol) => a.length === b.length && a.every((x, i) => Math.abs(x - b[i]) <= tol);

// OpenAI, the SDK's default (base64), then floats: the same numbers
const r = await client.embeddings.create({ model: 'stories260K', input: texts });
check(r.object === 'list' && r.data.length === 3 && r.model === 'stories260K', 'openai list', r);
check(r.data.every((d, i) => d.index === i && d.object === 'embedding' && d.embedding.length === 64), 'openai entries');
check(r.data.every((d) => Math.abs(norm(d.embedding) - 1) < 1e-5), 'unit length', r.data.map((d) => norm(d.embedding)));
check(r.usage.prompt_tokens > 10 && r.usage.total_tokens === r.usage.prompt_tokens, 'usage', r.usage);
const floats = await client.embeddings.create({ model: 'stories260K', input: texts, encoding_format: 'float' });
check(floats.data.every((d, i) => same(d.embedding, r.data[i].embedding)), 'float and base64 agree');
const vec = r.data.map((d) => d.embedding);
check(!near(vec[0], vec[1], 1e-3), 'different texts, different vectors');

// the CLI and the server run the same engine
{
  const cli = spawnSync(SPROUT, ['embed', '-m', MODEL, '--json', ...texts.flatMap((t) => ['-p', t])], { encoding: 'utf8' });
  const data = cli.status === 0 ? JSON.parse(cli.stdout).data : [];
  check(data.length === 3 && data.every((d, i) => same(d.embedding, vec[i])), 'sprout embed gives the same vectors', cli.stderr);
}

// token ids are embedded as they are: the ids of the first text give its vector
{
  const ids = await postJson(`${server.url}/tokenize`, { content: texts[0], add_special: true });
  const tokens = ids.json?.tokens;
  check(Array.isArray(tokens) && tokens.length === 5, 'tokenize', ids.text);
  const byIds = await client.embeddings.create({ model: 'stories260K', input: tokens, encoding_format: 'float' });
  check(same(byIds.data[0].embedding, vec[0]), 'ids input');
  const two = await client.embeddings.create({ model: 'stories260K', input: [tokens, tokens.slice(0, 2)], encoding_format: 'float' });
  check(two.data.length === 2 && same(two.data[0].embedding, vec[0]) && !same(two.data[1].embedding, vec[0]), 'arrays of ids');
}

// dimensions: the first N numbers, unit length again
{
  const short = await client.embeddings.create({ model: 'stories260K', input: texts[0], dimensions: 16, encoding_format: 'float' });
  const e = short.data[0].embedding, n = norm(vec[0].slice(0, 16));
  check(e.length === 16 && Math.abs(norm(e) - 1) < 1e-5 && near(e, vec[0].slice(0, 16).map((x) => x / n), 1e-6), 'dimensions');
}

// Ollama: embed gives the same unit vectors; the older embeddings the unscaled one
{
  const show = await ollama.show({ model: 'stories260K' });
  check(JSON.stringify(show.capabilities) === '["completion"]', 'capabilities of a model that writes text', show.capabilities);
  const e = await ollama.embed({ model: 'stories260K', input: texts });
  check(e.model === 'stories260K' && e.embeddings.length === 3 && e.embeddings.every((v, i) => same(v, vec[i])), 'ollama embed', e.embeddings?.length);
  check(e.prompt_eval_count === r.usage.prompt_tokens && e.total_duration > 0, 'ollama counts', e);
  const one = await ollama.embed({ model: 'stories260K', input: texts[1] });
  check(one.embeddings.length === 1 && same(one.embeddings[0], vec[1]), 'ollama embed one string');
  const old = await ollama.embeddings({ model: 'stories260K', prompt: texts[0] });
  const n = norm(old.embedding);
  check(old.embedding.length === 64 && Math.abs(n - 1) > 1e-3 && near(old.embedding.map((x) => x / n), vec[0], 1e-6), 'ollama embeddings (unscaled)', n);
  const none = await postJson(`${server.url}/api/embed`, { model: 'stories260K', input: [] });
  check(none.status === 200 && Array.isArray(none.json.embeddings) && none.json.embeddings.length === 0, 'ollama no input', none.text);
  const empty = await postJson(`${server.url}/api/embeddings`, { model: 'stories260K', prompt: '' });
  check(empty.status === 200 && empty.json.embedding?.length === 0, 'ollama empty prompt', empty.text);
}

// longer than the context (64): Ollama cuts by default, refuses with truncate false; OpenAI refuses
{
  const long = 'The dog ran and ran. '.repeat(30);
  const cut = await ollama.embed({ model: 'stories260K', input: long });
  check(cut.embeddings[0].length === 64 && cut.prompt_eval_count === 64, 'truncated to the context', cut.prompt_eval_count);
  await checkRejects(ollama.embed({ model: 'stories260K', input: long, truncate: false }), 'truncate false',
    (err) => err.status_code === 400 && /at most 64 fit/.test(err.message));
  await checkRejects(client.embeddings.create({ model: 'stories260K', input: ['ok', long] }), 'openai too long',
    (err) => err.status === 400 && /input\[1\] has \d+ tokens/.test(err.message));
  const opts = await postJson(`${server.url}/api/embed`, { input: texts[2], options: { num_ctx: 4 } });
  check(opts.status === 200 && opts.json.prompt_eval_count === 4, 'num_ctx bounds the input', opts.text);
}

// errors name the field
for (const [url, body, re] of [
  ['/v1/embeddings', { input: '' }, /input: the text is empty/],
  ['/v1/embeddings', { input: [] }, /input: the array is empty/],
  ['/v1/embeddings', {}, /input: required/],
  ['/v1/embeddings', { input: 5 }, /input: expected a string or an array/],
  ['/v1/embeddings', { input: ['a', 3] }, /input\[1\]: expected a string or an array of token ids/],
  ['/v1/embeddings', { input: [[1, -2]] }, /input\[0\]\[1\]: expected a token id/],
  ['/v1/embeddings', { input: [1, 99999] }, /id 99999 is outside the vocabulary/],
  ['/v1/embeddings', { input: 'a', encoding_format: 'hex' }, /encoding_format/],
  ['/v1/embeddings', { input: 'a', dimensions: 65 }, /dimensions: 65 is more than the model's 64/],
  ['/v1/embeddings', { input: 'a', dimensions: 0 }, /dimensions: 0 is outside/],
  ['/v1/embeddings', { input: Array(2049).fill('a') }, /2049 inputs \(at most 2048\)/],
  ['/api/embed', { input: [{}] }, /input\[0\]: expected a string, got an object/],
  ['/api/embed', { input: 'a', truncate: 'no' }, /truncate: expected a boolean/],
  ['/api/embeddings', { prompt: ['a'] }, /prompt: expected a string, got an array/],
]) {
  const res = await postJson(`${server.url}${url}`, body);
  check(res.status === 400 && re.test(res.text), `${url} ${JSON.stringify(body).slice(0, 60)}`, res.status, res.text);
}
{
  const wrong = await postJson(`${server.url}/v1/embeddings`, { model: 'other', input: 'a' });
  check(wrong.status === 404 && /not found/.test(wrong.text), 'unknown model', wrong.text);
  const bad = await fetch(`${server.url}/api/embed`, { method: 'POST', body: '{"input": ' });
  check(bad.status === 400 && /invalid JSON/.test(await bad.text()), 'malformed JSON');
}

// many at once, beside a generation: each as alone, the generation too
{
  const gen = { model: 'stories260K', prompt: texts[0], max_tokens: 24, temperature: 0 };
  const alone = (await client.completions.create(gen)).choices[0].text;
  const jobs = [client.completions.create(gen)];
  for (let k = 0; k < 6; k++) jobs.push(client.embeddings.create({ model: 'stories260K', input: [texts[k % 3], texts[(k + 1) % 3]], encoding_format: 'float' }));
  jobs.push(ollama.embed({ model: 'stories260K', input: texts }));
  const out = await Promise.all(jobs);
  check(out[0].choices[0].text === alone, 'generation beside embeddings', out[0].choices[0].text, alone);
  for (let k = 0; k < 6; k++) check(same(out[k + 1].data[0].embedding, vec[k % 3]) && same(out[k + 1].data[1].embedding, vec[(k + 1) % 3]), `concurrent ${k}`);
  check(out[7].embeddings.every((v, i) => same(v, vec[i])), 'concurrent ollama');
}

// a client that leaves in the middle of 2000 inputs: the rest is cancelled, the server goes on
{
  const requestsDone = async () => Number(/sprout_requests_total (\d+)/.exec(await (await fetch(`${server.url}/metrics`)).text())[1]);
  const before = await requestsDone();
  const ac = new AbortController();
  const many = fetch(`${server.url}/v1/embeddings`, {
    method: 'POST', body: JSON.stringify({ input: Array.from({ length: 2000 }, (_, i) => `story number ${i} about a cat`) }), signal: ac.signal,
  }).catch((e) => e);
  // hang up once some of the inputs have run (a fixed wait missed them on a loaded host)
  for (let i = 0; i < 1000 && (await requestsDone()) === before; i++) await new Promise((res) => setTimeout(res, 10));
  ac.abort();
  await many;
  const t0 = Date.now();
  const after = await client.embeddings.create({ model: 'stories260K', input: texts[0], encoding_format: 'float' });
  check(same(after.data[0].embedding, vec[0]), 'after a hang-up');
  for (let i = 0; i < 50; i++) {
    const ps = await (await fetch(`${server.url}/metrics`)).text();
    if (/sprout_busy_slots 0/.test(ps)) break;
    await new Promise((res) => setTimeout(res, 100));
  }
  check(/sprout_busy_slots 0/.test(await (await fetch(`${server.url}/metrics`)).text()), 'slots free after a hang-up', Date.now() - t0);
  const ran = (await requestsDone()) - before;
  check(ran > 1 && ran < 1500, 'the inputs after the hang-up never ran', ran);
}

const stopped = await server.stop();
check(stopped.code === 0, 'clean exit', stopped);
finish();
