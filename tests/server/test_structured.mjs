// Structured output through the server with the real clients: every schema
// of tests/data/json_schema/cases.json (ajv-checked) as OpenAI's
// response_format json_schema, several seeds each at temperature 1 on
// stories260K (and some on a random Qwen2 served beside it); every reply
// that ends by itself ("stop") must parse and validate with ajv against its
// schema, most must end by themselves, and replies must differ where the
// schema lets them (more than one enum value, optional properties present
// and absent). Then Ollama's format with a schema, llama-server's grammar
// and json_schema fields, a stream, the AI SDK's generateObject with a zod
// schema, and the 400s: every unsupported keyword of errors.json named,
// a bad grammar's line:column, a grammar beside a schema. Last, strict tool
// calls forced by tool_choice on the random Qwen2 with a <tool_call>
// template: every call's arguments validate against the tool's parameters.
//
// Numbers: the grammar lets a number have any exponent (valid JSON), so a
// reply may hold 1e999, which JSON.parse turns into Infinity and ajv then
// refuses as a number. Such a literal is validated as the largest double
// of its sign (the true value lies beyond every finite bound a schema can
// state, so minimum/maximum judge it the same way) and counted apart.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SHARED, check, checkRejects, clientRequire, clients, finish, postJson, startServer } from './harness.mjs';

const require = clientRequire();
const Ajv2020 = require('ajv/dist/2020').default;
const addFormats = require('ajv-formats');
const { generateObject } = require('ai');
const { createOpenAICompatible } = require('@ai-sdk/openai-compatible');
const { z } = require('zod');
const { OpenAI, Ollama } = clients();

const dataDir = new URL('../data/json_schema/', import.meta.url);
const cases = JSON.parse(readFileSync(new URL('cases.json', dataDir), 'utf8'));
const errorCases = JSON.parse(readFileSync(new URL('errors.json', dataDir), 'utf8'));

const SEEDS = 6, MAX_TOKENS = 200;
let huge = 0;

// JSON.parse after bringing number literals beyond the double range into it.
function parseJson(text) {
  const clamped = text.replace(/"(?:[^"\\]|\\.)*"|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/g, (tok) => {
    if (tok[0] === '"' || Number.isFinite(Number(tok))) return tok;
    huge++;
    return (tok[0] === '-' ? '-' : '') + '1.7976931348623157e308';
  });
  return JSON.parse(clamped);
}

// Compiled once per schema: every seed's reply to a case checks against the same one.
const validators = new Map();
function validator(schema) {
  if (!validators.has(schema)) {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv, { mode: 'full' });
    validators.set(schema, ajv.compile(schema));
  }
  return validators.get(schema);
}

// Which branches a reply took: the enum value at each enum node, and each
// optional property present or absent (the schema walked beside the value
// through properties, items and prefixItems).
function branches(schema, value, at, seen, root = schema) {
  if (!schema || typeof schema !== 'object') return;
  if (typeof schema.$ref === 'string' && schema.$ref.startsWith('#')) { /* local refs: #, #/$defs/x, #/definitions/x */
    const target = schema.$ref.slice(1).split('/').filter(Boolean).reduce((s, k) => s?.[k], root);
    if (target && target !== schema && !at.includes(schema.$ref)) branches(target, value, `${at}(${schema.$ref})`, seen, root);
  }
  for (const sub of schema.allOf ?? []) branches(sub, value, at, seen, root);
  const note = (key, what) => (seen[key] ??= new Set()).add(what);
  if (Array.isArray(schema.enum) && schema.enum.length > 1) note(`${at} enum`, JSON.stringify(value));
  if (schema.properties && value && typeof value === 'object' && !Array.isArray(value)) {
    const required = new Set(schema.required ?? []);
    for (const [k, sub] of Object.entries(schema.properties)) {
      if (!required.has(k)) note(`${at}/${k} optional`, k in value ? 'present' : 'absent');
      if (k in value) branches(sub, value[k], `${at}/${k}`, seen, root);
    }
  }
  if (Array.isArray(value)) {
    value.forEach((v, i) => {
      const sub = schema.prefixItems && i < schema.prefixItems.length ? schema.prefixItems[i] : schema.items;
      branches(sub, v, `${at}/${i < (schema.prefixItems?.length ?? 0) ? i : '*'}`, seen, root);
    });
  }
}

// Runs jobs (functions returning promises) n at a time.
async function pool(jobs, n) {
  const out = [];
  let next = 0;
  await Promise.all(Array.from({ length: n }, async () => {
    while (next < jobs.length) {
      const i = next++;
      out[i] = await jobs[i]();
    }
  }));
  return out;
}

