// LoRA adapters through `sprout serve`, in llama-server's API shape, on the
// real stories260K model with random adapters that make_lora writes here:
// GET/POST /lora-adapters, a request's own "lora" list (listed adapters
// only, the rest at 0), greedy texts equal to `sprout run --lora`, requests
// with different sets at once equal to each alone, Ollama's endpoints, bad
// ids and scales (400), /api/show and /metrics naming the adapters,
// --lora-init-without-apply, and a hostile adapter that stops the server.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MODEL, SPROUT, check, checkRejects, clients, finish, postJson, startServer } from './harness.mjs';

const { OpenAI, Ollama } = clients();
const dir = mkdtempSync(join(tmpdir(), 'sprout-lora-'));
function makeLora(name, ...args) {
  const out = join(dir, name);
  const r = spawnSync(process.env.SPROUT_MAKE_LORA, [MODEL, out, ...args], { encoding: 'utf8' });
  check(r.status === 0, `make_lora ${name}`, r.stderr);
  return out;
}
const A = makeLora('a.gguf', '--seed', '1');
const B = makeLora('b.gguf', '--seed', '2', '--rank', '4', '--targets', 'attn');
const hostile = makeLora('hostile.gguf', '--hostile', 'shape');

const PROMPT = 'Once upon a time', N = 24;
// what `sprout run` prints for the prompt, greedy, with these flags (its last newline is its own)
function run(...flags) {
  const r = spawnSync(SPROUT, ['run', '-m', MODEL, '--temp', '0', '-n', String(N), '-p', PROMPT, ...flags], { encoding: 'utf8' });
  check(r.status === 0, `sprout run ${flags.join(' ')}`, r.stderr);
  return r.stdout.replace(/\n$/, '');
}
const base = run(), withA = run('--lora', A), withB = run('--lora-scaled', B, '0.5'), both = run('--lora', A, '--lora-scaled', B, '0.5');
check(withA !== base && withB !== base && both !== withA, 'the adapters change the text', base, withA, withB);

const server = await startServer(['-c', '256', '--parallel', '4', '--lora', A, '--lora-scaled', B, '0.5']);
const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
const ollama = new Ollama({ host: server.url });
const get = async () => (await (await fetch(`${server.url}/lora-adapters`)).json());
// a greedy completion with this request's "lora" (undefined: none, the server's defaults)
async function complete(lora) {
  const r = await postJson(`${server.url}/v1/completions`, { prompt: PROMPT, max_tokens: N, temperature: 0, ...(lora ? { lora } : {}) });
  check(r.status === 200, `completion with ${JSON.stringify(lora)}`, r.text);
  return r.json?.choices?.[0]?.text;
}

// GET /lora-adapters: ids in the order given, paths, scales, llama-server's extra fields
{
  const list = await get();
  check(list.length === 2 && list[0].id === 0 && list[0].path === A && list[0].scale === 1 && list[1].id === 1 && list[1].path === B &&
    list[1].scale === 0.5, 'GET /lora-adapters', list);
  check(list.every((a) => a.task_name === '' && a.prompt_prefix === ''), 'task_name and prompt_prefix', list);
}

// a request's list replaces the defaults: listed adapters only
check(await complete([{ id: 0, scale: 0 }]) === base, 'lora [{0, 0}] is the base model');
check(await complete([]) === base, 'an empty list is the base model');
check(await complete([{ id: 0, scale: 1 }]) === withA, 'lora [{0, 1}] = sprout run --lora A', withA);
check(await complete([{ id: 1, scale: 0.5 }]) === withB, 'lora [{1, 0.5}] = sprout run --lora-scaled B 0.5');
check(await complete() === both, 'no lora: the defaults (A at 1, B at 0.5)', both);
{
  // the official client passes the field through
  const r = await client.completions.create({ model: 'stories260K', prompt: PROMPT, max_tokens: N, temperature: 0, lora: [{ id: 0, scale: 1 }] });
  check(r.choices[0].text === withA, 'openai client with lora', r.choices[0].text);
}

