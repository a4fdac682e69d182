// Fill in the middle (a prefix, a hole, a suffix) through the real clients:
// OpenAI's completions and Ollama's generate with `suffix`, on a toy model
// with Qwen2's real vocabulary (make_model's qwen2-tiny, written here): the
// prompt is <|fim_prefix|> prefix <|fim_suffix|> suffix <|fim_middle|>, as
// Ollama's `context` shows; `insert` among the capabilities; streamed equals
// whole. On stories260K (no FIM tokens) a suffix is refused naming why.
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { check, checkRejects, clients, finish, postJson, startServer } from './harness.mjs';

const { OpenAI, Ollama } = clients();
const dir = mkdtempSync(join(tmpdir(), 'sprout-fim-'));
const model = join(dir, 'qwen2-tiny.gguf');
const made = spawnSync(process.env.SPROUT_MAKE_MODEL, ['qwen2-tiny', 'Q8_0', model], { encoding: 'utf8' });
check(made.status === 0, 'make_model qwen2-tiny', made.stderr);

const server = await startServer(['-m', model, '-c', '256']);
const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
const ollama = new Ollama({ host: server.url });
const prefix = 'def add(a, b):\n    ', suffix = '\n    return c\n';
const ids = async (text) => (await postJson(`${server.url}/tokenize`, { content: text, parse_special: false })).json.tokens;
const [pre, suf] = [await ids(prefix), await ids(suffix)];
const want = [151659, ...pre, 151661, ...suf, 151660];

const show = await ollama.show({ model: 'qwen2-tiny' });
check(show.capabilities.includes('insert') && show.capabilities.includes('completion'), 'capabilities', show.capabilities);

// Ollama: the prompt as `context` gives it back (then the reply's ids)
const g = await ollama.generate({ model: 'qwen2-tiny', prompt: prefix, suffix, options: { num_predict: 6, temperature: 0 } });
check(JSON.stringify(g.context.slice(0, want.length)) === JSON.stringify(want) && g.prompt_eval_count === want.length,
  'generate with suffix', g.context.slice(0, want.length + 2), want);
let streamed = '';
for await (const part of await ollama.generate({ model: 'qwen2-tiny', prompt: prefix, suffix, stream: true, options: { num_predict: 6, temperature: 0 } }))
  streamed += part.response;
check(streamed === g.response, 'streamed = whole', JSON.stringify(streamed), JSON.stringify(g.response));
// an empty prefix is a prompt too (not Ollama's "load" answer)
const empty = await ollama.generate({ model: 'qwen2-tiny', prompt: '', suffix, options: { num_predict: 2, temperature: 0 } });
check(empty.done_reason !== 'load' && JSON.stringify(empty.context.slice(0, suf.length + 3)) === JSON.stringify([151659, 151661, ...suf, 151660]),
  'empty prefix', empty.done_reason, empty.context?.slice(0, 8));

// OpenAI completions
const c = await client.completions.create({ model: 'qwen2-tiny', prompt: prefix, suffix, max_tokens: 6, temperature: 0 });
check(c.usage.prompt_tokens === want.length && c.choices[0].text === g.response, 'completions with suffix', c.usage, c.choices[0].text);
const bad = await postJson(`${server.url}/v1/completions`, { prompt: prefix, suffix: 7 });
check(bad.status === 400 && /suffix: expected a string/.test(bad.text), 'suffix not a string', bad.text);
check((await server.stop()).code === 0, 'clean exit');

// a model without FIM tokens
const stories = await startServer(['-c', '128']);
const sclient = new OpenAI({ baseURL: `${stories.url}/v1`, apiKey: 'unused', maxRetries: 0 });
await checkRejects(sclient.completions.create({ model: 'stories260K', prompt: 'a', suffix: 'b', max_tokens: 2 }), 'no FIM tokens',
  (err) => err.status === 400 && /fill-in-the-middle/.test(err.message));
const sollama = new Ollama({ host: stories.url });
const sshow = await sollama.show({ model: 'stories260K' });
check(!sshow.capabilities.includes('insert'), 'no insert capability', sshow.capabilities);
check((await stories.stop()).code === 0, 'clean exit (stories)');
finish();
