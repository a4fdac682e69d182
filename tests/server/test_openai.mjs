// The official `openai` npm client against `sprout serve` on the real
// stories260K model: models, chat and completions (whole and streamed),
// llama.cpp's greedy references reproduced over HTTP, log-probabilities,
// stop strings, usage, errors on bad input, API keys, and a clean SIGTERM.
import { check, checkRejects, clients, finish, postJson, reference, startServer } from './harness.mjs';

const { OpenAI } = clients();
const server = await startServer(['-c', '256', '--parallel', '2']);
const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });

// models
const models = await client.models.list();
check(models.data.length === 1 && models.data[0].id === 'stories260K' && models.data[0].object === 'model', 'models.list', models.data);
{
  const one = await client.models.retrieve('stories260K');
  check(one.id === 'stories260K' && one.object === 'model' && one.owned_by === 'sprout', 'models.retrieve', one);
  await checkRejects(client.models.retrieve('gpt-5'), 'models.retrieve of another model', (err) => err.status === 404 && /does not exist/.test(err.message));
  const nested = await fetch(`${server.url}/v1/models/a/b`);
  check(nested.status === 404, 'no path below a model', nested.status);
  const posted = await fetch(`${server.url}/v1/models/stories260K`, { method: 'POST' });
  check(posted.status === 405 && posted.headers.get('allow') === 'GET', 'POST on a model', posted.status, posted.headers.get('allow'));
}

// completions reproduce llama.cpp's greedy generations
for (const c of reference().cases) {
  if (!c.prompt) continue;
  const r = await client.completions.create({ model: 'stories260K', prompt: c.prompt, max_tokens: c.n_generated, temperature: 0 });
  check(r.object === 'text_completion' && r.choices[0].text === c.generated_text, `completion of "${c.prompt}"`, JSON.stringify(r.choices[0].text));
  check(r.usage.prompt_tokens === c.prompt_tokens_with_bos.length && r.usage.completion_tokens === c.n_generated, 'completion usage', r.usage);
  check(r.usage.total_tokens === r.usage.prompt_tokens + r.usage.completion_tokens, 'total_tokens');
  check(r.choices[0].finish_reason === 'length', 'finish_reason length', r.choices[0].finish_reason);

  // the same, streamed
  const stream = await client.completions.create({ model: 'stories260K', prompt: c.prompt, max_tokens: c.n_generated, temperature: 0, stream: true, stream_options: { include_usage: true } });
  let text = '', finish = null, usage = null;
  for await (const chunk of stream) {
    if (chunk.choices.length) {
      text += chunk.choices[0].text;
      finish = chunk.choices[0].finish_reason ?? finish;
    }
    if (chunk.usage) usage = chunk.usage;
  }
  check(text === c.generated_text, 'streamed completion', JSON.stringify(text));
  check(finish === 'length' && usage && usage.completion_tokens === c.n_generated, 'streamed finish and usage', finish, usage);
  // the prompt was cached by the first request
  check(usage && usage.prompt_tokens_details.cached_tokens >= c.prompt_tokens_with_bos.length - 1, 'cached_tokens', usage?.prompt_tokens_details);
}

// logit_bias: +100 makes one token every token, -100 keeps the greedy first one out
{
  const tok = await postJson(`${server.url}/tokenize`, { content: ' there' });
  const id = tok.json.tokens[tok.json.tokens.length - 1];
  const forced = await client.completions.create({ model: 'stories260K', prompt: 'Once upon a time', max_tokens: 3, temperature: 0, logit_bias: { [id]: 100 }, logprobs: 1 });
  const ids = await postJson(`${server.url}/tokenize`, { content: forced.choices[0].text });
  check(ids.json.tokens.length >= 3 && ids.json.tokens.slice(-3).every((t) => t === id), 'logit_bias +100', forced.choices[0].text, ids.json.tokens);
  const first = await client.completions.create({ model: 'stories260K', prompt: 'Once upon a time', max_tokens: 1, temperature: 0, logprobs: 1 });
  const firstId = (await postJson(`${server.url}/tokenize`, { content: first.choices[0].logprobs.tokens[0] })).json.tokens;
  const banned = await client.completions.create({ model: 'stories260K', prompt: 'Once upon a time', max_tokens: 1, temperature: 0, logit_bias: { [firstId[firstId.length - 1]]: -100 } });
  check(banned.choices[0].text !== first.choices[0].text, 'logit_bias -100', first.choices[0].text, banned.choices[0].text);
  await checkRejects(client.completions.create({ model: 'stories260K', prompt: 'x', logit_bias: { abc: 1 } }), 'logit_bias key', (e) => e.status === 400);
  await checkRejects(client.completions.create({ model: 'stories260K', prompt: 'x', logit_bias: { 5: 101 } }), 'logit_bias range', (e) => e.status === 400);
}

