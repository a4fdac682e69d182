// The web chat page in a real browser: headless Chromium (puppeteer-core)
// against `sprout serve` with stories260K. A reply streams in over several
// frames, Stop cancels it on the server (/metrics), the conversation
// survives a reload, the settings reach the request, a reply carrying
// markdown and HTML/script payloads (a fake stream) renders as text, and
// errors (a 500, the server gone) show in the page with a working Retry.
// Any request to a host other than the server fails the test. Screenshots
// (1280 and 390 wide, light and dark) go to SPROUT_SCREENSHOT_DIR.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { check, finish, startServer } from '../server/harness.mjs';

const require = createRequire(join(process.env.SPROUT_NODE_MODULES, 'package.json'));
const puppeteer = require('puppeteer-core');
const shots = process.env.SPROUT_SCREENSHOT_DIR ?? 'webui-screenshots';
mkdirSync(shots, { recursive: true });

const server = await startServer(['--parallel', '2']);
const origin = new URL(server.url).origin;
const profile = mkdtempSync(join(tmpdir(), 'sprout-webui-'));
const browser = await puppeteer.launch({
  executablePath: process.env.SPROUT_CHROMIUM,
  headless: true,
  userDataDir: profile,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--no-default-browser-check',
    '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-extensions'],
});
const timer = setTimeout(() => {
  console.error('check failed: the test ran past 120 s');
  process.exit(1);
}, 120000);

const page = await browser.newPage();
await browser.defaultBrowserContext().overridePermissions(origin, ['clipboard-read', 'clipboard-write', 'clipboard-sanitized-write']);
await page.setViewport({ width: 1280, height: 800 });

// --- every request the page makes: only to the server; some answered by the test -------------------------
const foreign = [], chatBodies = [], pageErrors = [];
let fake = null; // (request) => response for the next chat requests, or null: the real server
let twoModels = false; // GET /v1/models lists a second model
let loading = 1; // how many GET /v1/models still answer 503, as while the model loads
await page.setRequestInterception(true);
page.on('request', (req) => {
  const url = new URL(req.url());
  if (url.origin !== origin && !url.protocol.startsWith('blob') && !url.protocol.startsWith('data')) {
    foreign.push(req.url());
    return req.abort();
  }
  if (url.pathname === '/v1/chat/completions') {
    chatBodies.push(JSON.parse(req.postData()));
    if (fake) return req.respond(fake(req));
  }
  if (url.pathname === '/v1/models' && loading > 0 && loading--)
    return req.respond({ status: 503, contentType: 'application/json', body: JSON.stringify({ error: { message: 'the model is still loading' } }) });
  if (url.pathname === '/v1/models' && twoModels)
    return req.respond({ status: 200, contentType: 'application/json', body: JSON.stringify({ object: 'list', data: [{ id: 'stories260K' }, { id: 'other-model' }] }) });
  return req.continue();
});
page.on('pageerror', (e) => pageErrors.push(String(e)));
page.on('console', (m) => {
  // a 500 the test asked for, and the server it stopped, are the only errors the console may show
  if (m.type() === 'error' && !/status of (404|500|503)|ERR_CONNECTION_REFUSED|Failed to fetch/.test(m.text())) pageErrors.push(m.text());
});
page.on('dialog', (d) => d.accept());

const text = (sel) => page.$eval(sel, (e) => e.textContent);
const lastReply = () => page.$eval('#messages article.assistant:last-of-type .msg-body', (e) => e.textContent).catch(() => '');
const replyDone = () => page.waitForFunction(() => document.querySelector('#stop').hidden, { timeout: 20000 });

async function metric(name) {
  const body = await (await fetch(`${server.url}/metrics`)).text();
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(body);
  return m ? Number(m[1]) : NaN;
}

