// Text files attached to the next message (source, notes, logs): read in
// the page and sent inside the message, each as a fenced block named after
// the file, so the model sees them and the conversation keeps them.

const MAX_BYTES = 512 * 1024;

/** The message text with each file appended as a fenced block whose fence outlasts any backtick run inside. */
export function withAttachments(text, files) {
  const blocks = files.map((f) => {
    const longest = Math.max(0, ...(f.text.match(/`+/g) ?? []).map((run) => run.length));
    const fence = '`'.repeat(Math.max(3, longest + 1));
    return `${fence}${f.name.replace(/\s+/g, '_')}\n${f.text.replace(/\n$/, '')}\n${fence}`;
  });
  return [text, ...blocks].filter(Boolean).join('\n\n');
}

/** The attachments of the message being written: `input` a file input, `list` the <ul> that shows them. */
export class Attachments {
  constructor(input, list, onError) {
    this.items = [];
    this.list = list;
    this.onError = onError;
    input.addEventListener('change', async () => {
      await this.add([...input.files]);
      input.value = '';
    });
  }

  async add(files) {
    for (const f of files) {
      if (f.size > MAX_BYTES) {
        this.onError(`${f.name} is larger than ${MAX_BYTES / 1024} KiB: attach a part of it`);
        continue;
      }
      const text = await f.text();
      if (text.includes('\u0000') || text.includes('\uFFFD')) {
        this.onError(`${f.name} is not a UTF-8 text file`);
        continue;
      }
      this.items.push({ name: f.name, text });
    }
    this.render();
  }

  render() {
    this.list.replaceChildren();
    this.list.hidden = !this.items.length;
    this.items.forEach((item, i) => {
      const li = document.createElement('li');
      const name = Object.assign(document.createElement('span'), { textContent: item.name });
      const remove = Object.assign(document.createElement('button'), { type: 'button', className: 'icon small', textContent: '×' });
      remove.setAttribute('aria-label', `Remove ${item.name}`);
      remove.addEventListener('click', () => {
        this.items.splice(i, 1);
        this.render();
      });
      li.append(name, remove);
      this.list.append(li);
    });
  }

  /** The files attached so far, which the next message takes. */
  take() {
    const items = this.items;
    this.items = [];
    this.render();
    return items;
  }

  get count() {
    return this.items.length;
  }
}
