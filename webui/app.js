// The chat page: conversations on the left, the chosen one in the middle,
// a reply streamed in as the server sends it, Stop/Esc to cut it short,
// regenerate, edit and resend, and errors shown in the page with a retry.
import { ApiError, contextSize, listModels, streamChat } from './api.js';
import { Attachments, withAttachments } from './attachments.js';
import { copyText, editMessage, renderMessage } from './chat.js';
import { requestBody, settingsDialog } from './settings.js';
import { Conversations, loadSettings, saveSettings } from './store.js';

const $ = (id) => document.getElementById(id);
const CURRENT_KEY = 'sprout.current.v1';

const chats = new Conversations();
let settings = loadSettings();
let current = chats.get(localStorage.getItem(CURRENT_KEY)) ?? null;
let running = null; // {controller, conversation} while a reply streams
let retry = null;   // what the error banner's Retry does
let contextTokens = null;
const attachments = new Attachments($('attach-file'), $('attachments'), (message) => showError(message, null));

// --- errors --------------------------------------------------------------------------------------------

// The banner under the messages: an error (with Retry when `again` is given), or with `notice` a plain message.
function showError(message, again, notice = false) {
  retry = again;
  $('error').classList.toggle('notice', notice);
  $('error-text').textContent = message;
  $('retry').hidden = !again;
  $('error').hidden = false;
}

function clearError() {
  $('error').hidden = true;
  retry = null;
}

// --- models --------------------------------------------------------------------------------------------

async function loadModels() {
  let models;
  try {
    models = await listModels(settings.apiKey);
  } catch (e) {
    if (e.status === 503) { // the model is still loading: ask again shortly
      showError('The model is loading…', null, true);
      setTimeout(loadModels, 1000);
      return;
    }
    showError(`Cannot list the models: ${e.message}`, () => {
      clearError();
      loadModels();
    });
    return;
  }
  if ($('error').classList.contains('notice')) clearError();
  const select = $('model');
  select.replaceChildren(...models.map((id) => Object.assign(document.createElement('option'), { value: id, textContent: id })));
  if (!models.includes(settings.model)) settings.model = models[0] ?? '';
  select.value = settings.model;
  // a picker only where there is a choice; else the one model's name
  const choice = models.length > 1;
  select.hidden = !choice;
  document.querySelector('.model-label').hidden = !choice;
  $('model-name').hidden = choice;
  $('model-name').textContent = choice ? '' : settings.model;
  contextTokens = settings.model ? await contextSize(settings.model, settings.apiKey) : null;
}

// --- the conversation list ----------------------------------------------------------------------------

function selectConversation(c) {
  if (running) stop();
  current = c;
  if (c) localStorage.setItem(CURRENT_KEY, c.id);
  else localStorage.removeItem(CURRENT_KEY);
  clearError();
  renderList();
  renderMessages();
  closeSidebarOnPhone();
}

function renameInline(li, c) {
  const input = Object.assign(document.createElement('input'), { value: c.title, className: 'rename' });
  input.setAttribute('aria-label', 'New name of the conversation');
  const done = (keep) => {
    if (keep) chats.rename(c.id, input.value);
    renderList();
    if (c === current) $('chat-title').textContent = c.title;
    li.parentElement?.querySelector(`[data-id="${c.id}"] .chat-open`)?.focus();
  };
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') done(true);
    else if (e.key === 'Escape') {
      e.stopPropagation();
      done(false);
    }
  });
  input.addEventListener('blur', () => input.isConnected && done(true));
  li.replaceChildren(input);
  input.focus();
  input.select();
}

function renderList() {
  const list = $('chat-list');
  list.replaceChildren();
  for (const c of chats.list) {
    const li = document.createElement('li');
    li.dataset.id = c.id;
    if (c === current) li.className = 'active';
    const open = Object.assign(document.createElement('button'), { type: 'button', className: 'chat-open', textContent: c.title });
    if (c === current) open.setAttribute('aria-current', 'true');
    open.addEventListener('click', () => selectConversation(c));
    const rename = Object.assign(document.createElement('button'), { type: 'button', className: 'icon small', textContent: '✎' });
    rename.setAttribute('aria-label', `Rename “${c.title}”`);
    rename.addEventListener('click', () => renameInline(li, c));
    const del = Object.assign(document.createElement('button'), { type: 'button', className: 'icon small', textContent: '×' });
    del.setAttribute('aria-label', `Delete “${c.title}”`);
    del.addEventListener('click', () => {
      if (!confirm(`Delete “${c.title}”?`)) return;
      chats.remove(c.id);
      if (c === current) selectConversation(chats.list[0] ?? null);
      else renderList();
    });
    li.append(open, rename, del);
    list.append(li);
  }
}

