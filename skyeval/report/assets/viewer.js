// skyeval sample viewer: plain JavaScript, no server. Data arrive as <script src> files
// (see skyeval/report/viewer.py): data/index.js, then per run list-K.js (rows) and,
// when a sample is opened, text-K.js (full texts). Maths is typeset by the vendored KaTeX
// (katex/katex.min.js, loaded before this file); without it formulas show as their source.
"use strict";
const RUNS = (window.SKYEVAL_INDEX || { runs: [] }).runs;
const BY_KEY = Object.fromEntries(RUNS.map(r => [r.key, r]));
const PAGE = 200;
// Row fields (viewer.py, _ChunkWriter.add)
// EXTRACTED and GOLD: a string, or a list of strings (several golds), or null.
const ID = 0, IDX = 1, STATUS = 2, TRUNC = 3, PARSE = 4, SCORE = 5, EXTRACTED = 6, GOLD = 7,
  FINISH = 8, TEXT_AT = 9, HEAD = 10, TAIL = 11, ERROR = 12, JUDGE = 13, SEARCH = 14, RANK = 15;
const STATUS_NAME = ["correct", "wrong", "failed"];

const rows = {};        // run key -> rows loaded so far
const texts = {};       // run key -> chunk -> {prompts, samples}
const textWaiters = {};
const loads = {};       // run key -> promise of all list chunks
let pending = 0;
let ranked = true;      // every loaded row has its RANK (position of its problem id in natural order)
// sort: [column key, 1 ascending | -1 descending]; ties go by problem, sample, run
const state = { mode: "samples", env: "", model: "", outcome: "all", search: "", limit: PAGE,
  a: "", b: "", which: "all", dsearch: "", sort: { samples: ["problem", 1], diff: ["size", -1] } };

window.SKYEVAL = {
  list(key, chunk, data) {
    for (const r of data) {
      r[SEARCH] = [r[ID], answerText(r[EXTRACTED]), answerText(r[GOLD]), r[HEAD], r[TAIL], r[ERROR]]
        .join("\u0001").toLowerCase();
    }
    (rows[key] = rows[key] || []).push(...data);
    ranked = false;
  },
  text(key, chunk, data) { (texts[key] = texts[key] || {})[chunk] = data; },
};

