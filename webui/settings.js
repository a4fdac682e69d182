// The settings dialog (sampling, system prompt, stop strings, API key) and
// the request body those settings make.
import { DEFAULT_SETTINGS } from './store.js';

const NUMBERS = ['temperature', 'top_k', 'top_p', 'min_p', 'repeat_penalty', 'max_tokens', 'seed'];
const INTEGERS = new Set(['top_k', 'max_tokens', 'seed']);

/** The chat request for `messages` (the conversation's, oldest first) under `settings`. */
export function requestBody(settings, messages) {
  const wire = [];
  if (settings.system.trim()) wire.push({ role: 'system', content: settings.system });
  for (const m of messages) {
    const w = { role: m.role, content: m.content };
    if (m.tool_calls?.length) w.tool_calls = m.tool_calls;
    wire.push(w);
  }
  const body = { messages: wire, stream: true, stream_options: { include_usage: true } };
  if (settings.model) body.model = settings.model;
  for (const k of NUMBERS) if (settings[k] !== null && settings[k] !== undefined) body[k] = settings[k];
  if (settings.stop.length) body.stop = settings.stop;
  return body;
}

function fill(form, s) {
  form.elements.system.value = s.system;
  for (const k of NUMBERS) form.elements[k].value = s[k] ?? '';
  form.elements.stop.value = s.stop.join('\n');
  form.elements.apiKey.value = s.apiKey;
}

// The form's values, or the first field that does not hold a valid value (shown by the browser).
function read(form, current) {
  const s = { ...current };
  s.system = form.elements.system.value;
  for (const k of NUMBERS) {
    const input = form.elements[k];
    const text = input.value.trim();
    if (!text) {
      s[k] = null;
      continue;
    }
    const n = Number(text);
    if (!input.checkValidity() || !Number.isFinite(n) || (INTEGERS.has(k) && !Number.isInteger(n))) return { invalid: input };
    s[k] = n;
  }
  s.stop = form.elements.stop.value.split('\n').filter((l) => l.length);
  s.apiKey = form.elements.apiKey.value.trim();
  return { settings: s };
}

/** Wires the dialog: open() shows it with `get()`'s values; Save calls `set(new settings)`. */
export function settingsDialog(dialog, get, set) {
  const form = dialog.querySelector('form');
  dialog.querySelector('#settings-cancel').addEventListener('click', () => dialog.close());
  dialog.querySelector('#settings-reset').addEventListener('click', () => fill(form, { ...DEFAULT_SETTINGS, model: get().model }));
  form.addEventListener('submit', (e) => {
    const r = read(form, get());
    if (r.invalid) {
      e.preventDefault();
      r.invalid.reportValidity();
      return;
    }
    set(r.settings);
  });
  return {
    open() {
      fill(form, get());
      dialog.showModal();
      form.elements.system.focus();
    },
  };
}