const messages = [{ role: 'user', content: 'Write the answer as JSON.' }];
const stats = { schemas: 0, replies: 0, stop: 0, length: 0, valid: 0, longest: 0 };

// Every case, `seeds` seeds, on one server; returns the branch sets per
// case (added to `seen` when given). `extra`: more request fields.
async function runCases(client, model, list, seeds, extra = {}, seen = new Map()) {
  const jobs = [];
  for (const c of list)
    for (let seed = 1; seed <= seeds; seed++)
      jobs.push(async () => {
        const r = await client.chat.completions.create({ model, messages, seed, temperature: 1, max_tokens: MAX_TOKENS, ...extra,
          response_format: { type: 'json_schema', json_schema: { name: c.name, schema: c.schema, strict: true } } });
        return { c, choice: r.choices[0], tokens: r.usage.completion_tokens };
      });
  const results = await pool(jobs, 4);
  for (const { c, choice, tokens } of results) {
    stats.replies++;
    if (choice.finish_reason === 'length') {
      stats.length++;
      continue;
    }
    stats.longest = Math.max(stats.longest, tokens);
    check(choice.finish_reason === 'stop', `${model} ${c.name}: finish_reason`, choice.finish_reason);
    stats.stop++;
    let value, ok = false;
    try {
      value = parseJson(choice.message.content);
      ok = validator(c.schema)(value);
    } catch {}
    check(ok, `${model} ${c.name}: the reply validates`, JSON.stringify(choice.message.content));
    if (!ok) continue;
    stats.valid++;
    if (!seen.has(c.name)) seen.set(c.name, {});
    branches(c.schema, value, '', seen.get(c.name));
  }
  stats.schemas += list.length;
  return seen;
}

// --- stories260K: every case ---------------------------------------------------------------

// one thread: a second one spins for these tiny models (the 360 replies took
// 21 s on the default two threads of a busy two-core host, 2.6 s on one)
const server = await startServer(['-c', '1024', '--parallel', '4', '-t', '1']);
const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
const started = Date.now();
const seen = await runCases(client, 'stories260K', cases, SEEDS);
const storiesStats = { ...stats };

// Branch coverage. Enum values vary across seeds as they are. After its
// last required property stories260K all but always closes the object
// (none of 30 seeds wrote an optional one), so the cases with optional
// properties run again with "," favoured by a logit bias: both branches
// must then have been generated, and validated.
const coverage = (filter) => {
  let nodes = 0, varied = 0;
  const same = [];
  for (const [name, sets] of seen)
    for (const [node, values] of Object.entries(sets)) {
      if (!filter(node)) continue;
      nodes++;
      if (values.size > 1) varied++;
      else same.push(`${name}${node}: ${[...values]}`);
    }
  return { nodes, varied, same };
};
const enums = coverage((node) => node.endsWith(' enum'));
console.log(`stories260K: ${cases.length} schemas x ${SEEDS} seeds in ${((Date.now() - started) / 1000).toFixed(1)} s: ` +
  `${storiesStats.stop} stopped (${storiesStats.valid} valid, the longest ${storiesStats.longest} tokens), ` +
  `${storiesStats.length} cut at ${MAX_TOKENS} tokens; ` +
  `${enums.varied} of ${enums.nodes} enum nodes took more than one value; ${huge} numbers beyond double range`);
check(storiesStats.stop >= 0.8 * storiesStats.replies, 'most replies end by themselves', storiesStats);
check(storiesStats.valid === storiesStats.stop, 'every reply that ended validates');
check(seen.size >= 30, 'at least 30 schemas gave a valid reply', seen.size);
check(enums.nodes >= 2 && enums.varied === enums.nodes, 'enum values vary across seeds', enums.same);
{
  const comma = (await postJson(`${server.url}/tokenize`, { content: ',' })).json.tokens.at(-1);
  const optional = cases.filter((c) => Object.keys(seen.get(c.name) ?? {}).some((node) => node.endsWith(' optional')));
  const before = { ...stats };
  await runCases(client, 'stories260K', optional, 2 * SEEDS, { logit_bias: { [comma]: 5 } }, seen);
  const opt = coverage((node) => node.endsWith(' optional'));
  console.log(`optional properties (+5 on ","): ${optional.length} schemas x ${2 * SEEDS} seeds: ${stats.stop - before.stop} stopped ` +
    `(${stats.valid - before.valid} valid); ${opt.varied} of ${opt.nodes} optional properties both present and absent`);
  if (opt.same.length) console.log(`  one branch only: ${opt.same.join('; ')}`);
  check(stats.valid - before.valid === stats.stop - before.stop, 'every biased reply that ended validates');
  check(opt.nodes >= 5 && opt.varied >= 0.6 * opt.nodes, 'optional properties both present and absent', opt.same);
}