const $ = id => document.getElementById(id);
const esc = s => String(s ?? "").replace(/[&<>"]/g, c => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));
const num = n => n.toLocaleString("en-US");
const NATURAL = new Intl.Collator("en", { numeric: true });  // "2" before "10", "test/9" before "test/10"
const answerText = v => Array.isArray(v) ? v.join(", ") : (v ?? "");

// ---- maths ---------------------------------------------------------------------------
// Text stays plain text; only formulas are typeset: $…$, $$…$$, \(…\), \[…\], $$$…$$$
// (Codeforces) and \boxed{…} / \fbox{…} outside them. Code (``` blocks, `inline`) is left
// alone. A formula KaTeX cannot parse shows its source (the error on hover).
const MAX_FORMULA = 4000;
const typeset = new Map();  // (display, tex) -> [html | null, error]

function formula(tex, display, source) {
  if (!window.katex) return esc(source);
  const key = (display ? "D" : "I") + tex;
  let done = typeset.get(key);
  if (!done) {
    try {
      done = [window.katex.renderToString(tex, { displayMode: display, throwOnError: true, strict: "ignore" }), ""];
    } catch (err) {
      done = [null, String(err && err.message || err)];
    }
    if (typeset.size > 20000) typeset.clear();
    typeset.set(key, done);
  }
  return done[0] ?? `<span class="tex-error" title="${esc(done[1])}">${esc(source)}</span>`;
}

function closing(text, i, open, close, display) {
  const end = text.indexOf(close, i + open);
  if (end <= i + open || end - i > MAX_FORMULA) return null;
  return { end: end + close.length, tex: text.slice(i + open, end), display };
}

function inlineDollar(text, i) {
  // pandoc's rule: no space after the opening $, none before the closing one, and no digit
  // right after it, so "costs $5 and $10" holds no formula
  if (!text[i + 1] || /\s/.test(text[i + 1])) return null;
  for (let j = i + 1; j < text.length && j - i < MAX_FORMULA; j++) {
    const c = text[j];
    if (c === "\\") { j++; continue; }
    if (c === "\n" && text[j + 1] === "\n") return null;
    if (c === "$") {
      if (/\s/.test(text[j - 1]) || /\d/.test(text[j + 1] || "")) return null;
      return { end: j + 1, tex: text.slice(i + 1, j), display: false };
    }
  }
  return null;
}

function boxed(text, i) {
  const name = text.startsWith("\\boxed", i) ? "\\boxed" : text.startsWith("\\fbox", i) ? "\\fbox" : null;
  if (!name || /[a-zA-Z]/.test(text[i + name.length] || "")) return null;
  let j = i + name.length;
  while (text[j] === " ") j++;
  if (text[j] !== "{") return null;
  for (let depth = 0; j < text.length && j - i < MAX_FORMULA; j++) {
    const c = text[j];
    if (c === "\\") j++;
    else if (c === "{") depth++;
    else if (c === "}" && --depth === 0) {  // an empty box ("put the answer in \boxed{}") stays as written
      return text.slice(i + name.length, j).replace(/[\s{]/g, "") ? { end: j + 1, tex: text.slice(i, j + 1), display: false } : null;
    }
  }
  return null;
}

function richText(value) {
  const text = String(value ?? "");
  let out = "", plain = 0, i = 0;
  while (i < text.length) {
    const c = text[i];
    let found = null, code = null;
    if (c === "`") {
      const fence = text.startsWith("```", i) ? "```" : "`";
      const end = text.indexOf(fence, i + fence.length);
      if (end >= 0 || fence === "```") code = end >= 0 ? end + fence.length : text.length;  // an unclosed block: the rest
      else { i++; continue; }
    } else if (c === "\\") {
      const next = text[i + 1];
      if (next === "(") found = closing(text, i, 2, "\\)", false);
      else if (next === "[") found = closing(text, i, 2, "\\]", true);
      else if (next === "b" || next === "f") found = boxed(text, i);
      if (!found) { i += 2; continue; }  // \$ is a dollar, not a delimiter
    } else if (c === "$") {
      const run = text.startsWith("$$$", i) ? 3 : text.startsWith("$$", i) ? 2 : 1;
      found = run === 1 ? inlineDollar(text, i) : closing(text, i, run, "$".repeat(run), run === 2);
      if (!found) { i += run; continue; }
    } else { i++; continue; }
    out += esc(text.slice(plain, i));
    out += code !== null ? codeHtml(text.slice(i, code)) : formula(found.tex, found.display, text.slice(i, found.end));
    i = plain = code !== null ? code : found.end;
  }
  return out + esc(text.slice(plain));
}

function codeHtml(source) {
  // code as written; a tool loop's ```python and ```output blocks (tools=python) boxed apart, fences off
  const block = source.match(/^```(python|output)\n([\s\S]*?)\n?```$/);
  if (!block) return `<code>${esc(source)}</code>`;
  const kind = block[1] === "python" ? "code" : "output";
  return `<code class="tool-${kind}" data-label="${kind}">${esc(block[2])}</code>`;
}

function answerHtml(value, run) {
  // an extracted or gold answer: LaTeX without delimiters typeset whole; several golds joined;
  // code (a code benchmark's extracted program, anything over several lines) as code; the
  // start of a long answer (cut for the list: "…") as written, its formula being incomplete
  if (value == null || value === "") return "—";
  if (Array.isArray(value)) return value.map(v => answerHtml(v, run)).join(", ");
  const text = String(value);
  if ((run && run.answers === "code") || text.includes("\n")) return `<code class="code">${esc(text)}</code>`;
  if (text.endsWith("…")) return `<span class="cut">${esc(text)}</span>`;
  if (/\$|\\\(|\\\[/.test(text)) return richText(text);
  return /[\\^_{}]/.test(text) ? formula(text, false, text) : esc(text);
}

function loadScript(src) {
  pending++;
  setBusy();
  return new Promise((resolve, reject) => {
    const s = document.createElement("script");
    s.src = src;
    s.onload = () => { pending--; setBusy(); resolve(); };
    s.onerror = () => { pending--; setBusy(); reject(new Error("could not load " + src)); };
    document.body.appendChild(s);
  });
}

function setBusy(message) {
  document.body.dataset.loading = pending > 0 || renderQueued ? "1" : "0";
  $("loading").textContent = message || (pending > 0 ? "loading data…" : "");
}

function ensureRun(key) {
  if (!loads[key]) {
    rows[key] = rows[key] || [];
    const run = BY_KEY[key];
    loads[key] = (async () => {
      for (let c = 0; c < run.list_chunks; c++) {
        await loadScript(`data/${key}/list-${c}.js`);
        setBusy(`loading ${run.label}: ${num(rows[key].length)} of ${num(run.samples)} samples`);
        scheduleRender();
      }
    })();
  }
  return loads[key];
}

async function ensureText(key, textAt) {
  const chunk = Math.floor(textAt / BY_KEY[key].text_chunk_size);
  if (!(texts[key] && texts[key][chunk])) await loadScript(`data/${key}/text-${chunk}.js`);
  const data = texts[key][chunk];
  const [pid, reasoning, answer, usage, seed, extracted, gold] = data.samples[textAt % BY_KEY[key].text_chunk_size];
  return { prompt: data.prompts[pid] ?? "", reasoning, answer, usage, seed, extracted, gold };
}

let renderQueued = false;
function scheduleRender() {
  if (renderQueued) return;
  renderQueued = true;
  setTimeout(() => { renderQueued = false; render(); }, 30);
  setBusy();
}

function rankProblems() {
  // RANK: the position of the row's problem id among every loaded id, in natural order
  if (ranked) return;
  const ids = new Set();
  for (const list of Object.values(rows)) for (const r of list) ids.add(r[ID]);
  const rank = new Map([...ids].sort(NATURAL.compare).map((id, i) => [id, i]));
  for (const list of Object.values(rows)) for (const r of list) r[RANK] = rank.get(r[ID]);
  ranked = true;
}

const byText = v => v == null || v === "" ? null : String(Array.isArray(v) ? v.join(", ") : v);
function textOrder(a, b) {  // missing values last
  if (a === null || b === null) return (a === null) - (b === null);
  return NATURAL.compare(a, b);
}
// The samples list's columns: [key, title, order of two [run, row] pairs]
const SAMPLE_COLUMNS = [
  ["run", "Run", (p, q) => NATURAL.compare(p[0].label, q[0].label)],
  ["problem", "Problem", (p, q) => p[1][RANK] - q[1][RANK]],
  ["sample", "#", (p, q) => p[1][IDX] - q[1][IDX]],
  ["outcome", "Outcome", (p, q) => p[1][STATUS] - q[1][STATUS] || q[1][TRUNC] - p[1][TRUNC] || q[1][PARSE] - p[1][PARSE]],
  ["extracted", "Extracted", (p, q) => textOrder(byText(p[1][EXTRACTED]), byText(q[1][EXTRACTED]))],
  ["gold", "Gold", (p, q) => textOrder(byText(p[1][GOLD]), byText(q[1][GOLD]))],
  ["answer", "Answer (end)", (p, q) => textOrder(byText(p[1][ERROR] || p[1][TAIL]), byText(q[1][ERROR] || q[1][TAIL]))],
];
const SAMPLE_ORDER = Object.fromEntries(SAMPLE_COLUMNS.map(([key, , order]) => [key, order]));
const TIES = ["problem", "sample", "run"].map(k => SAMPLE_ORDER[k]);

function sampleOrder([key, dir]) {
  const first = SAMPLE_ORDER[key];
  return (p, q) => dir * first(p, q) || TIES.reduce((d, order) => d || order(p, q), 0);
}

function header(columns, mode) {
  // sortable column headers: a click sorts by the column, a second click reverses it
  const [key, dir] = state.sort[mode];
  return `<tr>${columns.map(([k, title, , hint]) =>
    `<th class="sortable${k === key ? (dir > 0 ? " asc" : " desc") : ""}" data-sort="${k}"` +
    `${hint ? ` title="${esc(hint)}"` : ""} aria-sort="${k === key ? (dir > 0 ? "ascending" : "descending") : "none"}">` +
    `${esc(title)}${k === key ? (dir > 0 ? " ▲" : " ▼") : ""}</th>`).join("")}</tr>`;
}

function sortBy(mode, key) {
  const [current, dir] = state.sort[mode];
  state.sort[mode] = [key, key === current ? -dir : 1];
  state.limit = PAGE;
  render();
}

let matched = { key: "", list: [] };  // the last filtered and sorted list, kept for "Show more"

function selectedRuns() {
  return RUNS.filter(r => (!state.env || r.env === state.env) && (!state.model || r.model === state.model));
}

function matches(r, q) {
  switch (state.outcome) {
    case "correct": if (r[STATUS] !== 0) return false; break;
    case "wrong": if (r[STATUS] !== 1) return false; break;
    case "failed": if (r[STATUS] !== 2) return false; break;
    case "truncated": if (!r[TRUNC]) return false; break;
    case "parse": if (!r[PARSE]) return false; break;
    case "judged": if (!r[JUDGE] || !r[JUDGE][0]) return false; break;
  }
  return !q || r[SEARCH].includes(q);
}

function badges(r) {
  let html = `<span class="badge b-${STATUS_NAME[r[STATUS]]}">${STATUS_NAME[r[STATUS]]}</span>`;
  if (r[TRUNC]) html += `<span class="badge b-truncated" title="finish_reason = length">truncated</span>`;
  if (r[PARSE]) html += `<span class="badge b-parse" title="no answer extracted">parse failure</span>`;
  if (r[JUDGE]) html += r[JUDGE][0]
    ? `<span class="badge b-judge" title="graded by the judge: ${esc(r[JUDGE][1])}">judge: ${esc(r[JUDGE][1])}</span>`
    : `<span class="badge b-judge-error" title="${esc(r[JUDGE][2] || "")}">judge: no verdict</span>`;
  return html;
}

async function render() {
  await (state.mode === "samples" ? renderSamples() : renderDiff());
  setBusy();
}

function renderSamples() {
  const runs = selectedRuns();
  runs.forEach(r => ensureRun(r.key));
  rankProblems();
  const q = state.search.trim().toLowerCase();
  let total = 0, loaded = 0;
  for (const run of runs) {
    total += run.samples;
    loaded += (rows[run.key] || []).length;
  }
  const key = JSON.stringify([runs.map(r => r.key), loaded, state.outcome, q, state.sort.samples]);
  if (matched.key !== key) {
    const list = [];
    for (const run of runs) for (const r of rows[run.key] || []) if (matches(r, q)) list.push([run, r]);
    matched = { key, list: list.sort(sampleOrder(state.sort.samples)) };
  }
  const count = matched.list.length;
  const shown = matched.list.slice(0, state.limit);
  const multi = runs.length > 1;
  $("list").tHead.innerHTML = header(SAMPLE_COLUMNS.filter(([k]) => multi || k !== "run"), "samples");
  $("list").tBodies[0].innerHTML = shown.map(([run, r], i) =>
    `<tr data-i="${i}">${multi ? `<td class="run">${esc(run.label)}</td>` : ""}<td class="pid">${esc(r[ID])}</td><td>${r[IDX]}</td><td>${badges(r)}</td>` +
    `<td class="answer">${answerHtml(r[EXTRACTED], run)}</td><td class="answer gold">${answerHtml(r[GOLD], run)}</td>` +
    `<td class="tail"><div>${esc(r[ERROR] || r[TAIL])}</div></td></tr>`).join("");
  $("list").tBodies[0].onclick = e => {
    const tr = e.target.closest("tr");
    if (tr) { selectRow(tr); showSample(...shown[+tr.dataset.i]); }
  };
  const filtered = state.outcome !== "all" || q;
  $("count").dataset.count = count;
  $("count").textContent = filtered
    ? `${num(count)} of ${num(loaded)} samples match` + (loaded < total ? ` (${num(total)} in ${runs.length} runs, still loading)` : ` (${runs.length} run${runs.length === 1 ? "" : "s"})`)
    : `${num(count)} samples in ${runs.length} run${runs.length === 1 ? "" : "s"}` + (loaded < total ? ` (of ${num(total)}, loading)` : "");
  $("more").hidden = count <= shown.length;
  $("more").textContent = `Show ${Math.min(PAGE, count - shown.length)} more (${num(count - shown.length)} not shown)`;
  $("empty").hidden = count > 0 || loaded < total;
}

function selectRow(tr) {
  for (const s of tr.parentElement.querySelectorAll(".selected")) s.classList.remove("selected");
  tr.classList.add("selected");
}

function fact(name, value) { return `<span><b>${name}</b> ${value}</span>`; }

async function sampleView(run, r) {
  const text = r[TEXT_AT] >= 0 ? await ensureText(run.key, r[TEXT_AT]) : null;
  const usage = text && text.usage ? Object.entries(text.usage).filter(([, v]) => v != null).map(([k, v]) => `${k} ${v}`).join(", ") : "—";
  let html = `<div class="facts">${fact("Run", esc(run.label))}${fact("Problem", esc(r[ID]))}${fact("Sample", r[IDX])}` +
    `${fact("Outcome", badges(r))}${fact("Score", r[SCORE])}${fact("Finish", esc(r[FINISH] ?? "—"))}` +
    `${fact("Tokens", esc(usage))}${fact("Seed", esc(text && text.seed != null ? text.seed : "—"))}</div>`;
  if (r[ERROR]) html += `<p class="error">${esc(r[ERROR])}</p>`;
  const col = (title, body, cls = "sample-text") => `<div class="col"><h3>${title}</h3><div class="${cls}">${body}</div></div>`;
  const [extracted, gold] = text && text.extracted !== undefined ? [text.extracted, text.gold] : [r[EXTRACTED], r[GOLD]];
  const answers = `<table class="answers"><tr><th>extracted</th><td class="answer">${answerHtml(extracted, run)}</td></tr>` +
    `<tr><th>gold</th><td class="answer gold">${answerHtml(gold, run)}</td></tr></table>`;
  html += `<div class="cols">` +
    col("Prompt", text ? richText(text.prompt) : "(no generation record)") +
    (text && text.reasoning ? col("Reasoning", richText(text.reasoning)) : "") +
    col("Answer", text ? richText(text.answer) : "—") +
    col("Extracted / gold", answers, "") +
    (r[JUDGE] ? col(r[JUDGE][0] ? "Judge (decided this score)" : "Judge (no verdict: the rules' score stands)",
                    esc((r[JUDGE][2] ? r[JUDGE][2] + "\n\n" : "") + r[JUDGE][3])) : "") + `</div>`;
  return html;
}

async function showSample(run, r) {
  $("detail").innerHTML = await sampleView(run, r);
}

// ---- two-run comparison -------------------------------------------------------------
// The comparison list's columns: [key, title, order of two [pid, A stats, B stats, change] rows, hint]
const DIFF_COLUMNS = [
  ["problem", "Problem", (p, q) => p[1].rank - q[1].rank],
  ["a", "A right", (p, q) => p[1].right / p[1].n - q[1].right / q[1].n, "samples run A answered right / samples"],
  ["b", "B right", (p, q) => p[2].right / p[2].n - q[2].right / q[2].n, "samples run B answered right / samples"],
  ["change", "Change", (p, q) => p[3] - q[3], "B's share right − A's"],
];
const DIFF_ORDER = { size: (p, q) => Math.abs(p[3]) - Math.abs(q[3]),
  ...Object.fromEntries(DIFF_COLUMNS.map(([key, , order]) => [key, order])) };

function problemStats(key) {
  const stats = new Map();
  for (const r of rows[key] || []) {
    const s = stats.get(r[ID]) || { right: 0, n: 0, rows: [], rank: r[RANK] };
    s.right += r[STATUS] === 0 ? 1 : 0; s.n++; s.rows.push(r);
    stats.set(r[ID], s);
  }
  return stats;
}

async function renderDiff() {
  const a = BY_KEY[state.a], b = BY_KEY[state.b];
  const body = $("list").tBodies[0];
  $("more").hidden = true;
  if (!a || !b) {
    $("list").tHead.innerHTML = "";
    body.innerHTML = "";
    $("count").dataset.count = 0;
    $("count").textContent = "Pick two runs of the same benchmark.";
    return;
  }
  await Promise.all([ensureRun(a.key), ensureRun(b.key)]);
  rankProblems();
  const sa = problemStats(a.key), sb = problemStats(b.key);
  const q = state.dsearch.trim().toLowerCase();
  let shared = 0;
  const diffs = [];
  for (const [pid, x] of sa) {
    const y = sb.get(pid);
    if (!y) continue;
    shared++;
    const change = y.right / y.n - x.right / x.n;
    if (change === 0) continue;
    if ((state.which === "won" && change < 0) || (state.which === "lost" && change > 0)) continue;
    if (q && !pid.toLowerCase().includes(q)) continue;
    diffs.push([pid, x, y, change]);
  }
  const [key, dir] = state.sort.diff;
  diffs.sort((p, q2) => dir * DIFF_ORDER[key](p, q2) || DIFF_ORDER.problem(p, q2));
  const shown = diffs.slice(0, state.limit);
  $("list").tHead.innerHTML = header(DIFF_COLUMNS, "diff");
  body.innerHTML = shown.map(([pid, x, y, change], i) =>
    `<tr data-i="${i}"><td>${esc(pid)}</td><td>${x.right}/${x.n}</td><td>${y.right}/${y.n}</td>` +
    `<td>${change > 0 ? '<span class="badge b-correct">▲ B better</span>' : '<span class="badge b-wrong">▼ B worse</span>'}</td></tr>`).join("");
  body.onclick = e => {
    const tr = e.target.closest("tr");
    if (tr) { selectRow(tr); showPair(a, b, shown[+tr.dataset.i]); }
  };
  const label = { all: "A and B disagree", won: "B gets right more often than A", lost: "B gets right less often than A" }[state.which];
  $("count").dataset.count = diffs.length;
  $("count").textContent = `${num(diffs.length)} problems where ${label} (of ${num(shared)} problems in both runs)`;
  $("more").hidden = diffs.length <= shown.length;
  $("more").textContent = `Show more (${num(diffs.length - shown.length)} not shown)`;
  $("empty").hidden = diffs.length > 0;
  $("empty").textContent = "The two runs agree on every shared problem" + (state.which === "all" ? "." : " in this direction.");
}

async function showPair(a, b, [pid, x, y]) {
  // The first sample index where the two runs differ, else the first sample.
  const byIdx = new Map(y.rows.map(r => [r[IDX], r]));
  const ra = x.rows.find(r => byIdx.has(r[IDX]) && (byIdx.get(r[IDX])[STATUS] === 0) !== (r[STATUS] === 0)) || x.rows[0];
  const rb = byIdx.get(ra[IDX]) || y.rows[0];
  const [va, vb] = await Promise.all([sampleView(a, ra), sampleView(b, rb)]);
  $("detail").innerHTML = `<div class="sides"><div class="side"><h2>A · ${esc(a.label)}</h2>${va}</div>` +
    `<div class="side"><h2>B · ${esc(b.label)}</h2>${vb}</div></div>`;
}

// ---- controls ------------------------------------------------------------------------
function options(select, values, allLabel) {
  select.innerHTML = (allLabel ? `<option value="">${allLabel}</option>` : "") +
    values.map(([v, text, disabled]) => `<option value="${esc(v)}"${disabled ? " disabled" : ""}>${esc(text)}</option>`).join("");
}

function setupDiffSelects() {
  options($("d-a"), RUNS.map(r => [r.key, r.label]));
  const pair = RUNS.flatMap((r, i) => RUNS.slice(i + 1).filter(s => s.env === r.env).map(s => [r, s]))[0];
  state.a = state.a || (pair ? pair[0].key : RUNS[0]?.key || "");
  $("d-a").value = state.a;
  const env = BY_KEY[state.a]?.env;
  options($("d-b"), RUNS.map(r => [r.key, r.label + (r.env === env ? "" : " (other benchmark)"), r.env !== env || r.key === state.a]));
  if (!state.b || BY_KEY[state.b]?.env !== env || state.b === state.a) {
    state.b = (pair && pair[0].key === state.a ? pair[1].key : RUNS.find(r => r.env === env && r.key !== state.a)?.key) || "";
  }
  $("d-b").value = state.b;
}

function setMode(mode) {
  state.mode = mode;
  state.limit = PAGE;
  for (const t of document.querySelectorAll(".tab")) t.classList.toggle("active", t.dataset.mode === mode);
  $("controls-samples").hidden = mode !== "samples";
  $("controls-diff").hidden = mode !== "diff";
  $("detail").innerHTML = `<p class="placeholder">${mode === "samples"
    ? "Click a row to see the prompt, the reasoning and the answer side by side."
    : "Click a problem to see run A's and run B's answers side by side."}</p>`;
  if (mode === "diff") setupDiffSelects();
  render();
}

function pills(groupId, attr, key) {
  $(groupId).addEventListener("click", e => {
    const button = e.target.closest("button");
    if (!button) return;
    for (const p of $(groupId).querySelectorAll("button")) p.classList.toggle("active", p === button);
    state[key] = button.dataset[attr];
    state.limit = PAGE;
    render();
  });
}

function init() {
  const envs = [...new Set(RUNS.map(r => r.env))].sort();
  const models = [...new Set(RUNS.map(r => r.model))].sort();
  options($("f-env"), envs.map(e => [e, e]), `all (${envs.length})`);
  options($("f-model"), models.map(m => [m, m]), `all (${models.length})`);
  $("f-env").onchange = e => { state.env = e.target.value; state.limit = PAGE; render(); };
  $("f-model").onchange = e => { state.model = e.target.value; state.limit = PAGE; render(); };
  let timer;
  $("f-search").oninput = e => { document.body.dataset.loading = "1"; clearTimeout(timer); timer = setTimeout(() => { state.search = e.target.value; state.limit = PAGE; render(); }, 150); };
  $("d-search").oninput = e => { state.dsearch = e.target.value; state.limit = PAGE; render(); };
  pills("f-outcome", "outcome", "outcome");
  pills("d-which", "which", "which");
  $("d-a").onchange = e => { state.a = e.target.value; setupDiffSelects(); render(); };
  $("d-b").onchange = e => { state.b = e.target.value; render(); };
  $("more").onclick = () => { state.limit += PAGE; render(); };
  $("list").tHead.onclick = e => {
    const th = e.target.closest("th[data-sort]");
    if (th) sortBy(state.mode, th.dataset.sort);
  };
  for (const t of document.querySelectorAll(".tab")) t.onclick = () => setMode(t.dataset.mode);
  $("tab-diff").disabled = RUNS.length < 2;
  const mode = new URLSearchParams(location.search).get("mode");
  setMode(mode === "diff" ? "diff" : "samples");
  setBusy();
}

init();
