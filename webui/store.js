// Conversations and settings, kept in this browser's localStorage (nothing
// leaves the machine), and their export and import as JSON.

const CHATS_KEY = 'sprout.conversations.v1';
const SETTINGS_KEY = 'sprout.settings.v1';

/** What a request sends when the user has changed nothing: null leaves a field to the server. */
export const DEFAULT_SETTINGS = {
  system: '',
  temperature: null,
  top_k: null,
  top_p: null,
  min_p: null,
  repeat_penalty: null,
  max_tokens: null,
  seed: null,
  stop: [],
  model: '',
  apiKey: '',
};

function load(key, fallback) {
  try {
    const v = JSON.parse(localStorage.getItem(key));
    return v ?? fallback;
  } catch {
    return fallback;
  }
}

function save(key, value) {
  try {
    localStorage.setItem(key, JSON.stringify(value));
    return true;
  } catch { // full or turned off: the page still works for this visit
    return false;
  }
}

export function loadSettings() {
  return { ...DEFAULT_SETTINGS, ...load(SETTINGS_KEY, {}) };
}

export function saveSettings(settings) {
  return save(SETTINGS_KEY, settings);
}

function newId() {
  return `c${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
}

// A reply's figures, each of its type or left out (an import may bring anything).
function cleanStats(s) {
  if (!s || typeof s !== 'object') return undefined;
  const out = {};
  for (const k of ['tokens', 'tokensPerSecond', 'ttftMs', 'contextUsed', 'contextSize']) if (Number.isFinite(s[k])) out[k] = s[k];
  if (typeof s.finish === 'string') out.finish = s.finish.slice(0, 40);
  if (s.stopped === true) out.stopped = true;
  return out;
}

function cleanToolCalls(calls) {
  if (!Array.isArray(calls)) return undefined;
  const text = (v) => (typeof v === 'string' ? v : '');
  return calls.filter((c) => c && typeof c === 'object').map((c) => ({
    id: text(c.id), type: 'function', function: { name: text(c.function?.name), arguments: text(c.function?.arguments) },
  }));
}

// Only what a conversation is made of survives an import: roles, strings, numbers.
function cleanMessage(m) {
  if (!m || typeof m !== 'object' || !['user', 'assistant', 'system', 'tool'].includes(m.role)) return null;
  const out = { role: m.role, content: typeof m.content === 'string' ? m.content : '' };
  if (typeof m.reasoning === 'string' && m.reasoning) out.reasoning = m.reasoning;
  const calls = cleanToolCalls(m.tool_calls), stats = cleanStats(m.stats);
  if (calls?.length) out.tool_calls = calls;
  if (stats) out.stats = stats;
  return out;
}

function cleanConversation(c) {
  if (!c || typeof c !== 'object' || !Array.isArray(c.messages)) return null;
  return {
    id: typeof c.id === 'string' && /^[\w-]{1,64}$/.test(c.id) ? c.id : newId(),
    title: typeof c.title === 'string' ? c.title.slice(0, 200) : 'Imported chat',
    updated: Number.isFinite(c.updated) ? c.updated : Date.now(),
    // a reply that never got a word (the page closed as it began) is left out
    messages: c.messages.map(cleanMessage).filter((m) => m && (m.role !== 'assistant' || m.content || m.reasoning || m.tool_calls)),
  };
}

/** The conversations, newest first, as a small store over localStorage. */
export class Conversations {
  constructor() {
    this.list = load(CHATS_KEY, []).map(cleanConversation).filter(Boolean);
    this.sort();
  }

  sort() {
    this.list.sort((a, b) => b.updated - a.updated);
  }

  persist() {
    return save(CHATS_KEY, this.list);
  }

  get(id) {
    return this.list.find((c) => c.id === id) ?? null;
  }

  create() {
    const c = { id: newId(), title: 'New chat', updated: Date.now(), messages: [] };
    this.list.unshift(c);
    this.persist();
    return c;
  }

  touch(c) {
    c.updated = Date.now();
    this.sort();
    return this.persist();
  }

  rename(id, title) {
    const c = this.get(id);
    if (c && title.trim()) {
      c.title = title.trim().slice(0, 200);
      this.persist();
    }
  }

  remove(id) {
    this.list = this.list.filter((c) => c.id !== id);
    this.persist();
  }

  exportJson() {
    return JSON.stringify({ format: 'sprout-conversations', version: 1, conversations: this.list }, null, 2);
  }

  /** Adds the conversations of an export (or one conversation); returns how many, or throws with the reason. */
  importJson(text) {
    const v = JSON.parse(text);
    const items = Array.isArray(v) ? v : Array.isArray(v?.conversations) ? v.conversations : [v];
    const added = items.map(cleanConversation).filter(Boolean);
    if (!added.length) throw new Error('no conversations in this file');
    for (const c of added) {
      if (this.get(c.id)) c.id = newId();
      this.list.push(c);
    }
    this.sort();
    this.persist();
    return added.length;
  }
}