// --- a stream gives the same text as the whole reply ------------------------------------------

{
  const c = cases.find((x) => x.name === 'object_required_optional');
  const req = { model: 'stories260K', messages, seed: 3, temperature: 1, max_tokens: MAX_TOKENS,
    response_format: { type: 'json_schema', json_schema: { name: 'x', schema: c.schema } } };
  const whole = await client.chat.completions.create(req);
  let text = '';
  for await (const chunk of await client.chat.completions.create({ ...req, stream: true })) text += chunk.choices[0]?.delta?.content ?? '';
  check(text === whole.choices[0].message.content, 'a streamed schema reply is the whole one', text, whole.choices[0].message.content);
  check(validator(c.schema)(JSON.parse(text)), 'the streamed reply validates', text);
}

// --- llama-server's fields, and json_object with a schema --------------------------------------

{
  const schema = { type: 'object', properties: { n: { type: 'integer', minimum: 1, maximum: 9 }, ok: { type: 'boolean' } }, required: ['n', 'ok'] };
  const ajv = validator(schema);
  for (const [what, extra] of [['json_schema field', { json_schema: schema }],
    ['response_format json_object with a schema', { response_format: { type: 'json_object', schema } }]])
    for (let seed = 1; seed <= 3; seed++) {
      const r = await client.chat.completions.create({ model: 'stories260K', messages, seed, temperature: 1, max_tokens: 100, ...extra });
      check(r.choices[0].finish_reason === 'stop' && ajv(JSON.parse(r.choices[0].message.content)), `${what}: validates`, r.choices[0].message.content);
    }
  const grammar = 'root ::= ("yes" | "no") ", " [a-z]{2,8} "."';
  const outs = new Set();
  for (let seed = 1; seed <= 6; seed++) {
    const r = await client.chat.completions.create({ model: 'stories260K', messages, seed, temperature: 1, max_tokens: 50, grammar });
    const text = r.choices[0].message.content;
    check(/^(yes|no), [a-z]{2,8}\.$/.test(text) && r.choices[0].finish_reason === 'stop', 'grammar: the reply is in the language', text);
    outs.add(text);
  }
  check(outs.size > 1, 'grammar: seeds give different replies', [...outs]);
  const comp = await client.completions.create({ model: 'stories260K', prompt: 'Once upon a time', seed: 2, temperature: 1, max_tokens: 50, grammar });
  check(/^(yes|no), [a-z]{2,8}\.$/.test(comp.choices[0].text), 'grammar on /v1/completions', comp.choices[0].text);
}

// --- Ollama's format with a schema --------------------------------------------------------------

{
  const ollama = new Ollama({ host: server.url });
  const list = cases.filter((c) => typeof c.schema === 'object' && c.schema.type === 'object').slice(0, 8);
  let ok = 0;
  for (const c of list) {
    const r = await ollama.chat({ model: 'stories260K', messages, format: c.schema, stream: false, options: { seed: 5, temperature: 1, num_predict: MAX_TOKENS } });
    if (r.done_reason !== 'stop') continue;
    let valid = false;
    try { valid = validator(c.schema)(parseJson(r.message.content)); } catch {}
    check(valid, `ollama format ${c.name}: validates`, r.message.content);
    ok += valid;
  }
  const g = await ollama.generate({ model: 'stories260K', prompt: 'Once', format: list[0].schema, stream: false, options: { seed: 1, temperature: 1 } });
  check(validator(list[0].schema)(JSON.parse(g.response)), 'ollama generate with a schema validates', g.response);
  check(ok >= list.length - 1, 'ollama: the schema replies end and validate', ok, list.length);
  const plain = await ollama.chat({ model: 'stories260K', messages, format: 'json', stream: false, options: { seed: 5, num_predict: 60 } });
  check(plain.message.content.trim().startsWith('{'), 'ollama format "json" is still JSON mode', plain.message.content);
}

// --- the AI SDK: generateObject with a zod schema -------------------------------------------------

{
  const provider = createOpenAICompatible({ name: 'sprout', baseURL: `${server.url}/v1`, supportsStructuredOutputs: true });
  const schema = z.object({ name: z.string().max(12), mood: z.enum(['happy', 'sad', 'sleepy']), count: z.number().int().min(0).max(9), tags: z.array(z.string().max(6)).max(3) });
  const moods = new Set();
  for (let seed = 1; seed <= 4; seed++) {
    try {
      const { object } = await generateObject({ model: provider('stories260K'), schema, prompt: 'A story character as JSON.', seed, temperature: 1, maxRetries: 0 });
      check(schema.safeParse(object).success, 'generateObject: the object parses with zod', object);
      moods.add(object.mood);
    } catch (e) {
      check(false, 'generateObject', e?.message, e?.text);
    }
  }
  check(moods.size > 1, 'generateObject: the enum varies across seeds', [...moods]);
}

