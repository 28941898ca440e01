// Everything the CLI prints. People get aligned tables (coloured and cut to the terminal's
// width on a TTY); scripts get --json, one document on stdout. Progress and diagnostics go
// to stderr, and the progress line only to a terminal, so a pipe never sees it. Every
// diagnostic passes the library's redaction: no URL secret, token or password reaches stderr.
import { redactSecrets } from "../index.js";

const FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
const CLEAR_LINE = "\r\x1b[2K";

export function createOutput({ stdout = process.stdout, stderr = process.stderr, env = process.env, json = false, verbose = false } = {}) {
  const paint = (stream) => {
    const on = Boolean(stream.isTTY) && !env.NO_COLOR && env.TERM !== "dumb";
    return (code) => (text) => (on ? `\x1b[${code}m${text}\x1b[0m` : text);
  };
  const style = paint(stdout);
  const errStyle = paint(stderr);
  const colors = { bold: style(1), dim: style(2), red: style(31), green: style(32) };
  let activeProgress = null;

  // Diagnostics must not land in the middle of a spinner frame.
  const toStderr = (text) => {
    activeProgress?.clear();
    stderr.write(redactSecrets(text));
    activeProgress?.draw();
  };

  const out = {
    json,
    colors,
    line: (text = "") => stdout.write(`${text}\n`),
    text: (text) => stdout.write(text.endsWith("\n") ? text : `${text}\n`),
    document: (value) => stdout.write(`${JSON.stringify(value, null, 2)}\n`),
    note: (text) => toStderr(`${text}\n`),
    verbose: (text) => verbose && toStderr(`${errStyle(2)(`[mcp-native] ${text}`)}\n`),
    serverStderr: (chunk) => verbose && toStderr(chunk),
    error(message, detail = []) {
      toStderr(`${errStyle(31)("mcp-native:")} ${message}\n${detail.map((line) => `  ${line}\n`).join("")}`);
    },

    /**
     * titles: column headings; rows: arrays of cells, each a string or `{ text, style }`
     * (style colours the cell after it is padded, so escape codes never skew the columns).
     * The last column is not padded; on a TTY the line is cut to the terminal's width.
     */
    table(titles, rows) {
      const plain = (cell) => oneLine(typeof cell === "object" && cell !== null ? cell.text : cell);
      const styleOf = (cell) => (typeof cell === "object" && cell?.style) || ((s) => s);
      const widths = titles.map((title, i) => Math.max(width(title), ...rows.map((row) => width(plain(row[i])))));
      const limit = stdout.isTTY && stdout.columns ? stdout.columns : Infinity;
      const render = (row) => {
        const segments = row.map((cell, i) => {
          const text = plain(cell);
          return { text: i === row.length - 1 ? text : text + " ".repeat(widths[i] - width(text)), style: styleOf(cell) };
        });
        let room = limit;
        let line = "";
        for (const [i, { text, style }] of segments.entries()) {
          const piece = (i === 0 ? "" : "  ") + text;
          const isLast = i === segments.length - 1 || segments.slice(i + 1).every((s) => !s.text.trim());
          const shown = isLast ? piece.trimEnd() : piece;
          if (width(shown) > room) {
            line += style([...shown].slice(0, room - 1).join("")) + "…";
            break;
          }
          line += style(shown);
          room -= width(shown);
          if (isLast) break;
        }
        return line;
      };
      out.line(render(titles.map((text) => ({ text, style: colors.bold }))));
      for (const row of rows) out.line(render(row));
    },

    /** Label/value lines with the values aligned; multi-line values are indented under theirs. */
    fields(pairs) {
      const labelWidth = Math.max(...pairs.map(([label]) => label.length));
      const room = stdout.isTTY && stdout.columns ? Math.max(20, stdout.columns - labelWidth - 2) : Infinity;
      for (const [label, value] of pairs) {
        const [first, ...more] = String(value)
          .split("\n")
          .flatMap((line) => wrap(line, room));
        out.line(`${colors.bold(label.padEnd(labelWidth))}  ${first}`);
        for (const line of more) out.line(`${" ".repeat(labelWidth + 2)}${line}`);
      }
    },

    /**
     * Starts a live line on stderr (TTY only); `text` may be a function, re-read every frame.
     * Returns `stop()`, which erases the line.
     */
    progress(text) {
      if (!stderr.isTTY) return () => {};
      let frame = 0;
      const current = () => (typeof text === "function" ? text() : text);
      const progress = {
        clear: () => stderr.write(CLEAR_LINE),
        draw: () => {
          const line = `${FRAMES[frame++ % FRAMES.length]} ${current()}`;
          const limit = (stderr.columns || 80) - 1; // a wrapped line could not be erased with \r
          stderr.write(`${CLEAR_LINE}${[...line].slice(0, limit).join("")}`);
        },
      };
      activeProgress?.clear();
      activeProgress = progress;
      progress.draw();
      const timer = setInterval(progress.draw, 80);
      timer.unref();
      return () => {
        if (activeProgress !== progress) return;
        clearInterval(timer);
        progress.clear();
        activeProgress = null;
      };
    },

    /** A tool result's content for people: text as is, everything else summarised. */
    content(items, structuredContent) {
      for (const item of items ?? []) out.text(describeContent(item, colors));
      if (!items?.length && structuredContent !== undefined) out.document(structuredContent);
    },
  };
  return out;
}

function describeContent(item, { dim }) {
  switch (item.type) {
    case "text":
      return item.text;
    case "image":
    case "audio":
      return dim(`[${item.type}: ${item.mimeType}, ${base64Bytes(item.data)} bytes]`);
    case "resource": {
      const { uri, mimeType, text, blob } = item.resource ?? {};
      const head = dim(`[resource: ${uri}${mimeType ? ` (${mimeType})` : ""}]`);
      if (text !== undefined) return `${head}\n${text}`;
      return blob === undefined ? head : `${head}\n${dim(`[blob: ${base64Bytes(blob)} bytes]`)}`;
    }
    case "resource_link":
      return dim(`[link: ${item.name} → ${item.uri}]`);
    default:
      return JSON.stringify(item);
  }
}

export function base64Bytes(data = "") {
  const padding = data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0;
  return Math.max(0, Math.floor((data.length * 3) / 4) - padding);
}

function wrap(line, room) {
  if (width(line) <= room) return [line];
  const lines = [];
  let current = "";
  for (const word of line.split(" ")) {
    if (current && width(current) + 1 + width(word) > room) {
      lines.push(current);
      current = word;
    } else current = current ? `${current} ${word}` : word;
  }
  return [...lines, current];
}

const oneLine = (cell) => String(cell ?? "").replace(/\s*\n\s*/g, " ");
// Code points, not UTF-16 units, so "…" and "✓" count as one column.
const width = (text) => [...text].length;
