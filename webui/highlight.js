// Syntax colouring for fenced code: one scanner, a few language families.
// It only wraps slices of the source in <span class="tok-…"> made with
// textContent, so whatever the code says stays text.

const C_LIKE = 'break case catch class const continue default do else enum export extends false finally for function if import in ' +
  'instanceof let new null return static super switch this throw true try typeof var void while yield async await of struct union ' +
  'typedef sizeof unsigned signed int char float double long short bool auto extern register volatile goto inline restrict public ' +
  'private protected interface implements package namespace template typename using virtual override final fn impl mut pub use mod ' +
  'match loop move ref self trait where type go func chan defer select map range var nil';
const PYTHON = 'and as assert async await break class continue def del elif else except False finally for from global if import in ' +
  'is lambda None nonlocal not or pass raise return True try while with yield self print';
const SHELL = 'if then else elif fi for while until do done case esac function in return local export echo set unset exit cd source';
const SQL = 'select from where insert into values update set delete create table drop alter join left right inner outer on group by ' +
  'order having limit offset as and or not null is in like distinct union all primary key foreign references index';

const FAMILIES = {
  c: { keywords: C_LIKE, line: '//', block: true },
  python: { keywords: PYTHON, line: '#', block: false },
  shell: { keywords: SHELL, line: '#', block: false },
  sql: { keywords: SQL, line: '--', block: true, caseless: true },
  json: { keywords: 'true false null', line: null, block: false },
};

const ALIASES = {
  js: 'c', javascript: 'c', ts: 'c', typescript: 'c', jsx: 'c', tsx: 'c', c: 'c', h: 'c', cpp: 'c', 'c++': 'c', cc: 'c', java: 'c',
  go: 'c', rust: 'c', rs: 'c', cs: 'c', csharp: 'c', kotlin: 'c', swift: 'c', php: 'c', css: 'c',
  py: 'python', python: 'python', rb: 'python', ruby: 'python', yaml: 'python', yml: 'python', toml: 'python',
  sh: 'shell', bash: 'shell', zsh: 'shell', shell: 'shell', console: 'shell',
  sql: 'sql', json: 'json', jsonc: 'json',
};

function scanner(family) {
  const parts = [];
  if (family.block) parts.push('(?<com>/\\*[\\s\\S]*?(?:\\*/|$))');
  if (family.line) parts.push(`(?<com2>${family.line.replace(/[/#-]/g, (ch) => `\\${ch}`)}[^\\n]*)`);
  parts.push('(?<str>"(?:[^"\\\\\\n]|\\\\.)*"?|\'(?:[^\'\\\\\\n]|\\\\.)*\'?|`(?:[^`\\\\]|\\\\.)*`?)');
  parts.push('(?<num>\\b(?:0x[0-9a-fA-F]+|\\d+(?:\\.\\d+)?(?:[eE][+-]?\\d+)?)\\b)');
  parts.push('(?<word>[A-Za-z_$][\\w$]*)');
  return new RegExp(parts.join('|'), 'g');
}

/** The language family a fence's info string names, or null. */
export function languageOf(info) {
  const name = (info || '').trim().split(/\s+/)[0].toLowerCase();
  return ALIASES[name] ?? null;
}

/** Appends the code to `into` as text, keywords, strings, numbers and comments in their own spans. */
export function highlightInto(into, code, info) {
  const key = languageOf(info);
  if (!key) {
    into.append(code);
    return;
  }
  const family = FAMILIES[key];
  const words = new Set(family.keywords.split(' ').map((w) => (family.caseless ? w.toLowerCase() : w)));
  const re = scanner(family);
  let at = 0;
  for (const m of code.matchAll(re)) {
    const g = m.groups;
    let cls = null;
    if (g.com !== undefined || g.com2 !== undefined) cls = 'tok-com';
    else if (g.str !== undefined) cls = 'tok-str';
    else if (g.num !== undefined) cls = 'tok-num';
    else if (g.word !== undefined && words.has(family.caseless ? g.word.toLowerCase() : g.word)) cls = 'tok-kw';
    if (!cls) continue;
    if (m.index > at) into.append(code.slice(at, m.index));
    const span = document.createElement('span');
    span.className = cls;
    span.textContent = m[0];
    into.append(span);
    at = m.index + m[0].length;
  }
  if (at < code.length) into.append(code.slice(at));
}