// POST /lora-adapters sets the defaults; unlisted adapters go to 0
{
  const r = await postJson(`${server.url}/lora-adapters`, [{ id: 1, scale: 0.5 }]);
  check(r.status === 200 && r.json?.success === true, 'POST /lora-adapters', r.text);
  const list = await get();
  check(list[0].scale === 0 && list[1].scale === 0.5, 'unlisted adapters at 0', list);
  check(await complete() === withB, 'a request without lora follows the new defaults');
  check(await complete([{ id: 0, scale: 1 }]) === withA, 'a request with lora still replaces them');
  const zero = await postJson(`${server.url}/lora-adapters`, []);
  check(zero.status === 200 && (await complete()) === base, 'POST [] turns every adapter off', zero.text);
  await postJson(`${server.url}/lora-adapters`, [{ id: 0, scale: 1 }, { id: 1, scale: 0.5 }]);
}

// different sets at once: each equals the same request alone
{
  const sets = [[], [{ id: 0, scale: 1 }], [{ id: 1, scale: 0.5 }], [{ id: 0, scale: 0.5 }, { id: 1, scale: 1 }]];
  const alone = [];
  for (const s of sets) alone.push(await complete(s));
  for (let round = 0; round < 2; round++) {
    const together = await Promise.all(sets.map((s) => complete(s)));
    sets.forEach((s, i) => check(together[i] === alone[i], `at once = alone, set ${JSON.stringify(s)}`, together[i], alone[i]));
  }
  check(new Set(alone).size === sets.length, 'four sets, four texts', alone);
}

// Ollama's endpoints take the same top-level field
{
  const options = { num_predict: N, temperature: 0, repeat_penalty: 1 };
  const g = await ollama.generate({ model: 'stories260K', prompt: PROMPT, raw: true, options, lora: [{ id: 0, scale: 1 }] });
  check(g.response === withA, 'ollama generate with lora', g.response);
  const g0 = await ollama.generate({ model: 'stories260K', prompt: PROMPT, raw: true, options, lora: [] });
  check(g0.response === base, 'ollama generate with an empty list', g0.response);
  const c = await postJson(`${server.url}/api/chat`, { messages: [{ role: 'user', content: 'hi' }], stream: false, options, lora: [{ id: 1, scale: 2 }] });
  check(c.status === 200 && typeof c.json?.message?.content === 'string', 'ollama chat with lora', c.text);
  const bad = await postJson(`${server.url}/api/generate`, { prompt: PROMPT, lora: [{ id: 2, scale: 1 }] });
  check(bad.status === 400 && /invalid adapter id 2/.test(bad.json?.error), 'ollama: a bad id is 400 in its shape', bad.text);
}

// bad lists: 400 with the field named, OpenAI's error shape
{
  await checkRejects(client.completions.create({ model: 'stories260K', prompt: PROMPT, max_tokens: 2, lora: [{ id: 2, scale: 1 }] }), 'invalid id',
    (e) => e.status === 400 && /invalid adapter id 2/.test(e.message));
  const cases = [
    [{ lora: [{ id: 0, scale: 'x' }] }, /lora\[0\]\.scale: expected a number/],
    [{ lora: [{ id: -1, scale: 1 }] }, /lora\[0\]\.id: expected an adapter id/],
    [{ lora: [{ scale: 1 }] }, /lora\[0\]\.id/],
    [{ lora: { id: 0 } }, /lora: expected an array/],
    [{ lora: [3] }, /lora\[0\]: expected an object/],
  ];
  for (const [extra, re] of cases) {
    const r = await postJson(`${server.url}/v1/chat/completions`, { messages: [{ role: 'user', content: 'hi' }], max_tokens: 2, ...extra });
    check(r.status === 400 && re.test(r.json?.error?.message) && r.json?.error?.type === 'invalid_request_error', `400 for ${JSON.stringify(extra)}`, r.text);
  }
  const posts = [['[{"id": 9, "scale": 1}]', /invalid adapter id 9/], ['[{"id": 0, "scale": "1"}]', /scale: expected a number/],
    ['[{"id": 0', /invalid JSON/], ['{"id": 0, "scale": 1}', /expected an array/]];
  for (const [body, re] of posts) {
    const r = await postJson(`${server.url}/lora-adapters`, body);
    check(r.status === 400 && re.test(r.json?.error?.message), `POST /lora-adapters ${body}`, r.text);
  }
  const list = await get();
  check(list[0].scale === 1 && list[1].scale === 0.5, 'refused POSTs change nothing', list);
}