// echo and logprobs
{
  const r = await client.completions.create({ model: 'stories260K', prompt: 'Once upon a time', max_tokens: 5, temperature: 0, echo: true, logprobs: 3 });
  const lp = r.choices[0].logprobs;
  check(r.choices[0].text.startsWith('Once upon a time, there'), 'echo', r.choices[0].text);
  check(lp.tokens.length === 5 && lp.token_logprobs.every((x) => x <= 0) && lp.top_logprobs.every((t) => Object.keys(t).length === 3), 'completion logprobs', lp);
  check(lp.tokens.join('') === r.choices[0].text.slice('Once upon a time'.length), 'logprob tokens spell the text', lp.tokens);
}

// chat, whole and streamed, give the same greedy text
const messages = [{ role: 'system', content: 'You tell stories.' }, { role: 'user', content: 'Tell me about a dog.' }];
const chat = await client.chat.completions.create({ model: 'stories260K', messages, max_tokens: 30, temperature: 0, logprobs: true, top_logprobs: 2 });
const content = chat.choices[0].message.content;
check(chat.object === 'chat.completion' && chat.choices[0].message.role === 'assistant' && content.length > 0, 'chat', chat.choices[0]);
check(chat.usage.completion_tokens > 0 && chat.usage.completion_tokens <= 30, 'chat usage', chat.usage);
check(chat.choices[0].logprobs.content.length === chat.usage.completion_tokens &&
      chat.choices[0].logprobs.content.every((t) => t.logprob <= 0 && t.top_logprobs.length === 2 && t.top_logprobs[0].logprob >= t.logprob - 1e-5),
      'chat logprobs', chat.choices[0].logprobs.content.slice(0, 2));
check(chat.choices[0].logprobs.content.map((t) => t.token).join('') === content, 'chat logprob tokens spell the content');
{
  const stream = await client.chat.completions.create({ model: 'stories260K', messages, max_tokens: 30, temperature: 0, stream: true });
  let text = '', role = null, finish = null, n = 0;
  for await (const chunk of stream) {
    const d = chunk.choices[0]?.delta ?? {};
    role = d.role ?? role;
    text += d.content ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
    n++;
    check(chunk.object === 'chat.completion.chunk' && chunk.id.startsWith('chatcmpl-') && chunk.model === 'stories260K', 'chunk shape', chunk);
  }
  check(role === 'assistant' && text === content && finish === chat.choices[0].finish_reason && n > 2, 'streamed chat equals whole', JSON.stringify(text), JSON.stringify(content));
}

// log-probabilities arrive with the streamed chunks too
{
  const stream = await client.chat.completions.create({ model: 'stories260K', messages, max_tokens: 30, temperature: 0, stream: true,
                                                        logprobs: true, top_logprobs: 2, stream_options: { include_usage: true } });
  let text = '', entries = [], usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    const choice = chunk.choices[0];
    if (!choice) continue;
    text += choice.delta?.content ?? '';
    if (choice.logprobs?.content) entries.push(...choice.logprobs.content);
  }
  check(text === content && usage && entries.length === usage.completion_tokens, 'streamed chat logprobs: one per token', entries.length, usage);
  check(entries.map((e) => e.token).join('') === text && entries.every((e) => e.top_logprobs.length === 2 && e.logprob <= 0),
        'streamed chat logprobs spell the text');
  check(JSON.stringify(entries.map((e) => e.logprob)) === JSON.stringify(chat.choices[0].logprobs.content.map((e) => e.logprob)),
        'streamed logprobs equal the whole response\'s');
  const cstream = await client.completions.create({ prompt: 'Once upon a time', max_tokens: 6, temperature: 0, stream: true, logprobs: 1 });
  let ctext = '', ctokens = [];
  for await (const chunk of cstream) {
    ctext += chunk.choices[0]?.text ?? '';
    if (chunk.choices[0]?.logprobs) ctokens.push(...chunk.choices[0].logprobs.tokens);
  }
  check(ctokens.length === 6 && ctokens.join('') === ctext, 'streamed completion logprobs', ctokens, ctext);
}

// stop strings end the text before them
{
  const r = await client.completions.create({ model: 'stories260K', prompt: 'Once upon a time', max_tokens: 40, temperature: 0, stop: [' girl', 'xyz'] });
  check(r.choices[0].text === ', there was a little' && r.choices[0].finish_reason === 'stop', 'stop string', r.choices[0]);
}

// same seed, same sample; the sampling parameters are taken
{
  const ask = (seed) => client.completions.create({ prompt: 'The little dog', max_tokens: 20, temperature: 1.0, top_p: 0.9, seed, presence_penalty: 0.5, frequency_penalty: 0.5 });
  const [a, b] = [await ask(7), await ask(7)];
  check(a.choices[0].text === b.choices[0].text, 'seeded sampling repeats', a.choices[0].text, b.choices[0].text);
}

// degenerate sampling values stay well-defined
{
  const greedy = await client.completions.create({ prompt: 'The little dog', max_tokens: 12, temperature: 0 });
  const tiny = await client.completions.create({ prompt: 'The little dog', max_tokens: 12, temperature: 1e-30, repeat_penalty: 0 });
  check(tiny.choices[0].text === greedy.choices[0].text, 'temperature 1e-30 is greedy, repeat_penalty 0 is off', tiny.choices[0].text);
}