// --- the page loads, from the server alone -------------------------------------------------------------
const response = await page.goto(`${server.url}/`, { waitUntil: 'networkidle0' });
check(response.status() === 200, 'GET / is 200', response.status());
check(/default-src 'self'/.test(response.headers()['content-security-policy'] ?? ''), 'the page has a CSP');
check(/loading/.test(await text('#error-text')), 'the page says the model is loading', await text('#error-text'));
await page.waitForFunction(() => document.querySelector('#model-name').textContent.length > 0, { timeout: 5000 });
check(await page.$eval('#error', (e) => e.hidden), 'and asks again until it is ready');
check((await text('#model-name')) === 'stories260K', 'the model is named', await text('#model-name'));

// --- keyboard: the message box has the focus, Tab moves on with a visible ring -----------------------------
check((await page.evaluate(() => document.activeElement.id)) === 'composer-input', 'the message box has the focus');
await page.keyboard.press('Tab');
const ring = await page.evaluate(() => ({ id: document.activeElement.id, outline: getComputedStyle(document.activeElement).outlineStyle }));
check(ring.id === 'send' && ring.outline === 'solid', 'Tab reaches Send and shows a focus ring', ring);
const unlabelled = await page.$$eval('button, select, textarea, input', (l) => l.filter((e) => !e.hidden && e.offsetParent !== null &&
  !(e.getAttribute('aria-label') || e.textContent.trim() || (e.id && document.querySelector(`label[for="${e.id}"]`)))).map((e) => e.outerHTML));
check(unlabelled.length === 0, 'every control has a label', unlabelled);