// /api/show and /metrics name the adapters
{
  const show = await ollama.show({ model: 'stories260K' });
  check(show.modelfile.includes(`\nADAPTER ${A}\nADAPTER ${B}\n`), 'Modelfile ADAPTER lines', show.modelfile);
  const raw = (await postJson(`${server.url}/api/show`, { model: 'stories260K' })).json;
  check(raw.adapters?.length === 2 && raw.adapters[1].id === 1 && raw.adapters[1].path === B && raw.adapters[1].scale === 0.5, 'show adapters', raw.adapters);
  const metrics = await (await fetch(`${server.url}/metrics`)).text();
  check(/# TYPE sprout_lora_adapter_scale gauge/.test(metrics) && metrics.includes(`sprout_lora_adapter_scale{id="0",path="${A}"} 1\n`) &&
    metrics.includes(`sprout_lora_adapter_scale{id="1",path="${B}"} 0.5\n`), 'metrics gauges', metrics);
}
check((await server.stop()).code === 0, 'clean exit');

// --lora-init-without-apply: every adapter at 0 until asked; a path that needs escaping in a label
{
  const odd = join(dir, 'odd"name\\x.gguf');
  copyFileSync(A, odd);
  const s = await startServer(['-c', '256', '--lora-scaled', odd, '2', '--lora-init-without-apply']);
  const list = await (await fetch(`${s.url}/lora-adapters`)).json();
  check(list.length === 1 && list[0].scale === 0 && list[0].path === odd, 'init without apply: scale 0', list);
  const r = await postJson(`${s.url}/v1/completions`, { prompt: PROMPT, max_tokens: N, temperature: 0 });
  check(r.json?.choices?.[0]?.text === base, 'init without apply: the base model', r.text);
  const r1 = await postJson(`${s.url}/v1/completions`, { prompt: PROMPT, max_tokens: N, temperature: 0, lora: [{ id: 0, scale: 1 }] });
  check(r1.json?.choices?.[0]?.text === withA, 'init without apply: a request applies it', r1.text);
  const metrics = await (await fetch(`${s.url}/metrics`)).text();
  check(metrics.includes(`sprout_lora_adapter_scale{id="0",path="${odd.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"} 0\n`), 'label escaped', metrics);
  check((await s.stop()).code === 0, 'clean exit (init without apply)');
}

// a server without adapters lists none and refuses any id
{
  const s = await startServer(['-c', '128']);
  const list = await (await fetch(`${s.url}/lora-adapters`)).json();
  check(Array.isArray(list) && list.length === 0, 'no adapters: []', list);
  const r = await postJson(`${s.url}/v1/completions`, { prompt: PROMPT, max_tokens: 2, lora: [{ id: 0, scale: 1 }] });
  check(r.status === 400 && /no adapters/.test(r.json?.error?.message), 'no adapters: id 0 refused', r.text);
  check((await s.stop()).code === 0, 'clean exit (no adapters)');
}

// a hostile adapter: the server does not start, and says which file and tensor
{
  const r = spawnSync(SPROUT, ['serve', '-m', MODEL, '--port', '0', '--lora', A, '--lora', hostile], { encoding: 'utf8', timeout: 30000 });
  check(r.status !== 0 && r.status !== null, 'hostile adapter: non-zero exit', r.status, r.signal);
  check(/cannot load the LoRA adapter/.test(r.stderr) && r.stderr.includes(hostile) && /tensor '[^']+\.lora_a'/.test(r.stderr),
    'hostile adapter: the file and the tensor named', r.stderr);
}
finish();
