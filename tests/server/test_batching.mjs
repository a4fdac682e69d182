// Continuous batching over HTTP on the real stories260K model: eight
// concurrent clients (streaming and not) get exactly what each gets alone,
// in fewer forward passes than tokens; a client that hangs up mid-stream
// disturbs no one, and its slot is free again at once.
import { check, clients, finish, startServer } from './harness.mjs';

const { OpenAI } = clients();
const prompts = ['Once upon a time', 'The little dog', 'Lily wanted to play with her ball', 'One day, a boy named Tim', 'The sun was',
                 'Mom said', 'There was a big tree in the park. Every day', 'Bob and Sue'];

async function metric(url, name) {
  const text = await (await fetch(`${url}/metrics`)).text();
  return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
}

async function streamText(client, body) {
  let text = '';
  for await (const chunk of await client.completions.create({ ...body, stream: true })) text += chunk.choices[0]?.text ?? '';
  return text;
}

{
  const server = await startServer(['-c', '256', '--parallel', '8']);
  const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'x', maxRetries: 0 });
  const body = (i) => ({ prompt: prompts[i], max_tokens: 30 + 5 * i, temperature: 0 });
  const alone = [];
  for (let i = 0; i < prompts.length; i++) alone.push((await client.completions.create(body(i))).choices[0].text);

  const passes0 = await metric(server.url, 'sprout_forward_passes_total'), tokens0 = await metric(server.url, 'sprout_generated_tokens_total');
  const together = await Promise.all(prompts.map((_, i) => i % 2 ? streamText(client, body(i)) : client.completions.create(body(i)).then((r) => r.choices[0].text)));
  const passes = (await metric(server.url, 'sprout_forward_passes_total')) - passes0;
  const tokens = (await metric(server.url, 'sprout_generated_tokens_total')) - tokens0;
  for (let i = 0; i < prompts.length; i++) check(together[i] === alone[i], `prompt ${i} together equals alone`, JSON.stringify(together[i]), JSON.stringify(alone[i]));
  check(passes < tokens / 2, 'batched: fewer forward passes than half the tokens', passes, tokens);

  // a client hangs up mid-stream while another generates
  const controller = new AbortController();
  const hangup = (async () => {
    const r = await fetch(`${server.url}/v1/completions`, { method: 'POST', signal: controller.signal, headers: { 'Content-Type': 'application/json' },
                                                             body: JSON.stringify({ prompt: 'Once upon a time', max_tokens: 250, temperature: 0, stream: true }) });
    const reader = r.body.getReader();
    for (let events = 0; events < 3;) {
      const { value } = await reader.read();
      events += (new TextDecoder().decode(value).match(/^data: /gm) ?? []).length;
    }
    controller.abort();
  })().catch(() => {});
  const other = client.completions.create(body(3));
  await hangup;
  check((await other).choices[0].text === alone[3], 'the other client is undisturbed');
  let busy = -1;
  for (let i = 0; i < 40 && busy !== 0; i++) {
    busy = await metric(server.url, 'sprout_busy_slots');
    if (busy) await new Promise((r) => setTimeout(r, 25));
  }
  check(busy === 0, 'the hung-up slot is freed', busy);
  check((await server.stop()).code === 0, 'exit 0');
}

// one slot and no queue: the slot a hang-up frees takes the next request
{
  const server = await startServer(['-c', '256', '--parallel', '1', '--queue', '0']);
  const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'x', maxRetries: 0 });
  const expected = (await client.completions.create({ prompt: 'Mom said', max_tokens: 20, temperature: 0 })).choices[0].text;
  const controller = new AbortController();
  const r = await fetch(`${server.url}/v1/completions`, { method: 'POST', signal: controller.signal, headers: { 'Content-Type': 'application/json' },
                                                           body: JSON.stringify({ prompt: 'The sun was', max_tokens: 250, temperature: 0, stream: true }) });
  const reader = r.body.getReader();
  await reader.read();
  // while it streams, the only slot is taken: a second request is turned away
  const busy = await fetch(`${server.url}/v1/completions`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ prompt: 'Mom said', max_tokens: 2 }) });
  check(busy.status === 503, 'no slot, no queue: 503', busy.status);
  controller.abort();
  let free = false;
  for (let i = 0; i < 40 && !free; i++) {
    free = (await metric(server.url, 'sprout_busy_slots')) === 0;
    if (!free) await new Promise((r) => setTimeout(r, 25));
  }
  check(free, 'the slot is freed after the hang-up');
  const again = await client.completions.create({ prompt: 'Mom said', max_tokens: 20, temperature: 0 });
  check(again.choices[0].text === expected, 'the freed slot serves the next request exactly', again.choices[0].text);
  check((await server.stop()).code === 0, 'exit 0');
}
finish();