// --- messages ------------------------------------------------------------------------------------------

const actions = {
  copy: copyText,
  edit: (index) => {
    if (running) return;
    const article = $('messages').querySelector(`article[data-index="${index}"]`);
    editMessage(article, current.messages[index].content, {
      save: (text) => {
        if (!text.trim()) return;
        current.messages.splice(index);
        current.messages.push({ role: 'user', content: text });
        generate(current);
      },
      cancel: renderMessages,
    });
  },
  regenerate: () => {
    if (running || !current) return;
    while (current.messages.length && current.messages.at(-1).role === 'assistant') current.messages.pop();
    generate(current);
  },
};

function renderMessages() {
  const box = $('messages');
  box.querySelectorAll('article').forEach((a) => a.remove());
  $('chat-title').textContent = current?.title ?? 'sprout';
  const messages = current?.messages ?? [];
  $('empty').hidden = messages.length > 0;
  messages.forEach((m, i) => {
    const streaming = running?.conversation === current && running.message === m;
    box.append(renderMessage(m, i, { streaming, last: i === messages.length - 1, actions }));
  });
  box.scrollTop = box.scrollHeight;
}

// Redraws the streaming message once per frame, however many pieces came in it.
let frameAsked = false;
function redrawStreaming() {
  if (frameAsked) return;
  frameAsked = true;
  requestAnimationFrame(() => {
    frameAsked = false;
    if (!running || running.conversation !== current) return;
    const box = $('messages');
    const index = current.messages.indexOf(running.message);
    const article = box.querySelector(`article[data-index="${index}"]`);
    if (!article) return;
    const atBottom = box.scrollHeight - box.scrollTop - box.clientHeight < 40;
    renderMessage(running.message, index, { streaming: true, actions }, article);
    if (atBottom) box.scrollTop = box.scrollHeight;
  });
}

function setBusy(busy) {
  $('send').hidden = busy;
  $('stop').hidden = !busy;
  $('messages').setAttribute('aria-busy', String(busy));
}

// Streams a reply to conversation c's messages.
async function generate(c) {
  clearError();
  const reply = { role: 'assistant', content: '' };
  const body = requestBody(settings, c.messages);
  c.messages.push(reply);
  chats.touch(c);
  const controller = new AbortController();
  running = { controller, conversation: c, message: reply };
  setBusy(true);
  renderList();
  renderMessages();
  const t0 = performance.now();
  let tFirst = null, pieces = 0, timings = null, usage = null, finish = null, saved = t0;
  // the reply so far is saved each second: a reload mid-reply keeps what came
  const first = () => {
    tFirst ??= performance.now();
    if (performance.now() - saved > 1000) {
      saved = performance.now();
      chats.persist();
    }
  };
  try {
    await streamChat(body, {
      apiKey: settings.apiKey,
      session: c.id,
      signal: controller.signal,
      on: {
        content: (t) => {
          first();
          pieces++;
          reply.content += t;
          redrawStreaming();
        },
        reasoning: (t) => {
          first();
          reply.reasoning = (reply.reasoning ?? '') + t;
          redrawStreaming();
        },
        tools: (calls) => {
          first();
          reply.tool_calls = calls;
          redrawStreaming();
        },
        finish: (f) => (finish = f),
        timings: (t) => (timings = t),
        usage: (u) => (usage = u),
      },
    });
  } catch (e) {
    if (e.name === 'AbortError') finish = 'stopped';
    else {
      const err = e instanceof ApiError ? e : new ApiError(0, String(e.message ?? e));
      if (!reply.content && !reply.reasoning && !reply.tool_calls) c.messages.splice(c.messages.indexOf(reply), 1);
      showError(err.message, () => {
        if (c.messages.at(-1) === reply) c.messages.pop();
        if (current !== c) selectConversation(c);
        generate(c);
      });
      finish = 'error';
    }
  } finally {
    const tEnd = performance.now();
    const tokens = usage?.completion_tokens ?? timings?.predicted_n ?? pieces;
    reply.stats = {
      tokens,
      tokensPerSecond: timings?.predicted_per_second || (tokens > 1 && tFirst ? ((tokens - 1) * 1000) / (tEnd - tFirst) : 0),
      ttftMs: tFirst !== null ? tFirst - t0 : undefined,
      contextUsed: usage?.total_tokens ?? ((timings?.prompt_n ?? 0) + (timings?.predicted_n ?? 0) || undefined),
      contextSize: contextTokens ?? undefined,
      finish,
      stopped: finish === 'stopped' || undefined,
    };
    if (finish === 'error') delete reply.stats;
    running = null;
    setBusy(false);
    if (!chats.touch(c) && finish !== 'error') showError('This browser\'s storage is full: the conversation is not saved. Export, then delete old ones.', null);
    if (c === current) renderMessages();
    renderList();
    if (document.activeElement === document.body || document.activeElement === $('stop')) $('composer-input').focus();
  }
}