// --- errors ---------------------------------------------------------------------------------------

{
  for (const e of errorCases.filter((x) => x.schema !== undefined)) {
    await checkRejects(client.chat.completions.create({ model: 'stories260K', messages, max_tokens: 5,
      response_format: { type: 'json_schema', json_schema: { name: e.name, schema: e.schema } } }),
      `errors.json ${e.name}`, (err) => err.status === 400 && err.message.includes(e.message));
  }
  await checkRejects(client.chat.completions.create({ model: 'stories260K', messages, grammar: 'root ::= "a"\nx ::= y' }), 'bad grammar',
    (err) => err.status === 400 && /grammar:2:\d+: .*'y'/.test(err.message) && err.error?.param === 'grammar');
  await checkRejects(client.chat.completions.create({ model: 'stories260K', messages, grammar: 'root ::= "a"', json_schema: { type: 'string' } }),
    'grammar with a schema', (err) => err.status === 400 && /not both/.test(err.message));
  await checkRejects(client.chat.completions.create({ model: 'stories260K', messages, grammar: 'root ::= "a"', response_format: { type: 'json_object' } }),
    'grammar with JSON mode', (err) => err.status === 400);
  await checkRejects(client.chat.completions.create({ model: 'stories260K', messages, json_schema: { type: 'string' },
    response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'integer' } } } }), 'two schemas', (err) => err.status === 400);
  const r = await postJson(`${server.url}/api/chat`, { model: 'stories260K', messages, stream: false, format: { type: 'array', uniqueItems: true } });
  check(r.status === 400 && /uniqueItems/.test(r.json?.error), 'ollama: an unsupported keyword is a 400 naming it', r.status, r.text);
  const bad = await postJson(`${server.url}/v1/chat/completions`, { messages, response_format: { type: 'json_schema', json_schema: { name: 'x', schema: 'integer' } } });
  check(bad.status === 400 && bad.json?.error?.param === 'response_format.json_schema', 'a schema that is not an object', bad.text);
}

// --- a random Qwen2 (BPE vocabulary, multi-byte tokens) beside it -----------------------------------
// With a Qwen2.5-style template that teaches <tool_call> blocks, it also
// answers forced tool calls: a random model writes valid calls only if the
// grammar holds it to them.

const qwenTemplate = `{%- if tools %}<|im_start|>system
# Tools

You may call one or more functions to assist with the user query.

<tools>
{% for t in tools %}{{ t | tojson }}
{% endfor %}</tools>

For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:
<tool_call>
{"name": <function-name>, "arguments": <args-json-object>}
</tool_call><|im_end|>
{% endif %}
{%- for m in messages %}<|im_start|>{{ m.role }}
{{ m.content }}<|im_end|>
{% endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}`;
const templateDir = mkdtempSync(join(tmpdir(), 'sprout-structured-'));
writeFileSync(join(templateDir, 'qwen.jinja'), qwenTemplate);