// --- a reply streams in over several frames; Esc stops it, and the server cancels ------------------------
const cancelledBefore = await metric('sprout_requests_cancelled_total');
check(cancelledBefore === 0, '/metrics counts cancelled requests', cancelledBefore);
await page.focus('#composer-input');
await page.keyboard.type('Once upon a time');
await page.keyboard.down('Shift');
await page.keyboard.press('Enter');
await page.keyboard.up('Shift');
await page.keyboard.type('there was');
check((await page.$eval('#composer-input', (e) => e.value)) === 'Once upon a time\nthere was', 'Shift+Enter is a new line');
await page.keyboard.press('Enter');
// the length of the reply at each animation frame, until it has grown in 6 of them
const lengths = await page.evaluate(() => new Promise((resolve) => {
  const seen = [];
  const t0 = performance.now();
  const frame = () => {
    const body = document.querySelector('#messages article.assistant:last-of-type .msg-body');
    const n = body ? body.textContent.replace('…', '').length : 0;
    if (!seen.length || n !== seen.at(-1)) seen.push(n);
    if (seen.filter((x) => x > 0).length >= 6 || performance.now() - t0 > 15000) resolve(seen);
    else requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
}));
check(lengths.filter((x) => x > 0).length >= 6, 'the reply grew over several frames', lengths);
check(!(await page.$eval('#stop', (e) => e.hidden)), 'Stop shows while the reply streams');
await page.keyboard.press('Escape');
await replyDone();
let cancelled = 0;
for (let i = 0; i < 100 && !(cancelled > cancelledBefore); i++) {
  cancelled = await metric('sprout_requests_cancelled_total');
  if (!(cancelled > cancelledBefore)) await new Promise((r) => setTimeout(r, 50));
}
check(cancelled === cancelledBefore + 1, 'the server counts the stopped request as cancelled', cancelledBefore, cancelled);
check(/stopped/.test(await text('#messages article.assistant:last-of-type .msg-stats')), 'the reply says it was stopped');
const partial = await lastReply();
check(partial.length > 0, 'the stopped reply keeps its text');
check(chatBodies[0]?.stream === true && chatBodies[0]?.stream_options?.include_usage === true, 'the page streams and asks for usage', chatBodies[0]);
check(chatBodies[0]?.messages?.at(-1)?.content === 'Once upon a time\nthere was', 'the message is sent as typed', chatBodies[0]?.messages);

// --- copy --------------------------------------------------------------------------------------------
await page.click('#messages article.user .msg-actions button');
const copied = await page.evaluate(() => navigator.clipboard.readText()).catch((e) => `(${e})`);
check(copied === 'Once upon a time\nthere was', 'Copy puts the message on the clipboard', copied);

// --- settings reach the request; regenerate; the reply's figures --------------------------------------
await page.click('#open-settings');
await page.waitForSelector('#settings[open]');
const fields = { system: 'You tell short stories.', temperature: '0.3', top_k: '7', top_p: '0.8', min_p: '0.05', max_tokens: '12', seed: '42',
  stop: 'The end\nTHE END' };
for (const [name, value] of Object.entries(fields)) {
  await page.$eval(`#set-${name}`, (e) => (e.value = ''));
  await page.type(`#set-${name}`, value);
}
await page.click('#settings-save');
await page.waitForFunction(() => !document.querySelector('#settings').open);
await page.click('#messages article.assistant .msg-actions button[aria-label^="Regenerate"]');
await replyDone();
const sent = chatBodies.at(-1);
check(sent.temperature === 0.3 && sent.top_k === 7 && sent.top_p === 0.8 && sent.min_p === 0.05 && sent.max_tokens === 12 && sent.seed === 42,
  'the sampling settings are in the request', sent);
check(JSON.stringify(sent.stop) === '["The end","THE END"]', 'the stop strings are in the request', sent.stop);
check(sent.messages[0].role === 'system' && sent.messages[0].content === fields.system, 'the system prompt leads', sent.messages[0]);
check(sent.messages.length === 2 && sent.model === 'stories260K', 'regenerate drops the old reply and names the model', sent.messages.length, sent.model);
const stats = await text('#messages article.assistant:last-of-type .msg-stats');
check(/12 tokens/.test(stats) && /tokens\/s/.test(stats) && /first token \d+ ms/.test(stats) && /context \d+\/2048/.test(stats),
  'the reply shows tokens, tokens/s, time to first token and context', stats);

// --- edit a past message and resend ----------------------------------------------------------------------
await page.click('#messages article.user .msg-actions button[aria-label^="Edit"]');
await page.waitForSelector('#messages .edit-area');
await page.$eval('#messages .edit-area', (e) => (e.value = ''));
await page.type('#messages .edit-area', 'Tim had a dog');
await page.keyboard.press('Enter');
await replyDone();
check(chatBodies.at(-1).messages.at(-1).content === 'Tim had a dog' && chatBodies.at(-1).messages.length === 2, 'the edited message is resent',
  chatBodies.at(-1).messages);
check((await page.$$('#messages article')).length === 2, 'the conversation is the edited message and a new reply');

// --- the conversation survives a reload -------------------------------------------------------------------
await page.reload({ waitUntil: 'networkidle0' });
check((await page.$$eval('#chat-list .chat-open', (l) => l.map((b) => b.textContent))).includes('Once upon a time'),
  'the conversation is listed after a reload');
check((await text('#messages article.user .msg-body')) === 'Tim had a dog', 'the conversation is shown after a reload');
check((await page.evaluate(() => JSON.parse(localStorage.getItem('sprout.settings.v1')).seed)) === 42, 'the settings survive a reload');

// --- several models: a picker, and the request names the one chosen (a 4xx shows the server's message) --------
twoModels = true;
await page.reload({ waitUntil: 'networkidle0' });
check(await page.$eval('#model', (e) => !e.hidden && e.options.length === 2), 'a model picker when the server lists several');
await page.select('#model', 'other-model');
await page.type('#composer-input', 'Which model?');
await page.keyboard.press('Enter');
await page.waitForSelector('#error:not([hidden])', { timeout: 5000 });
check(chatBodies.at(-1).model === 'other-model', 'the request names the chosen model', chatBodies.at(-1).model);
check(/^404 .*other-model.*not found/.test(await text('#error-text')), 'a 404 shows with the server\'s message', await text('#error-text'));
await page.select('#model', 'stories260K');
twoModels = false;

// --- a reply with markdown and HTML payloads renders as text -------------------------------------------------
const evil = [
  '## Heading <img src=x onerror="window.__pwned=1">', '', 'Some **bold**, *italic*, `x<y>` and a [link](https://example.com/a).',
  'A [bad link](javascript:window.__pwned=2) and ![pic](https://example.com/p.png) (see https://example.com/b_(c)).', '',
  '<script>window.__pwned=3</script>', '', '| a | b |', '|---|--:|', '| 1 | <b>2</b> |', '', '- one', '- two', '  1. nested', '',
  '```js', 'const s = "</code><script>window.__pwned=4</script>"; // note', 'return 42;', '```'].join('\n');
const sse = (chunks) => chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join('') + 'data: [DONE]\n\n';
const delta = (d, extra = {}) => ({ object: 'chat.completion.chunk', choices: [{ index: 0, delta: d, finish_reason: null }], ...extra });
fake = () => ({
  status: 200, contentType: 'text/event-stream',
  body: sse([delta({ role: 'assistant', content: '' }), delta({ reasoning_content: 'Thinking <i>hard</i>.' }),
    ...evil.match(/[\s\S]{1,7}/g).map((piece) => delta({ content: piece })),
    delta({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":' } }] }),
    delta({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }),
    { object: 'chat.completion.chunk', choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }], timings: { predicted_per_second: 99.5, predicted_n: 60 } },
    { object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: 20, completion_tokens: 60, total_tokens: 80 } }]),
});
await page.click('#new-chat');
const attached = join(profile, 'notes.txt');
writeFileSync(attached, 'a line with ``` inside\nsecond line\n');
await (await page.$('#attach-file')).uploadFile(attached);
await page.waitForSelector('#attachments:not([hidden]) li');
await page.type('#composer-input', 'Show me markdown');
await page.keyboard.press('Enter');
await replyDone();
check(chatBodies.at(-1).messages.at(-1).content === 'Show me markdown\n\n````notes.txt\na line with ``` inside\nsecond line\n````',
  'an attached text file goes in the message, fenced', chatBodies.at(-1).messages.at(-1).content);