// errors a client can provoke
const bad = (what, p, status, word) => checkRejects(p, what, (e) => e.status === status && (!word || e.message.includes(word)));
await bad('temperature type', client.chat.completions.create({ messages, temperature: 'hot' }), 400, 'temperature');
await bad('n = 2', client.chat.completions.create({ messages, n: 2 }), 400, 'n:');
await bad('no messages', client.chat.completions.create({ messages: [] }), 400, 'messages');
await bad('message content type', client.chat.completions.create({ messages: [{ role: 'user', content: 42 }] }), 400, 'messages[0].content');
await bad('unknown model', client.chat.completions.create({ model: 'gpt-4o', messages }), 404, 'gpt-4o');
await bad('prompt too long', client.completions.create({ prompt: 'Once upon a time '.repeat(100), max_tokens: 4 }), 400, '256');
await bad('max_tokens negative', client.completions.create({ prompt: 'a', max_tokens: -1 }), 400, 'max_tokens');
{
  const r = await postJson(`${server.url}/v1/chat/completions`, '{"messages": [');
  check(r.status === 400 && r.json?.error?.message.includes('invalid JSON'), 'malformed JSON', r.status, r.text);
  const r2 = await postJson(`${server.url}/v1/chat/completions`, { messages, max_tokens: 3 }, {});
  check(r2.status === 200, 'plain fetch works');
  const r3 = await fetch(`${server.url}/v1/nothing`);
  check(r3.status === 404, 'unknown endpoint', r3.status);
  const r4 = await fetch(`${server.url}/v1/chat/completions`);
  check(r4.status === 405 && r4.headers.get('allow') === 'POST', 'wrong method', r4.status, r4.headers.get('allow'));
  const big = await postJson(`${server.url}/v1/completions`, { prompt: 'x'.repeat(17 << 20) });
  check(big.status === 413, 'body over --max-body', big.status);
  const utf = await postJson(`${server.url}/v1/completions`, Buffer.from('{"prompt":"\xff\xfe"}', 'latin1'));
  check(utf.status === 400, 'invalid UTF-8 in JSON', utf.status, utf.text);
}

// operations endpoints
{
  const tok = await postJson(`${server.url}/tokenize`, { content: 'Once upon a time', add_special: true });
  check(JSON.stringify(tok.json.tokens) === JSON.stringify(reference().cases[0].prompt_tokens_with_bos), 'tokenize', tok.json);
  const detok = await postJson(`${server.url}/detokenize`, { tokens: reference().cases[0].generated_tokens });
  check(detok.json.content === reference().cases[0].generated_text, 'detokenize', detok.json);
  const badTok = await postJson(`${server.url}/detokenize`, { tokens: [1, 1e9] });
  check(badTok.status === 400, 'detokenize out of range', badTok.status);
  const metrics = await (await fetch(`${server.url}/metrics`)).text();
  check(/^sprout_generated_tokens_total [1-9]/m.test(metrics) && /^sprout_busy_slots 0/m.test(metrics) && /^# TYPE sprout_queue_length gauge/m.test(metrics), 'metrics', metrics);
}

// SIGTERM while a stream runs: the stream still ends properly, exit 0
{
  const stream = await client.completions.create({ prompt: 'Once upon a time', max_tokens: 200, temperature: 0, stream: true });
  let chunks = 0, ended = false;
  const reading = (async () => {
    for await (const chunk of stream) {
      chunks++;
      if (chunks === 3) server.proc.kill('SIGTERM');
    }
    ended = true;
  })();
  const exit = await server.stop();
  await reading.catch((e) => check(false, 'stream broke on shutdown', e.message));
  check(ended && chunks >= 3, 'stream completed across shutdown', chunks);
  check(exit.code === 0, 'exit status 0 after SIGTERM', exit, server.log());
}

// an API key is required when set (not for /health)
{
  const keyed = await startServer(['--api-key', 'sekret', '-c', '128']);
  const wrong = new OpenAI({ baseURL: `${keyed.url}/v1`, apiKey: 'nope', maxRetries: 0 });
  const right = new OpenAI({ baseURL: `${keyed.url}/v1`, apiKey: 'sekret', maxRetries: 0 });
  await bad('wrong key', wrong.models.list(), 401);
  const r = await right.completions.create({ prompt: 'Once upon a time', max_tokens: 3, temperature: 0 });
  check(r.choices[0].text === ', there was', 'right key', r.choices[0].text);
  check((await fetch(`${keyed.url}/health`)).status === 200, 'health needs no key');
  const unkeyedBig = await postJson(`${keyed.url}/v1/completions`, { prompt: 'x'.repeat(17 << 20) });
  check(unkeyedBig.status === 401, 'the key is checked before the body is judged', unkeyedBig.status);
  check((await keyed.stop()).code === 0, 'keyed server exits 0');
}
finish();
