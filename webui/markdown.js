// Markdown to DOM for the model's replies: headings, paragraphs, lists,
// block quotes, tables, rules, fenced code (copy button, colouring), and
// inline code, emphasis, strike-through and links. Every piece of the text
// becomes a text node or an attribute set by name: the reply can say
// <script> or <img onerror=…> and it is shown, never parsed as HTML. Links
// keep only http(s), mailto and same-page targets; images become links,
// since loading one would send a request to another host.
import { highlightInto } from './highlight.js';

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

/** The href a link may have, or null: absolute http(s) and mailto, or a fragment on this page. */
export function safeHref(url) {
  const u = url.trim();
  if (/^#[^\s]*$/.test(u)) return u;
  if (/^(https?:\/\/|mailto:)[^\s]+$/i.test(u)) return u;
  return null;
}

// --- inline ------------------------------------------------------------------------------------------

const ESCAPABLE = '\\`*_{}[]()#+-.!|~<>"\'';

// The delimiter runs emphasis uses, longest first.
const EMPHASIS = [
  { mark: '**', tag: 'strong' },
  { mark: '__', tag: 'strong' },
  { mark: '~~', tag: 'del' },
  { mark: '*', tag: 'em' },
  { mark: '_', tag: 'em' },
];

// Where the closing `mark` of a run opened at `from` is, or -1: not inside a code span,
// and for '_' only at a word's end (snake_case stays text).
function findCloser(text, mark, from) {
  for (let i = from; i < text.length; i++) {
    const ch = text[i];
    if (ch === '\\') {
      i++;
      continue;
    }
    if (ch === '`') {
      const end = text.indexOf('`', i + 1);
      if (end > 0) i = end;
      continue;
    }
    if (text.startsWith(mark, i) && i > from && !/\s/.test(text[i - 1])) {
      if (mark.length === 1 && text[i + 1] === mark) {
        i++; // part of a longer run
        continue;
      }
      if (mark[0] === '_' && /\w/.test(text[i + mark.length] ?? '')) continue;
      return i;
    }
  }
  return -1;
}

// [text](url) at i: {label, url, end} or null. Labels and targets are looked for within a
// bounded stretch: a reply of many unclosed '[' would otherwise cost a scan to its end each.
const LINK_SPAN = 2000;
function linkAt(text, i) {
  let depth = 0, j = i;
  const stop = Math.min(text.length, i + LINK_SPAN);
  for (; j < stop; j++) {
    if (text[j] === '\\') j++;
    else if (text[j] === '[') depth++;
    else if (text[j] === ']' && --depth === 0) break;
  }
  if (j >= stop || text[j + 1] !== '(') return null;
  const close = text.indexOf(')', j + 2);
  if (close < 0 || close - j > LINK_SPAN) return null;
  const target = text.slice(j + 2, close).trim().replace(/\s+"[^"]*"$/, '').replace(/^<(.*)>$/, '$1');
  return { label: text.slice(i + 1, j), url: target, end: close + 1 };
}

// A link; `kind` 'image' words an image's link, 'url' shows a bare or <autolinked> URL as it is (no markdown inside).
function appendLink(into, label, url, kind, depth) {
  const href = safeHref(url);
  if (!href) { // an unsafe or unknown target: the words stay, the link goes
    if (kind === 'url') into.append(label);
    else appendInline(into, label || url, depth + 1);
    return;
  }
  const a = el('a');
  a.href = href;
  if (!href.startsWith('#')) {
    a.target = '_blank';
    a.rel = 'noopener noreferrer';
  }
  if (kind === 'image') a.textContent = `image: ${label || url}`;
  else if (kind === 'url') a.textContent = label;
  else appendInline(a, label, depth + 1);
  into.append(a);
}

// Nesting deeper than this (a reply of ten thousand '[' or '>') is shown as text: the renderer recurses per level.
const MAX_DEPTH = 12;

/** Appends inline markdown to `into`. */
export function appendInline(into, text, depth = 0) {
  if (depth > MAX_DEPTH) {
    into.append(text);
    return;
  }
  let plain = '';
  // where a search for each mark's closer found none: a later search cannot do better, so it is not made
  const noCloserFrom = {};
  const flush = () => {
    if (plain) into.append(plain);
    plain = '';
  };
  for (let i = 0; i < text.length;) {
    const ch = text[i];
    if (ch === '\\' && i + 1 < text.length && ESCAPABLE.includes(text[i + 1])) {
      plain += text[i + 1];
      i += 2;
      continue;
    }
    if (ch === '\n') { // a line break inside a paragraph stays one: chat replies mean them
      flush();
      into.append(el('br'));
      i++;
      continue;
    }
    if (ch === '`') {
      let run = 1;
      while (text[i + run] === '`') run++;
      const fence = '`'.repeat(run);
      const end = text.indexOf(fence, i + run);
      if (end > 0) {
        flush();
        let code = text.slice(i + run, end);
        if (/^ .* $/.test(code)) code = code.slice(1, -1);
        into.append(el('code', null, code));
        i = end + run;
        continue;
      }
      plain += fence;
      i += run;
      continue;
    }
    if (ch === '[' || (ch === '!' && text[i + 1] === '[')) {
      const image = ch === '!';
      const link = linkAt(text, image ? i + 1 : i);
      if (link) {
        flush();
        appendLink(into, link.label, link.url, image ? 'image' : 'link', depth);
        i = link.end;
        continue;
      }
    }
    if (ch === '<') { // an autolink <https://…>; any other '<' is text
      const m = /^<((?:https?:\/\/|mailto:)[^\s>]+)>/i.exec(text.slice(i));
      if (m) {
        flush();
        appendLink(into, m[1], m[1], 'url', depth);
        i += m[0].length;
        continue;
      }
    }
    if (ch === 'h') { // a bare URL
      const m = /^https?:\/\/[^\s<>]*[^\s<>.,;:!?'"]/.exec(text.slice(i));
      if (m && (i === 0 || /[\s(]/.test(text[i - 1]))) {
        let url = m[0]; // a closing parenthesis belongs to the URL only if it opened one: (see https://x.org/a_(b))
        while (url.endsWith(')') && url.split('(').length < url.split(')').length) url = url.slice(0, -1);
        flush();
        appendLink(into, url, url, 'url', depth);
        i += url.length;
        continue;
      }
    }
    const emphasis = EMPHASIS.find((e) => text.startsWith(e.mark, i));
    if (emphasis && text[i + emphasis.mark.length] && !/\s/.test(text[i + emphasis.mark.length]) &&
        !(emphasis.mark[0] === '_' && i > 0 && /\w/.test(text[i - 1]))) {
      const start = i + emphasis.mark.length;
      const end = start >= (noCloserFrom[emphasis.mark] ?? Infinity) ? -1 : findCloser(text, emphasis.mark, start);
      if (end < 0) noCloserFrom[emphasis.mark] = Math.min(start, noCloserFrom[emphasis.mark] ?? Infinity);
      if (end > start) {
        flush();
        const e = el(emphasis.tag);
        appendInline(e, text.slice(start, end), depth + 1);
        into.append(e);
        i = end + emphasis.mark.length;
        continue;
      }
    }
    plain += ch;
    i++;
  }
  flush();
}

// --- blocks ------------------------------------------------------------------------------------------

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^`]*)$/;
const HEADING = /^ {0,3}(#{1,6})(?:\s+(.*?))?\s*#*\s*$/;
const RULE = /^ {0,3}([-*_])(?:\s*\1){2,}\s*$/;
const QUOTE = /^ {0,3}> ?(.*)$/;
const ITEM = /^( {0,12})([-*+]|\d{1,9}[.)])(\s+|$)(.*)$/;
const TABLE_RULE = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;

function tableCells(line) {
  let s = line.trim();
  if (s.startsWith('|')) s = s.slice(1);
  if (s.endsWith('|') && !s.endsWith('\\|')) s = s.slice(0, -1);
  const cells = [];
  let cell = '';
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '\\' && s[i + 1] === '|') {
      cell += '|';
      i++;
    } else if (s[i] === '|') {
      cells.push(cell.trim());
      cell = '';
    } else cell += s[i];
  }
  cells.push(cell.trim());
  return cells;
}

function codeBlock(code, info, onCopy) {
  const wrap = el('div', 'code-block');
  const bar = el('div', 'code-bar');
  const lang = (info || '').trim().split(/\s+/)[0];
  bar.append(el('span', 'code-lang', lang || 'text'));
  const copy = el('button', 'code-copy', 'Copy');
  copy.type = 'button';
  copy.setAttribute('aria-label', `Copy ${lang || ''} code`.replace('  ', ' '));
  copy.addEventListener('click', () => onCopy(code, copy));
  bar.append(copy);
  const pre = el('pre');
  const c = el('code');
  if (lang) c.dataset.lang = lang;
  highlightInto(c, code, info);
  pre.append(c);
  wrap.append(bar, pre);
  return wrap;
}

function table(header, align, rows) {
  const t = el('table');
  const head = el('thead'), tr = el('tr');
  header.forEach((cell, i) => {
    const th = el('th');
    if (align[i]) th.style.textAlign = align[i];
    appendInline(th, cell);
    tr.append(th);
  });
  head.append(tr);
  const body = el('tbody');
  for (const row of rows) {
    const r = el('tr');
    header.forEach((_, i) => {
      const td = el('td');
      if (align[i]) td.style.textAlign = align[i];
      appendInline(td, row[i] ?? '');
      r.append(td);
    });
    body.append(r);
  }
  t.append(head, body);
  const scroll = el('div', 'table-scroll');
  scroll.append(t);
  return scroll;
}

function parseBlocks(lines, into, onCopy, depth = 0) {
  if (depth > MAX_DEPTH) {
    into.append(el('p', null, lines.join('\n')));
    return;
  }
  let i = 0;
  const blank = (l) => !l || !l.trim();
  while (i < lines.length) {
    const line = lines[i];
    if (blank(line)) {
      i++;
      continue;
    }
    let m;
    if ((m = FENCE.exec(line))) { // an unclosed fence runs to the end: the reply may still be streaming
      const fence = m[1];
      const body = [];
      for (i++; i < lines.length && !(lines[i].trim().startsWith(fence[0].repeat(fence.length)) && !lines[i].trim().slice(fence.length).trim()); i++)
        body.push(lines[i]);
      i++;
      into.append(codeBlock(body.join('\n'), m[2], onCopy));
      continue;
    }
    if ((m = HEADING.exec(line))) {
      const h = el(`h${m[1].length}`);
      appendInline(h, m[2] ?? '');
      into.append(h);
      i++;
      continue;
    }
    if (RULE.test(line)) {
      into.append(el('hr'));
      i++;
      continue;
    }
    if (QUOTE.test(line)) {
      const inner = [];
      while (i < lines.length && !blank(lines[i]) && (m = QUOTE.exec(lines[i]) ?? [null, lines[i]])) {
        inner.push(m[1]);
        i++;
      }
      const q = el('blockquote');
      parseBlocks(inner, q, onCopy, depth + 1);
      into.append(q);
      continue;
    }
    if (line.includes('|') && i + 1 < lines.length && TABLE_RULE.test(lines[i + 1]) && lines[i + 1].includes('-')) {
      const header = tableCells(line);
      const align = tableCells(lines[i + 1]).map((c) =>
        c.startsWith(':') && c.endsWith(':') ? 'center' : c.endsWith(':') ? 'right' : c.startsWith(':') ? 'left' : '');
      const rows = [];
      for (i += 2; i < lines.length && !blank(lines[i]) && lines[i].includes('|'); i++) rows.push(tableCells(lines[i]));
      into.append(table(header, align, rows));
      continue;
    }
    if ((m = ITEM.exec(line))) {
      i = list(lines, i, into, onCopy, depth);
      continue;
    }
    const para = [];
    while (i < lines.length && !blank(lines[i]) && !FENCE.test(lines[i]) && !HEADING.test(lines[i]) && !QUOTE.test(lines[i]) &&
           !(para.length && (ITEM.test(lines[i]) || RULE.test(lines[i])))) {
      para.push(lines[i].trim());
      i++;
    }
    const p = el('p');
    appendInline(p, para.join('\n'));
    into.append(p);
  }
}

// A list from lines[i]: its items are the lines up to the next marker at its own indentation,
// with their indentation taken off, parsed as blocks (so items nest). Returns the next line.
function list(lines, i, into, onCopy, depth) {
  const first = ITEM.exec(lines[i]);
  const indent = first[1].length;
  const ordered = /\d/.test(first[2]);
  const l = el(ordered ? 'ol' : 'ul');
  if (ordered && parseInt(first[2], 10) !== 1) l.start = parseInt(first[2], 10);
  let loose = false;
  while (i < lines.length) {
    const m = ITEM.exec(lines[i]);
    if (!m || m[1].length !== indent || /\d/.test(m[2]) !== ordered) break;
    const contentIndent = indent + m[2].length + Math.max(1, Math.min(m[3].length, 4));
    const body = [m[4]];
    for (i++; i < lines.length; i++) {
      const next = lines[i];
      if (!next.trim()) {
        const after = lines[i + 1];
        if (after && (after.length - after.trimStart().length) >= contentIndent) {
          body.push('');
          loose = true;
          continue;
        }
        break;
      }
      const sub = ITEM.exec(next);
      if (sub && sub[1].length <= indent) break;
      const lead = next.length - next.trimStart().length;
      body.push(lead >= contentIndent ? next.slice(contentIndent) : sub ? next.slice(Math.min(lead, indent + 2)) : next.trimStart());
    }
    const li = el('li');
    parseBlocks(body, li, onCopy, depth + 1);
    if (!loose && li.childElementCount && li.firstElementChild.tagName === 'P') li.firstElementChild.replaceWith(...li.firstElementChild.childNodes);
    l.append(li);
    while (i < lines.length && !lines[i].trim() && ITEM.exec(lines[i + 1] ?? '')?.[1].length === indent) i++;
  }
  into.append(l);
  return i;
}

/** The rendered markdown as a fragment; onCopy(text, button) copies a code block. */
export function renderMarkdown(text, onCopy) {
  const frag = document.createDocumentFragment();
  parseBlocks(text.replace(/\r\n?/g, '\n').split('\n'), frag, onCopy);
  return frag;
}