check(await page.$eval('#attachments', (e) => e.hidden), 'the message takes the attachment');
const md = await page.$eval('#messages article.assistant:last-of-type', (a) => ({
  pwned: window.__pwned ?? null,
  scripts: a.querySelectorAll('script, img, iframe, b').length,
  h2: a.querySelector('h2')?.textContent,
  strong: a.querySelector('strong')?.textContent,
  em: a.querySelector('em')?.textContent,
  links: [...a.querySelectorAll('a')].map((l) => [l.getAttribute('href'), l.rel]),
  cells: [...a.querySelectorAll('td')].map((c) => c.textContent),
  align: a.querySelector('td:nth-child(2)')?.style.textAlign,
  nested: a.querySelector('ul li ol li')?.textContent,
  code: a.querySelector('.code-block code')?.textContent,
  keyword: a.querySelector('.code-block .tok-kw')?.textContent,
  string: a.querySelector('.code-block .tok-str')?.textContent,
  copyButton: !!a.querySelector('.code-block .code-copy'),
  body: a.querySelector('.msg-body').textContent,
  reasoning: a.querySelector('details.reasoning .reasoning-text')?.textContent,
  reasoningOpen: a.querySelector('details.reasoning')?.open,
  tool: a.querySelector('.tool-call code')?.textContent,
  toolArgs: a.querySelector('.tool-call .tool-args')?.textContent,
  stats: a.querySelector('.msg-stats')?.textContent,
}));
check(md.pwned === null && md.scripts === 0, 'no payload ran and no element came from the reply\'s HTML', md.pwned, md.scripts);
check(md.h2 === 'Heading <img src=x onerror="window.__pwned=1">', 'a heading, its HTML as text', md.h2);
check(md.strong === 'bold' && md.em === 'italic', 'emphasis', md.strong, md.em);
check(JSON.stringify(md.links) === JSON.stringify([['https://example.com/a', 'noopener noreferrer'], ['https://example.com/p.png', 'noopener noreferrer'],
  ['https://example.com/b_(c)', 'noopener noreferrer']]), 'only safe links, the image as a link, a bare URL', md.links);
