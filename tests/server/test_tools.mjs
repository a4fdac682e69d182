// Tools and JSON mode through both APIs, with the real openai and ollama clients: the
// offered tools reach the chat template (--chat-template-file, a
// Hermes-style template that writes them into the prompt), past calls and
// tool results render (their arguments decoded to objects, as templates
// expect), tool_choice "none" offers nothing, bad tools are refused, and a
// streamed reply with tools offered is the same text as the whole one.
// stories260K never writes a tool call: the parsing of calls is test_tool_calls.
// JSON mode (response_format, Ollama's format) gives text that opens an object
// and, when it ends by itself, parses; its grammar is test_json_constraint.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { check, checkRejects, clients, finish, postJson, startServer } from './harness.mjs';

const template = `{%- if tools %}<|im_start|>system
You may call these tools:
{% for t in tools %}{{ t | tojson }}
{% endfor %}<|im_end|>
{% endif %}
{%- for m in messages %}<|im_start|>{{ m.role }}
{% if m.tool_calls %}{% for c in m.tool_calls %}
{%- if c.function.arguments is string %}{{ raise_exception('arguments reached the template as text') }}{% endif %}
<tool_call>
{{ {'name': c.function.name, 'arguments': c.function.arguments} | tojson }}
</tool_call>{% endfor %}{% else %}{{ m.content }}{% endif %}<|im_end|>
{% endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}`;
const dir = mkdtempSync(join(tmpdir(), 'sprout-tools-'));
writeFileSync(join(dir, 'hermes.jinja'), template);

const { OpenAI, Ollama } = clients();
const server = await startServer(['-c', '512', '--parallel', '2', '--chat-template-file', join(dir, 'hermes.jinja')]);
const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
const ollama = new Ollama({ host: server.url });

const tools = [{ type: 'function', function: { name: 'get_weather', description: 'The weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];
const ask = [{ role: 'user', content: 'Tell me a story about the weather.' }];
const base = { model: 'stories260K', max_tokens: 12, temperature: 0 };

// the tools reach the template: the prompt grows by their text
const plain = await client.chat.completions.create({ ...base, messages: ask });
const withTools = await client.chat.completions.create({ ...base, messages: ask, tools });
check(withTools.usage.prompt_tokens > plain.usage.prompt_tokens + 20, 'tools in the prompt', plain.usage.prompt_tokens, withTools.usage.prompt_tokens);
check(!withTools.choices[0].message.tool_calls && withTools.choices[0].finish_reason === 'length', 'a story is not a tool call', withTools.choices[0]);
const none = await client.chat.completions.create({ ...base, messages: ask, tools, tool_choice: 'none' });
check(none.usage.prompt_tokens === plain.usage.prompt_tokens, 'tool_choice none offers no tools', none.usage.prompt_tokens);

// a past call (arguments as JSON text, as OpenAI sends them) and its result
const history = [
  ...ask,
  { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } }] },
  { role: 'tool', tool_call_id: 'call_1', content: 'Sunny, 21 C' },
];
const followUp = await client.chat.completions.create({ ...base, messages: history, tools });
check(followUp.usage.prompt_tokens > withTools.usage.prompt_tokens + 10 && typeof followUp.choices[0].message.content === 'string', 'a past call renders', followUp.usage);

// streamed with tools offered: the same text (held back only while it might be a call)
{
  const stream = await client.chat.completions.create({ ...base, messages: ask, tools, stream: true });
  let text = '', finish = null, calls = 0;
  for await (const chunk of stream) {
    const c = chunk.choices[0];
    if (!c) continue;
    text += c.delta.content ?? '';
    calls += c.delta.tool_calls?.length ?? 0;
    finish = c.finish_reason ?? finish;
  }
  check(text === withTools.choices[0].message.content && finish === 'length' && calls === 0, 'streamed with tools', JSON.stringify(text), finish);
}

// bad tools are refused, naming the field
{
  const r = await postJson(`${server.url}/v1/chat/completions`, { ...base, messages: ask, tools: { name: 'x' } });
  check(r.status === 400 && /tools/.test(r.text), 'tools not a list', r.status, r.text);
  const r2 = await postJson(`${server.url}/v1/chat/completions`, { ...base, messages: ask, tools: [{ type: 'function', function: { name: 3 } }] });
  check(r2.status === 400 && /tools\[0\]\.function\.name/.test(r2.text), 'a tool without a name', r2.status, r2.text);
  await checkRejects(client.chat.completions.create({ ...base, messages: ask, tools: [7] }), 'a tool that is not an object', (e) => e.status === 400);
}

// Ollama: the same tools, whole and streamed
{
  const opts = { temperature: 0, num_predict: 12 };
  const r = await ollama.chat({ model: 'stories260K', messages: ask, tools, options: opts });
  const r0 = await ollama.chat({ model: 'stories260K', messages: ask, options: opts });
  check(r.prompt_eval_count > r0.prompt_eval_count + 20 && r.message.content.length > 0 && !r.message.tool_calls, 'ollama chat with tools', r.prompt_eval_count, r0.prompt_eval_count);
  let text = '';
  for await (const part of await ollama.chat({ model: 'stories260K', messages: ask, tools, options: opts, stream: true })) text += part.message.content;
  check(text === r.message.content, 'ollama streamed with tools', JSON.stringify(text));
  const past = [...ask, { role: 'assistant', content: '', tool_calls: [{ function: { name: 'get_weather', arguments: { city: 'Paris' } } }] }, { role: 'tool', content: 'Sunny' }];
  const r2 = await ollama.chat({ model: 'stories260K', messages: past, tools, options: opts });
  check(r2.prompt_eval_count > r.prompt_eval_count && r2.done, 'ollama past call renders', r2.prompt_eval_count);
}

// JSON mode
{
  const r = await client.chat.completions.create({ ...base, max_tokens: 40, messages: ask, response_format: { type: 'json_object' } });
  const text = r.choices[0].message.content;
  check(text.trimStart().startsWith('{') && (r.choices[0].finish_reason !== 'stop' || JSON.parse(text)), 'json_object', JSON.stringify(text));
  const stream = await client.chat.completions.create({ ...base, max_tokens: 40, messages: ask, response_format: { type: 'json_object' }, stream: true });
  let streamed = '';
  for await (const chunk of stream) streamed += chunk.choices[0]?.delta.content ?? '';
  check(streamed === text, 'json_object streamed', JSON.stringify(streamed));
  const plainText = await client.chat.completions.create({ ...base, max_tokens: 40, messages: ask, response_format: { type: 'text' } });
  check(!plainText.choices[0].message.content.trimStart().startsWith('{'), 'response_format text is free', plainText.choices[0].message.content);
  const bad = await postJson(`${server.url}/v1/chat/completions`, { ...base, messages: ask, response_format: { type: 'yaml' } });
  check(bad.status === 400 && /response_format/.test(bad.text), 'an unknown response_format', bad.status, bad.text);
  const g = await ollama.generate({ model: 'stories260K', prompt: 'Once upon a time', format: 'json', options: { temperature: 0, num_predict: 40 } });
  check(g.response.trimStart().startsWith('{') && (g.done_reason !== 'stop' || JSON.parse(g.response)), 'ollama format json', JSON.stringify(g.response));
  const bad2 = await postJson(`${server.url}/api/chat`, { model: 'stories260K', messages: ask, format: 'xml' });
  check(bad2.status === 400 && /format/.test(bad2.text), 'an unknown ollama format', bad2.status, bad2.text);
}

const { code } = await server.stop();
check(code === 0, 'clean exit', code);
finish();