{
  const arch = await startServer(['-m', join(SHARED, 'arch/qwen2-Q8_0.gguf'), '-c', '1024', '--parallel', '4', '-t', '1',
    '--chat-template-file', join(templateDir, 'qwen.jinja')]);
  const qclient = new OpenAI({ baseURL: `${arch.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  const model = (await qclient.models.list()).data[0].id;
  const before = { ...stats };
  const pick = ['object_required_optional', 'enum_mixed', 'pattern_phone', 'format_date', 'min_max_items', 'integer_range_multidigit', 'one_of_discriminated_refs'];
  const list = cases.filter((c) => pick.includes(c.name));
  const chosen = list.length >= 4 ? list : cases.slice(7, 13);
  await runCases(qclient, model, chosen, 3);
  console.log(`qwen2-Q8_0: ${chosen.length} schemas x 3 seeds: ${stats.stop - before.stop} stopped (${stats.valid - before.valid} valid), ${stats.length - before.length} cut`);
  check(stats.valid - before.valid >= 1, 'qwen2: replies end and validate');

  // strict tool calls, forced
  const tools = [
    { type: 'function', function: { name: 'get_weather', description: 'The weather in a city', strict: true,
      parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 12 }, unit: { enum: ['c', 'f'] } }, required: ['city', 'unit'], additionalProperties: false } } },
    { type: 'function', function: { name: 'book_table', description: 'Book a table', strict: true,
      parameters: { type: 'object', properties: { people: { type: 'integer', minimum: 1, maximum: 8 }, time: { type: 'string', format: 'time' } }, required: ['people', 'time'], additionalProperties: false } } },
  ];
  const byName = Object.fromEntries(tools.map((t) => [t.function.name, validator(t.function.parameters)]));
  const ask = [{ role: 'user', content: 'Book a table for two, or tell me the weather.' }];
  const names = new Set();
  let calls = 0;
  const forced = [];
  for (let seed = 1; seed <= 6; seed++) forced.push([seed, 'required']);
  for (let seed = 1; seed <= 3; seed++) forced.push([seed, { type: 'function', function: { name: 'book_table' } }]);
  for (const [seed, tool_choice] of forced) {
    const r = await qclient.chat.completions.create({ model, messages: ask, tools, tool_choice, seed, temperature: 1, max_tokens: 300 });
    const choice = r.choices[0], call = choice.message.tool_calls?.[0];
    let valid = false;
    try { valid = choice.message.tool_calls.length === 1 && byName[call.function.name](JSON.parse(call.function.arguments)); } catch {}
    check(choice.finish_reason === 'tool_calls' && valid, `forced tool call (seed ${seed}, ${JSON.stringify(tool_choice)}) validates`,
      choice.finish_reason, JSON.stringify(choice.message));
    if (typeof tool_choice === 'object') check(call?.function?.name === 'book_table', 'a named tool_choice calls that tool', call?.function?.name);
    else names.add(call?.function?.name);
    calls += valid;
  }
  // (which tool "required" picks is the random model's choice; the named choice covers book_table)
  console.log(`qwen2-Q8_0 forced tool calls: ${calls} of ${forced.length} valid (tools called: ${[...names]})`);
  const loose = { type: 'function', function: { name: 'count', parameters: { type: 'object', properties: { n: { type: 'integer', multipleOf: 3 } } } } };
  await checkRejects(qclient.chat.completions.create({ model, messages: ask, tools: [{ ...loose, function: { ...loose.function, strict: true } }], tool_choice: 'required' }),
    'a strict tool with an unsupported keyword', (err) => err.status === 400 && /tools\[0\]\.function\.parameters: unsupported keyword multipleOf/.test(err.message));
  const notStrict = await qclient.chat.completions.create({ model, messages: ask, tools: [loose], tool_choice: 'required', seed: 1, temperature: 1, max_tokens: 200 });
  check(notStrict.choices[0].finish_reason === 'tool_calls' && notStrict.choices[0].message.tool_calls[0].function.name === 'count',
    'a tool that is not strict: its arguments any object', JSON.stringify(notStrict.choices[0].message));
  // tool_choice "auto" with strict tools: a lazy grammar (from "<tool_call>" on); text before any call is free, so a
  // reply that calls nothing comes back as text
  const auto = await qclient.chat.completions.create({ model, messages: ask, tools, tool_choice: 'auto', seed: 2, temperature: 1, max_tokens: 40 });
  const autoCall = auto.choices[0].message.tool_calls?.[0];
  let autoValid = !autoCall;
  try { if (autoCall) autoValid = byName[autoCall.function.name](JSON.parse(autoCall.function.arguments)); } catch {}
  check(autoValid && (autoCall || auto.choices[0].message.content.length > 0), 'tool_choice auto with strict tools', JSON.stringify(auto.choices[0]));
  // a forced call with a template that teaches no <tool_call> shape (stories260K's own): the bare object, which the
  // parser takes from any model
  for (let seed = 1; seed <= 3; seed++) {
    const r = await client.chat.completions.create({ model: 'stories260K', messages: ask, tools, tool_choice: 'required', seed, temperature: 1,
      max_tokens: 300 });
    const choice = r.choices[0], call = choice.message.tool_calls?.[0];
    let valid = false;
    try { valid = choice.message.tool_calls.length === 1 && byName[call.function.name](JSON.parse(call.function.arguments)); } catch {}
    check(choice.finish_reason === 'tool_calls' && valid, `forced bare tool call on stories260K (seed ${seed}) validates`, JSON.stringify(choice));
  }
  await checkRejects(qclient.chat.completions.create({ model, messages: ask, tools, tool_choice: { type: 'function', function: { name: 'nope' } } }),
    'tool_choice naming no tool', (err) => err.status === 400 && /no offered tool is named "nope"/.test(err.message));
  await arch.stop();
}

await server.stop();
finish();
