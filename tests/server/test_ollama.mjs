// The official `ollama` npm client against `sprout serve` on the real
// stories260K model: list, show, ps, version, generate and chat (streamed
// and whole), options mapped onto sampling, llama.cpp's greedy references
// over HTTP, and errors.
import { check, checkRejects, clients, finish, postJson, reference, startServer } from './harness.mjs';

const { Ollama } = clients();
const server = await startServer(['-c', '256', '--parallel', '2', '--alias', 'stories']);
const ollama = new Ollama({ host: server.url });

// the root answers as Ollama's does, so tools that ping it find a server
{
  const root = await fetch(`${server.url}/`);
  check(root.status === 200 && (await root.text()) === 'sprout is running', 'GET /', root.status);
  const head = await fetch(`${server.url}/`, { method: 'HEAD' });
  check(head.status === 200, 'HEAD /', head.status);
  // and only the root: a path below it is not the root's
  const below = await fetch(`${server.url}/nope`);
  check(below.status === 404, 'GET /nope', below.status);
  const wrong = await fetch(`${server.url}/tokenize`);
  check(wrong.status === 405, 'GET of a POST endpoint', wrong.status);
}

const list = await ollama.list();
check(list.models.length === 1 && list.models[0].name === 'stories:latest' && list.models[0].details.format === 'gguf' &&
      list.models[0].details.family === 'llama' && list.models[0].size > 0, 'list', list.models[0]);

const show = await ollama.show({ model: 'stories' });
check(show.model_info['general.architecture'] === 'llama' && show.model_info['llama.block_count'] === 5 && typeof show.template === 'string' &&
      show.details.parameter_size.endsWith('K'), 'show', show.details, show.model_info['llama.block_count']);
check(show.model_info['tokenizer.ggml.tokens'] === null, 'show leaves the vocabulary out');
check(JSON.stringify(show.capabilities) === '["completion"]', 'capabilities of a model that writes text', show.capabilities);
// pull: the model served is there; nothing else is fetched
{
  const pulled = await ollama.pull({ model: 'stories', stream: false });
  check(pulled.status === 'success', 'pull of the model served', pulled);
  let last = null;
  for await (const part of await ollama.pull({ model: 'stories:latest', stream: true })) last = part;
  check(last?.status === 'success', 'streamed pull', last);
  await checkRejects(ollama.pull({ model: 'llama3.2' }), 'pull of another model', (err) => err.status_code === 404 && /downloads nothing/.test(err.message));
}

const ps = await ollama.ps();
check(ps.models.length === 1 && ps.models[0].name === 'stories:latest', 'ps', ps);
const version = await (await fetch(`${server.url}/api/version`)).json();
check(typeof version.version === 'string' && version.version.length > 0, 'version', version);

// raw generate reproduces llama.cpp's greedy references, whole and streamed
for (const c of reference().cases) {
  if (!c.prompt) continue;
  const options = { temperature: 0, repeat_penalty: 1, num_predict: c.n_generated }; // Ollama's default penalty is 1.1
  const r = await ollama.generate({ model: 'stories', prompt: c.prompt, raw: true, options, stream: false });
  check(r.done && r.response === c.generated_text && r.done_reason === 'length', `generate "${c.prompt}"`, JSON.stringify(r.response));
  check(r.eval_count === c.n_generated && r.prompt_eval_count === c.prompt_tokens_with_bos.length, 'generate counts', r.eval_count, r.prompt_eval_count);
  check(r.total_duration > 0 && r.eval_duration > 0 && r.prompt_eval_duration >= 0 && r.load_duration > 0, 'generate durations', r);
  check(Array.isArray(r.context) && r.context.length === c.prompt_tokens_with_bos.length + c.n_generated, 'generate context');
  let text = '', last = null, parts = 0;
  for await (const part of await ollama.generate({ model: 'stories:latest', prompt: c.prompt, raw: true, options, stream: true })) {
    text += part.response;
    last = part;
    parts++;
  }
  check(text === c.generated_text && last.done && last.eval_count === c.n_generated && parts === c.n_generated + 1, 'streamed generate', JSON.stringify(text), parts);
}