function stop() {
  running?.controller.abort();
}

function send() {
  const input = $('composer-input');
  if ((!input.value.trim() && !attachments.count) || running) return;
  const typed = input.value.trim(), files = attachments.take();
  const text = withAttachments(typed, files);
  if (!current) {
    current = chats.create();
    localStorage.setItem(CURRENT_KEY, current.id);
  }
  if (!current.messages.length) current.title = (typed.split('\n')[0] || files[0].name).slice(0, 60);
  current.messages.push({ role: 'user', content: text });
  input.value = '';
  autosize(input);
  generate(current);
}

function autosize(area) {
  area.style.height = 'auto';
  area.style.height = `${Math.min(area.scrollHeight, 240)}px`;
}

// --- files --------------------------------------------------------------------------------------------

function exportAll() {
  const blob = new Blob([chats.exportJson()], { type: 'application/json' });
  const a = Object.assign(document.createElement('a'), { href: URL.createObjectURL(blob), download: 'sprout-conversations.json' });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}

async function importFile(file) {
  try {
    const n = chats.importJson(await file.text());
    renderList();
    showError(`Imported ${n} conversation${n === 1 ? '' : 's'}.`, null, true);
  } catch (e) {
    showError(`Cannot import ${file.name}: ${e.message}`, null);
  }
}

// --- layout -------------------------------------------------------------------------------------------

function closeSidebarOnPhone() {
  document.body.classList.remove('sidebar-open');
  $('toggle-sidebar').setAttribute('aria-expanded', 'false');
}

// --- wiring -------------------------------------------------------------------------------------------

function wire() {
  const input = $('composer-input');
  $('composer').addEventListener('submit', (e) => {
    e.preventDefault();
    send();
  });
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      send();
    }
  });
  input.addEventListener('input', () => autosize(input));
  $('stop').addEventListener('click', stop);
  document.addEventListener('keydown', (e) => {
    if (e.key !== 'Escape' || $('settings').open) return;
    if (running) {
      e.preventDefault();
      stop();
    } else if (document.body.classList.contains('sidebar-open')) {
      closeSidebarOnPhone();
      $('toggle-sidebar').focus();
    }
  });
  $('new-chat').addEventListener('click', () => {
    selectConversation(null);
    input.focus();
  });
  $('retry').addEventListener('click', () => {
    const again = retry;
    clearError();
    again?.();
  });
  $('dismiss-error').addEventListener('click', clearError);
  $('export').addEventListener('click', exportAll);
  $('import-file').addEventListener('change', (e) => {
    const f = e.target.files?.[0];
    if (f) importFile(f);
    e.target.value = '';
  });
  $('toggle-sidebar').addEventListener('click', () => {
    const open = document.body.classList.toggle('sidebar-open');
    $('toggle-sidebar').setAttribute('aria-expanded', String(open));
    if (open) $('new-chat').focus();
  });
  $('model').addEventListener('change', async (e) => {
    settings.model = e.target.value;
    saveSettings(settings);
    contextTokens = await contextSize(settings.model, settings.apiKey);
  });
  const dialog = settingsDialog($('settings'), () => settings, (s) => {
    const keyChanged = s.apiKey !== settings.apiKey;
    settings = s;
    saveSettings(settings);
    if (keyChanged) loadModels();
  });
  $('open-settings').addEventListener('click', () => dialog.open());
}

wire();
renderList();
renderMessages();
loadModels();
$('composer-input').focus();