check(md.body.includes('<script>window.__pwned=3</script>') && md.body.includes('bad link'), 'the script tag is shown as text');
check(JSON.stringify(md.cells) === '["1","<b>2</b>"]' && md.align === 'right', 'a table with its alignment', md.cells, md.align);
check(md.nested === 'nested', 'a nested list', md.nested);
check(md.code === 'const s = "</code><script>window.__pwned=4</script>"; // note\nreturn 42;' && md.keyword === 'const' && md.copyButton &&
  md.string === '"</code><script>window.__pwned=4</script>"', 'fenced code, coloured, with a copy button', md.code, md.keyword, md.string);
check(md.reasoning === 'Thinking <i>hard</i>.' && md.reasoningOpen === false, 'the reasoning in a closed block', md.reasoning, md.reasoningOpen);
check(md.tool === 'get_weather' && JSON.parse(md.toolArgs).city === 'Paris', 'the tool call is shown', md.tool, md.toolArgs);
check(/99\.5 tokens\/s/.test(md.stats) && /context 80\/2048/.test(md.stats), 'the figures come from timings and usage', md.stats);
const hostile = await page.evaluate(async () => {
  const { renderMarkdown } = await import('/webui/markdown.js');
  const inputs = ['>'.repeat(5000) + ' x', '- '.repeat(5000) + 'x', '['.repeat(5000), '*a '.repeat(5000), 'a _b'.repeat(5000),
    'https://x.org/' + '('.repeat(3000), '|'.repeat(5000) + '\n|-|\n', '```\n' + '<script>'.repeat(1000)];
  const t0 = performance.now();
  const failures = [];
  for (const text of inputs) {
    try {
      renderMarkdown(text, () => {});
    } catch (e) {
      failures.push(`${text.slice(0, 12)}: ${e}`);
    }
  }
  return { failures, ms: performance.now() - t0 };
});
check(hostile.failures.length === 0 && hostile.ms < 3000, 'deep nesting and unclosed marks render, quickly', hostile);
await page.click('#messages article.assistant:last-of-type .code-copy');
const copiedCode = await page.evaluate(() => navigator.clipboard.readText()).catch((e) => `(${e})`);
check(copiedCode.startsWith('const s = '), 'the code block\'s Copy copies the code', copiedCode);

// --- screenshots: desktop and phone, light and dark ---------------------------------------------------------
for (const [scheme, width, height] of [['light', 1280, 800], ['dark', 1280, 800], ['light', 390, 844], ['dark', 390, 844]]) {
  await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: scheme }]);
  await page.setViewport({ width, height, deviceScaleFactor: 1, isMobile: width < 500, hasTouch: width < 500 });
  await page.screenshot({ path: join(shots, `chat-${width}-${scheme}.png`) });
}
const phone = await page.evaluate(() => ({
  sidebarHidden: getComputedStyle(document.querySelector('#sidebar')).visibility === 'hidden',
  overflow: document.documentElement.scrollWidth > window.innerWidth,
}));
check(phone.sidebarHidden && !phone.overflow, 'at phone width the list folds away and nothing overflows', phone);
await page.click('#toggle-sidebar');
await page.waitForFunction(() => getComputedStyle(document.querySelector('#sidebar')).visibility === 'visible');
await new Promise((r) => setTimeout(r, 250));
await page.screenshot({ path: join(shots, 'list-390-dark.png') });
await page.click('#chat-list .chat-open');
await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'light' }]);
await page.setViewport({ width: 1280, height: 800 });

