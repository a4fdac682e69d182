// Context shift through the server: `serve --context-shift` goes on past a
// full context as llama-server does, Ollama's num_keep choosing what
// stays, and gives llama.cpp's greedy tokens (tests/data/context_shift);
// a request cannot turn it on, and without it a reply stops at the context
// with done_reason / finish_reason "length".
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { check, clients, finish, postJson, startServer } from './harness.mjs';

const { Ollama } = clients();
const ref = JSON.parse(readFileSync(join(dirname(fileURLToPath(import.meta.url)), '../data/context_shift/llama-f16.json'), 'utf8'));
const options = { num_predict: ref.tokens.length, temperature: 0, repeat_penalty: 1, num_keep: ref.n_keep - 1 };
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

const server = await startServer(['-c', String(ref.n_ctx), '--context-shift', '-np', '1']);
const ollama = new Ollama({ host: server.url });
const g = await ollama.generate({ model: 'stories260K', prompt: 'Once upon a time', raw: true, options });
check(same(g.context, [...ref.prompt, ...ref.tokens]) && g.done_reason === 'length', 'llama.cpp\'s tokens past two shifts',
  g.context?.length, g.done_reason);
// the slot's shifted cache is not reused past the kept tokens: the same again
const again = await ollama.generate({ model: 'stories260K', prompt: 'Once upon a time', raw: true, options });
check(same(again.context, g.context), 'the same after reuse of a shifted slot');
check((await server.stop()).code === 0, 'clean exit');

// off (the default): the reply ends where the context does, and a request's own field cannot turn it on
const plain = await startServer(['-c', String(ref.n_ctx), '-np', '1']);

const c = await postJson(`${plain.url}/v1/completions`, { prompt: 'Once upon a time', max_tokens: 400, temperature: 0, context_shift: true, n_keep: 4 });
check(c.status === 200 && c.json.choices[0].finish_reason === 'length' && c.json.usage.completion_tokens === ref.n_ctx - ref.prompt.length,
  'stops at the context', c.status, c.json?.usage);
const o = await new Ollama({ host: plain.url }).generate({ model: 'stories260K', prompt: 'Once upon a time', raw: true, options });
check(o.done_reason === 'length' && o.eval_count < ref.tokens.length, 'Ollama: stops at the context', o.done_reason, o.eval_count);
check((await plain.stop()).code === 0, 'clean exit (plain)');
finish();