// chat through the template, whole and streamed alike
const messages = [{ role: 'user', content: 'Tell me a story about a cat.' }];
const whole = await ollama.chat({ model: 'stories', messages, options: { temperature: 0, num_predict: 24 }, stream: false });
check(whole.message.role === 'assistant' && whole.message.content.length > 0 && whole.done && whole.eval_count <= 24, 'chat', whole.message);
let streamed = '';
for await (const part of await ollama.chat({ model: 'stories', messages, options: { temperature: 0, num_predict: 24 }, stream: true })) {
  streamed += part.message.content;
  if (part.done) check(part.done_reason === whole.done_reason && part.eval_count === whole.eval_count, 'streamed chat totals');
}
check(streamed === whole.message.content, 'streamed chat equals whole', JSON.stringify(streamed), JSON.stringify(whole.message.content));

// options steer sampling: stop, seed, num_predict
{
  const r = await ollama.generate({ model: 'stories', prompt: 'Once upon a time', raw: true, stream: false, options: { temperature: 0, stop: [' little'], num_predict: 50 } });
  check(r.response === ', there was a' && r.done_reason === 'stop', 'options.stop', r.response);
  const opts = { temperature: 0.9, top_k: 20, top_p: 0.9, min_p: 0.02, repeat_penalty: 1.2, repeat_last_n: 32, seed: 11, num_predict: 20 };
  const a = await ollama.generate({ model: 'stories', prompt: 'The little dog', raw: true, stream: false, options: opts });
  const b = await ollama.generate({ model: 'stories', prompt: 'The little dog', raw: true, stream: false, options: opts });
  check(a.response === b.response && a.eval_count === 20, 'seeded options repeat', a.response, b.response);
}

// a generate call continues from the context an earlier one returned
{
  const first = await ollama.generate({ model: 'stories', prompt: 'Once upon a time', raw: true, stream: false, options: { temperature: 0, num_predict: 5 } });
  const next = await ollama.generate({ model: 'stories', prompt: ' girl', raw: true, stream: false, context: first.context, options: { temperature: 0, num_predict: 5 } });
  check(next.done && next.prompt_eval_count > first.context.length && next.eval_count === 5 &&
        JSON.stringify(next.context.slice(0, first.context.length)) === JSON.stringify(first.context), 'context continues', next);
  const bad = await postJson(`${server.url}/api/generate`, { model: 'stories', prompt: 'x', stream: false, context: [1, 99999999] });
  check(bad.status === 400 && /context\[1\]/.test(bad.json?.error), 'bad context id', bad.text);
}

// a request without a prompt loads the model
{
  const r = await ollama.generate({ model: 'stories', prompt: '', stream: false });
  check(r.done && r.done_reason === 'load', 'empty generate loads', r);
}

// errors
await checkRejects(ollama.generate({ model: 'llama3', prompt: 'hi', stream: false }), 'unknown model', (e) => e.status_code === 404 && /llama3/.test(e.error ?? e.message));
await checkRejects(ollama.chat({ model: 'stories', messages: [{ role: 'user', content: 'hi' }], options: { temperature: 'warm' }, stream: false }),
                   'bad option type', (e) => e.status_code === 400 && /options.temperature/.test(e.error ?? e.message));
await checkRejects(ollama.show({ model: 'nope' }), 'show unknown', (e) => e.status_code === 404);
{
  const r = await postJson(`${server.url}/api/chat`, { model: 'stories', messages: 'hi' });
  check(r.status === 400 && /messages/.test(r.json?.error), 'messages type', r.text);
  const long = await postJson(`${server.url}/api/generate`, { model: 'stories', prompt: 'Once upon a time '.repeat(100), stream: false, raw: true });
  check(long.status === 400 && /has \d+ tokens/.test(long.json?.error) && /holds 256/.test(long.json?.error), 'prompt too long gives both numbers', long.json);
  const small = await postJson(`${server.url}/api/generate`, { model: 'stories', prompt: 'Once upon a time', stream: false, raw: true, options: { num_ctx: 4 } });
  check(small.status === 400 && / 4$/.test(small.json?.error), 'num_ctx bounds the context', small.json);
}

check((await server.stop()).code === 0, 'exit status 0 after SIGTERM');
finish();