// --- the list: rename, export, import, delete ------------------------------------------------------------------
const titles = () => page.$$eval('#chat-list .chat-open', (l) => l.map((b) => b.textContent));
await page.click('#chat-list li:first-child button[aria-label^="Rename"]');
await page.$eval('#chat-list .rename', (e) => (e.value = ''));
await page.type('#chat-list .rename', 'Markdown sample');
await page.keyboard.press('Enter');
check((await titles())[0] === 'Markdown sample' && (await text('#chat-title')) === 'Markdown sample', 'a conversation is renamed', await titles());
const downloads = mkdtempSync(join(tmpdir(), 'sprout-webui-dl-'));
const cdp = await page.createCDPSession();
await cdp.send('Browser.setDownloadBehavior', { behavior: 'allow', downloadPath: downloads });
await page.click('#export');
const exported = join(downloads, 'sprout-conversations.json');
for (let i = 0; i < 100 && !existsSync(exported); i++) await new Promise((r) => setTimeout(r, 20));
const dump = existsSync(exported) ? JSON.parse(readFileSync(exported, 'utf8')) : null;
const before = (await titles()).length;
check(dump?.format === 'sprout-conversations' && dump.conversations.length === before, 'Export writes every conversation', dump?.conversations?.length);
await (await page.$('#import-file')).uploadFile(exported);
await page.waitForFunction((n) => document.querySelectorAll('#chat-list li').length === n, { timeout: 5000 }, before * 2);
check((await titles()).filter((t) => t === 'Markdown sample').length === 2, 'Import adds the exported conversations');
for (let n = before * 2; n > before; n--) {
  await page.click('#chat-list li:last-child button[aria-label^="Delete"]'); // the dialog is accepted
  await page.waitForFunction((k) => document.querySelectorAll('#chat-list li').length === k, { timeout: 5000 }, n - 1);
}
check((await titles()).length === before, 'Delete removes a conversation');
const odd = join(downloads, 'odd.json');
writeFileSync(odd, JSON.stringify([{ id: '"]<x>', title: '<img src=x onerror="window.__pwned=5">', messages: [
  { role: 'user', content: 'hi' }, { role: 'evil', content: 'dropped' },
  { role: 'assistant', content: 'ok', stats: { tokens: 'many', tokensPerSecond: {}, finish: 7 }, tool_calls: [{ function: { name: {}, arguments: 3 } }, null] }] }]));
await (await page.$('#import-file')).uploadFile(odd);
await page.waitForFunction((n) => document.querySelectorAll('#chat-list li').length === n, { timeout: 5000 }, before + 1);
await page.click('#chat-list li:first-child .chat-open');
const oddView = await page.evaluate(() => ({ title: document.querySelector('#chat-title').textContent, n: document.querySelectorAll('#messages article').length,
  pwned: window.__pwned ?? null, tool: document.querySelector('#messages .tool-call code')?.textContent }));
check(oddView.title === '<img src=x onerror="window.__pwned=5">' && oddView.n === 2 && oddView.pwned === null && oddView.tool === '(unnamed)',
  'an odd import is cleaned: its title is text, bad roles and fields are dropped', oddView);
await page.click('#chat-list li:first-child button[aria-label^="Delete"]');
await page.waitForFunction((n) => document.querySelectorAll('#chat-list li').length === n, { timeout: 5000 }, before);
rmSync(downloads, { recursive: true, force: true });

// --- errors: a 500 with the server's message, then Retry --------------------------------------------------
fake = () => ({ status: 500, contentType: 'application/json', body: JSON.stringify({ error: { message: 'the test says no', code: 500 } }) });
await page.type('#composer-input', 'Hello');
await page.keyboard.press('Enter');
await page.waitForSelector('#error:not([hidden])', { timeout: 5000 });
check(/500.*the test says no/.test(await text('#error-text')), 'a 500 shows with the server\'s message', await text('#error-text'));
fake = null;
await page.click('#retry');
await replyDone();
check(await page.$eval('#error', (e) => e.hidden), 'Retry clears the error');
check((await lastReply()).length > 0, 'Retry gets a reply');

// --- errors: the server is gone ----------------------------------------------------------------------------
await server.stop();
await page.type('#composer-input', 'Anyone there?');
await page.keyboard.press('Enter');
await page.waitForSelector('#error:not([hidden])', { timeout: 5000 });
check(/Cannot reach the server/.test(await text('#error-text')), 'a server that is down is said so', await text('#error-text'));
check(!(await page.$eval('#retry', (e) => e.hidden)), 'with a Retry button');

check(foreign.length === 0, 'no request went to another host', foreign);
check(pageErrors.length === 0, 'no script errors or CSP violations', pageErrors);
clearTimeout(timer);
await browser.close();
rmSync(profile, { recursive: true, force: true });
finish();
