// Reasoning apart from the answer, with the real clients, under a
// DeepSeek-R1-style template that opens <think> at the end of the prompt
// (and closes it at once when chat_template_kwargs / think turn thinking
// off). stories260K never writes </think>, so its whole reply is reasoning
// cut short: OpenAI's reasoning_content, Ollama's thinking (asked with
// think), and the same split streamed. The split itself: test_reasoning.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { check, clients, finish, postJson, startServer } from './harness.mjs';

const template = `{%- for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}
{%- if add_generation_prompt %}<|Assistant|>{% if enable_thinking is defined and not enable_thinking %}<think>

</think>

{% else %}<think>
{% endif %}{% endif %}`;
const dir = mkdtempSync(join(tmpdir(), 'sprout-think-'));
writeFileSync(join(dir, 'r1.jinja'), template);

const { OpenAI, Ollama } = clients();
const server = await startServer(['-c', '256', '--chat-template-file', join(dir, 'r1.jinja')]);
const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
const ollama = new Ollama({ host: server.url });
const ask = [{ role: 'user', content: 'Once upon a time' }];
const base = { model: 'stories260K', messages: ask, max_tokens: 16, temperature: 0 };

// OpenAI: the prompt opened <think>, so the reply is reasoning
const r = await client.chat.completions.create(base);
const m = r.choices[0].message;
check(typeof m.reasoning_content === 'string' && m.reasoning_content.length > 10 && m.content === '', 'reasoning_content', m);
{
  let reasoning = '', content = '';
  for await (const chunk of await client.chat.completions.create({ ...base, stream: true })) {
    reasoning += chunk.choices[0]?.delta.reasoning_content ?? '';
    content += chunk.choices[0]?.delta.content ?? '';
  }
  check(reasoning === m.reasoning_content && content === '', 'streamed reasoning', JSON.stringify(reasoning), JSON.stringify(content));
}
// thinking off through chat_template_kwargs: the prompt closes the block, the reply is the answer
{
  const off = await postJson(`${server.url}/v1/chat/completions`, { ...base, chat_template_kwargs: { enable_thinking: false } });
  const msg = off.json?.choices?.[0]?.message;
  check(off.status === 200 && msg?.content.length > 10 && !msg.reasoning_content, 'chat_template_kwargs enable_thinking false', off.text);
  check(off.json.usage.prompt_tokens > r.usage.prompt_tokens, 'the closed block is in the prompt', off.json.usage);
  const bad = await postJson(`${server.url}/v1/chat/completions`, { ...base, chat_template_kwargs: 3 });
  check(bad.status === 400 && /chat_template_kwargs/.test(bad.text), 'chat_template_kwargs not an object', bad.text);
}

// Ollama: thinking apart only when asked
{
  const opts = { temperature: 0, num_predict: 16 };
  const t = await ollama.chat({ model: 'stories260K', messages: ask, think: true, options: opts });
  check(t.message.thinking?.length > 10 && t.message.content === '', 'ollama think', t.message);
  let thinking = '';
  for await (const part of await ollama.chat({ model: 'stories260K', messages: ask, think: true, options: opts, stream: true })) thinking += part.message.thinking ?? '';
  check(thinking === t.message.thinking, 'ollama streamed thinking', JSON.stringify(thinking));
  const raw = await ollama.chat({ model: 'stories260K', messages: ask, options: opts });
  check(!raw.message.thinking && raw.message.content === t.message.thinking, 'without think the text is content', raw.message);
  const off = await ollama.chat({ model: 'stories260K', messages: ask, think: false, options: opts });
  check(!off.message.thinking && off.prompt_eval_count > t.prompt_eval_count, 'think false closes the block in the prompt', off.prompt_eval_count);
  const g = await ollama.generate({ model: 'stories260K', prompt: 'Once upon a time', think: true, options: opts });
  check(g.thinking?.length > 10 && g.response === '', 'ollama generate think', g);
}

check((await server.stop()).code === 0, 'clean exit');
finish();
