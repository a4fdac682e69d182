// How a message looks: the user's words as typed, the model's as markdown,
// its reasoning in a collapsible block, its tool calls as calls, the reply's
// figures (tokens/s, time to first token, context used), and the buttons
// that act on it (copy, edit and resend, regenerate).
import { renderMarkdown } from './markdown.js';

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function button(text, label, onClick) {
  const b = el('button', 'msg-action', text);
  b.type = 'button';
  b.setAttribute('aria-label', label);
  b.addEventListener('click', onClick);
  return b;
}

/** Copies text to the clipboard and says so on the button for a moment. */
export async function copyText(text, btn) {
  let ok = false;
  try {
    await navigator.clipboard.writeText(text);
    ok = true;
  } catch { // no clipboard API (an insecure origin): the old way
    const area = el('textarea');
    area.value = text;
    document.body.append(area);
    area.select();
    ok = document.execCommand('copy');
    area.remove();
  }
  if (btn) {
    const was = btn.textContent;
    btn.textContent = ok ? 'Copied' : 'Copy failed';
    setTimeout(() => (btn.textContent = was), 1200);
  }
}

/** The figures line of a finished (or stopped) reply. */
export function statsText(s) {
  if (!s) return '';
  const parts = [];
  if (s.tokens) parts.push(`${s.tokens} tokens`);
  if (s.tokensPerSecond) parts.push(`${s.tokensPerSecond.toFixed(1)} tokens/s`);
  if (s.ttftMs !== undefined) parts.push(`first token ${Math.round(s.ttftMs)} ms`);
  if (s.contextUsed) parts.push(s.contextSize ? `context ${s.contextUsed}/${s.contextSize} (${Math.round((100 * s.contextUsed) / s.contextSize)}%)`
    : `context ${s.contextUsed} tokens`);
  if (s.stopped) parts.push('stopped');
  else if (s.finish && s.finish !== 'stop') parts.push(`finish: ${s.finish}`);
  return parts.join(' · ');
}

function toolCalls(calls) {
  const box = el('div', 'tool-calls');
  for (const c of calls) {
    const item = el('div', 'tool-call');
    const head = el('div', 'tool-call-head');
    head.append(el('span', 'tool-badge', 'Tool call'), el('code', null, c.function?.name || '(unnamed)'));
    let args = c.function?.arguments ?? '';
    try {
      args = JSON.stringify(JSON.parse(args), null, 2);
    } catch { /* still streaming, or not JSON: as sent */ }
    item.append(head, el('pre', 'tool-args', args));
    box.append(item);
  }
  return box;
}

/**
 * Builds (or rebuilds, while streaming) the element of message `m`, the
 * `index`-th of its conversation. `actions` has copy, edit(index),
 * regenerate(), and `last` says whether it is the conversation's last.
 */
export function renderMessage(m, index, { streaming = false, last = false, actions }, into = null) {
  const article = into ?? el('article');
  article.replaceChildren();
  article.className = `msg ${m.role}${streaming ? ' streaming' : ''}`;
  article.dataset.index = String(index);
  article.setAttribute('aria-label', m.role === 'user' ? 'You' : m.role === 'assistant' ? 'Assistant' : m.role);
  article.append(el('div', 'msg-role', m.role === 'user' ? 'You' : m.role === 'assistant' ? 'Assistant' : m.role));
  if (m.reasoning) {
    const d = el('details', 'reasoning');
    d.open = streaming && !m.content;
    d.append(el('summary', null, streaming && !m.content ? 'Thinking…' : 'Reasoning'), el('div', 'reasoning-text', m.reasoning));
    article.append(d);
  }
  const body = el('div', `msg-body${m.role === 'assistant' ? ' markdown' : ''}`);
  if (m.role === 'assistant') body.append(renderMarkdown(m.content, copyText));
  else body.textContent = m.content;
  if (streaming && !m.content && !m.reasoning) body.append(el('span', 'typing', '…'));
  article.append(body);
  if (m.tool_calls?.length) article.append(toolCalls(m.tool_calls));
  const stats = statsText(m.stats);
  if (stats) article.append(el('div', 'msg-stats', stats));
  if (!streaming) {
    const bar = el('div', 'msg-actions');
    bar.append(button('Copy', `Copy this message`, (e) => actions.copy(m.content, e.currentTarget)));
    if (m.role === 'user') bar.append(button('Edit', 'Edit this message and send it again', () => actions.edit(index)));
    if (m.role === 'assistant' && last) bar.append(button('Regenerate', 'Regenerate this reply', () => actions.regenerate()));
    article.append(bar);
  }
  return article;
}

/** Puts an editor in place of user message `index`'s text; save(text) sends it, cancel() restores. */
export function editMessage(article, text, { save, cancel }) {
  const body = article.querySelector('.msg-body');
  const area = el('textarea', 'edit-area');
  area.value = text;
  area.setAttribute('aria-label', 'Edit the message');
  area.rows = Math.min(12, Math.max(2, text.split('\n').length));
  const bar = el('div', 'msg-actions');
  const ok = button('Send', 'Send the edited message', () => save(area.value));
  ok.classList.add('primary');
  bar.append(ok, button('Cancel', 'Cancel the edit', cancel));
  area.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      save(area.value);
    } else if (e.key === 'Escape') {
      e.stopPropagation();
      cancel();
    }
  });
  body.replaceWith(area);
  article.querySelector('.msg-actions')?.replaceWith(bar);
  area.focus();
}
