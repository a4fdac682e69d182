// Assisted generation in `sprout serve` on the real stories260K model: with
// a draft model (--model-draft, the model itself) or prompt lookup
// (--lookup), greedy completions equal a plain server's, alone and four at
// once, streamed or not, on the OpenAI and Ollama endpoints; responses say
// what was proposed and kept (timings.draft_n, draft_n_accepted), a
// request's "speculative.n_max": 0 opts out and other values override,
// and /metrics counts the proposals.
import { check, clients, finish, MODEL, startServer } from './harness.mjs';

const { OpenAI, Ollama } = clients();
const story = 'Once upon a time, there was a little girl named Lily. She loved to play outside. ' +
              'One day, Lily saw a big red ball in the park. Once upon a time, there was';
const prompts = [story, 'The little dog', 'Lily wanted to play with her ball', 'One day, a boy named Tim'];
const body = (i, extra = {}) => ({ prompt: prompts[i], max_tokens: 40, temperature: 0, ...extra });

async function metric(url, name) {
  const text = await (await fetch(`${url}/metrics`)).text();
  return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
}

// The text of a streamed completion and the final chunk's timings.
async function streamed(client, b) {
  let text = '', timings;
  for await (const chunk of await client.completions.create({ ...b, stream: true })) {
    text += chunk.choices[0]?.text ?? '';
    timings = chunk.timings ?? timings;
  }
  return { text, timings };
}

async function post(url, path, b) {
  const r = await fetch(`${url}${path}`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(b) });
  return { status: r.status, json: await r.json() };
}

// What a plain server answers. Every server here on one thread: a second
// spins for stories260K (5-6 s, 3.2-3.8 s CPU, on two; 2.2-3.1 s, 0.8 s CPU).
const plain = await startServer(['-c', '256', '--parallel', '4', '-t', '1']);
const plainClient = new OpenAI({ baseURL: `${plain.url}/v1`, apiKey: 'x', maxRetries: 0 });
const expected = [];
for (let i = 0; i < prompts.length; i++) expected.push((await plainClient.completions.create(body(i))).choices[0].text);
const chatBody = { model: 'stories260K', messages: [{ role: 'user', content: 'Tell me a story about a cat' }], max_tokens: 40, temperature: 0 };
const expectedChat = (await plainClient.chat.completions.create(chatBody)).choices[0].message.content;
const ollamaBody = { model: 'stories260K', prompt: story, raw: true, stream: false, options: { temperature: 0, num_predict: 40 } };
const expectedOllama = await new Ollama({ host: plain.url }).generate(ollamaBody);
{
  const r = await plainClient.completions.create(body(0));
  check(r.timings?.draft_n === 0 && r.timings?.predicted_n === r.usage.completion_tokens && r.timings.prompt_n >= 0,
        'a plain server reports timings without proposals', r.timings);
}
check((await plain.stop()).code === 0, 'plain server: exit 0');

for (const [what, args] of [['draft', ['--model-draft', MODEL]], ['lookup', ['--lookup', '6']]]) {
  const server = await startServer(['-c', '256', '--parallel', '4', '-t', '1', ...args]);
  const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'x', maxRetries: 0 });
  const drafted0 = await metric(server.url, 'sprout_draft_tokens_total'), kept0 = await metric(server.url, 'sprout_draft_accepted_total');

  // alone
  for (let i = 0; i < prompts.length; i++) {
    const r = await client.completions.create(body(i));
    check(r.choices[0].text === expected[i], `${what}: prompt ${i} alone equals plain`, JSON.stringify(r.choices[0].text), JSON.stringify(expected[i]));
    const t = r.timings;
    check(t && t.draft_n_accepted <= t.draft_n && t.predicted_n === r.usage.completion_tokens, `${what}: timings`, t);
    if (i === 0) check(t?.draft_n > 0 && t.draft_n_accepted > 0, `${what}: the story's completion had proposals kept`, t);
  }

  // four at once, streamed and not
  const together = await Promise.all(prompts.map((_, i) => i % 2 ? streamed(client, body(i))
                                                         : client.completions.create(body(i)).then((r) => ({ text: r.choices[0].text, timings: r.timings }))));
  for (let i = 0; i < prompts.length; i++)
    check(together[i].text === expected[i], `${what}: prompt ${i} of four at once equals plain`, JSON.stringify(together[i].text), JSON.stringify(expected[i]));
  check(together[1].timings?.predicted_n > 0, `${what}: a stream's last chunk carries the timings`, together[1].timings);

  // chat, and the opt-out and an override
  const chat = await client.chat.completions.create(chatBody);
  check(chat.choices[0].message.content === expectedChat, `${what}: chat equals plain`, chat.choices[0].message.content, expectedChat);
  const out = await client.completions.create(body(0, { 'speculative.n_max': 0 }));
  check(out.choices[0].text === expected[0] && out.timings.draft_n === 0, `${what}: speculative.n_max 0 opts out`, out.timings);
  const two = await client.completions.create(body(0, { 'speculative.n_max': 2, 'speculative.n_min': 0, 'speculative.p_min': 0 }));
  check(two.choices[0].text === expected[0] && two.timings.draft_n > 0, `${what}: speculative.n_max 2`, two.timings);
  const bad = await post(server.url, '/v1/completions', body(0, { 'speculative.n_max': -1 }));
  check(bad.status === 400 && /speculative\.n_max/.test(bad.json?.error?.message), `${what}: a bad speculative.n_max is refused by name`, bad);

  // Ollama: the same text and counts; its options take the fields too
  const ollama = new Ollama({ host: server.url });
  const g = await ollama.generate(ollamaBody);
  check(g.response === expectedOllama.response && g.eval_count === expectedOllama.eval_count, `${what}: Ollama generate equals plain`,
        g.response, expectedOllama.response);
  const gOut = await ollama.generate({ ...ollamaBody, options: { ...ollamaBody.options, 'speculative.n_max': 0 } });
  check(gOut.response === expectedOllama.response, `${what}: Ollama with speculative.n_max 0`);

  const drafted = await metric(server.url, 'sprout_draft_tokens_total') - drafted0;
  const kept = await metric(server.url, 'sprout_draft_accepted_total') - kept0;
  check(drafted > 0 && kept > 0 && kept <= drafted, `${what}: /metrics counts proposals and those kept`, drafted, kept);
  console.log(`${what}: ${kept} of ${drafted} proposed tokens kept`);
  check((await server.stop()).code === 0, `${what}: exit 0`);
}

// a draft of another vocabulary: the server says so and exits
{
  const { spawnSync } = await import('node:child_process');
  const { join } = await import('node:path');
  const { tmpdir } = await import('node:os');
  const other = join(tmpdir(), `sprout-assist-${process.pid}.gguf`);
  if (spawnSync(process.env.SPROUT_MAKE_MODEL, ['qwen2-tiny', 'F32', other]).status === 0) {
    const r = spawnSync(process.env.SPROUT_BIN, ['serve', '-m', MODEL, '--port', '0', '--model-draft', other], { encoding: 'utf8', timeout: 20000 });
    check(r.status === 1 && /draft model/.test(r.stderr), 'a draft of another vocabulary: exit 1 naming it', r.status, r.stderr);
    (await import('node:fs')).rmSync(other, { force: true });
  } else check(false, 'make_model wrote no model');
}
finish();
