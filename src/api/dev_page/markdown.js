// A small Markdown renderer for the dev page, escape-first: the whole text is HTML-escaped
// before any Markdown is read, and only the fixed tags below are ever produced, so a model's
// output can never inject markup. Headings, paragraphs, **bold**, *italic*, `code`, fenced
// code, lists, quotes and [links](https://…) (http and https only). No DOM: Node imports it too.

export function escapeHtml(text) {
  return String(text)
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

// Inline Markdown of already-escaped text.
function inline(escaped) {
  // Code spans first: their content is taken as it is.
  return escaped
    .split(/(`[^`]+`)/)
    .map((part, index) => (index % 2 === 1 ? `<code>${part.slice(1, -1)}</code>` : emphasis(part)))
    .join("");
}

// Links first, so emphasis never reaches into a URL; only http(s) URLs become links.
function emphasis(text) {
  let out = "";
  let last = 0;
  for (const link of text.matchAll(/\[([^\]]+)\]\(([^)\s]+)\)/g)) {
    out += strongAndEm(text.slice(last, link.index));
    out += /^https?:\/\//i.test(link[2])
      ? `<a href="${link[2]}" target="_blank" rel="noopener noreferrer">${strongAndEm(link[1])}</a>`
      : strongAndEm(link[0]);
    last = link.index + link[0].length;
  }
  return out + strongAndEm(text.slice(last));
}

function strongAndEm(text) {
  return text
    .replace(/\*\*(?=\S)([^*]*?\S)\*\*/g, "<strong>$1</strong>")
    .replace(/__(?=\S)([^_]*?\S)__/g, "<strong>$1</strong>")
    .replace(/(^|[^*\w])\*(?=\S)([^*]*?\S)\*(?![*\w])/g, "$1<em>$2</em>")
    .replace(/(^|[^_\w])_(?=\S)([^_]*?\S)_(?![_\w])/g, "$1<em>$2</em>");
}

const LIST_ITEM = /^\s*([-*+]|\d{1,9}[.)])\s+(.*)$/;

// Markdown text (untrusted) to HTML (safe to assign to innerHTML).
export function renderMarkdown(text) {
  const lines = escapeHtml(text ?? "").replace(/\r\n?/g, "\n").split("\n");
  const out = [];
  let paragraph = [];
  let list = null; // {tag, items}
  const flushParagraph = () => {
    if (paragraph.length) out.push(`<p>${paragraph.map(inline).join("<br>")}</p>`);
    paragraph = [];
  };
  const flushList = () => {
    if (list) out.push(`<${list.tag}>${list.items.map((item) => `<li>${inline(item)}</li>`).join("")}</${list.tag}>`);
    list = null;
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const fence = line.match(/^\s*(```|~~~)\s*([\w+-]*)\s*$/);
    if (fence) {
      flushParagraph();
      flushList();
      const code = [];
      // An unclosed fence (still streaming) runs to the end of the text.
      for (i++; i < lines.length && !lines[i].trim().startsWith(fence[1]); i++) code.push(lines[i]);
      const language = fence[2] ? ` class="language-${fence[2]}"` : "";
      out.push(`<pre><code${language}>${code.join("\n")}</code></pre>`);
      continue;
    }
    const heading = line.match(/^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/);
    if (heading) {
      flushParagraph();
      flushList();
      const level = heading[1].length;
      out.push(`<h${level}>${inline(heading[2])}</h${level}>`);
      continue;
    }
    const item = line.match(LIST_ITEM);
    if (item) {
      flushParagraph();
      const tag = /\d/.test(item[1]) ? "ol" : "ul";
      if (list && list.tag !== tag) flushList();
      list ??= { tag, items: [] };
      list.items.push(item[2]);
      continue;
    }
    const quote = line.match(/^\s*&gt;\s?(.*)$/);
    if (quote) {
      flushParagraph();
      flushList();
      out.push(`<blockquote>${inline(quote[1])}</blockquote>`);
      continue;
    }
    if (!line.trim()) {
      flushParagraph();
      flushList();
      continue;
    }
    if (list && /^\s{2,}\S/.test(line)) {
      // A continuation of the last list item.
      list.items[list.items.length - 1] += ` ${line.trim()}`;
      continue;
    }
    flushList();
    paragraph.push(line);
  }
  flushParagraph();
  flushList();
  return out.join("");
}
