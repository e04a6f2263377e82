// skyeval sample viewer: plain JavaScript, no server. Data arrive as <script src> files
// (see skyeval/report/viewer.py): data/index.js, then per run list-K.js (rows) and,
// when a sample is opened, text-K.js (full texts).
"use strict";
const RUNS = (window.SKYEVAL_INDEX || { runs: [] }).runs;
const BY_KEY = Object.fromEntries(RUNS.map(r => [r.key, r]));
const PAGE = 200;
// Row fields (viewer.py, _ChunkWriter.add)
const ID = 0, IDX = 1, STATUS = 2, TRUNC = 3, PARSE = 4, SCORE = 5, EXTRACTED = 6, GOLD = 7,
  FINISH = 8, TEXT_AT = 9, HEAD = 10, TAIL = 11, ERROR = 12, JUDGE = 13, SEARCH = 14;
const STATUS_NAME = ["correct", "wrong", "failed"];

const rows = {};        // run key -> rows loaded so far
const texts = {};       // run key -> chunk -> {prompts, samples}
const textWaiters = {};
const loads = {};       // run key -> promise of all list chunks
let pending = 0;
const state = { mode: "samples", env: "", model: "", outcome: "all", search: "", limit: PAGE,
  a: "", b: "", which: "all", dsearch: "" };

window.SKYEVAL = {
  list(key, chunk, data) {
    for (const r of data) {
      r[SEARCH] = [r[ID], r[EXTRACTED], r[GOLD], r[HEAD], r[TAIL], r[ERROR]].join("\u0001").toLowerCase();
    }
    (rows[key] = rows[key] || []).push(...data);
  },
  text(key, chunk, data) { (texts[key] = texts[key] || {})[chunk] = data; },
};

const $ = id => document.getElementById(id);
const esc = s => String(s ?? "").replace(/[&<>"]/g, c => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));
const num = n => n.toLocaleString("en-US");

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
  const [pid, reasoning, answer, usage, seed] = data.samples[textAt % BY_KEY[key].text_chunk_size];
  return { prompt: data.prompts[pid] ?? "", reasoning, answer, usage, seed };
}

let renderQueued = false;
function scheduleRender() {
  if (renderQueued) return;
  renderQueued = true;
  setTimeout(() => { renderQueued = false; render(); }, 30);
  setBusy();
}

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
  const q = state.search.trim().toLowerCase();
  let total = 0, loaded = 0, count = 0;
  const shown = [];
  for (const run of runs) {
    total += run.samples;
    const list = rows[run.key] || [];
    loaded += list.length;
    for (const r of list) {
      if (matches(r, q)) {
        if (shown.length < state.limit) shown.push([run, r]);
        count++;
      }
    }
  }
  const multi = runs.length > 1;
  $("list").tHead.innerHTML = `<tr>${multi ? "<th>Run</th>" : ""}<th>Problem</th><th>#</th><th>Outcome</th><th>Extracted</th><th>Gold</th><th>Answer (end)</th></tr>`;
  $("list").tBodies[0].innerHTML = shown.map(([run, r], i) =>
    `<tr data-i="${i}">${multi ? `<td class="run">${esc(run.label)}</td>` : ""}<td>${esc(r[ID])}</td><td>${r[IDX]}</td><td>${badges(r)}</td>` +
    `<td>${esc(r[EXTRACTED] ?? "—")}</td><td>${esc(r[GOLD] ?? "—")}</td><td class="tail">${esc(r[ERROR] || r[TAIL])}</td></tr>`).join("");
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
  const col = (title, body) => `<div class="col"><h3>${title}</h3>${withBlocks(body)}</div>`;
  html += `<div class="cols">` +
    col("Prompt", text ? text.prompt : "(no generation record)") +
    (text && text.reasoning ? col("Reasoning", text.reasoning) : "") +
    col("Answer", text ? text.answer : "—") +
    col("Extracted / gold", `extracted: ${r[EXTRACTED] ?? "—"}\ngold:      ${r[GOLD] ?? "—"}`) +
    (r[JUDGE] ? col(r[JUDGE][0] ? "Judge (decided this score)" : "Judge (no verdict: the rules' score stands)",
                    (r[JUDGE][2] ? r[JUDGE][2] + "\n\n" : "") + r[JUDGE][3]) : "") + `</div>`;
  return html;
}

// Text as <pre> blocks, a tool loop's ```python and ```output blocks (tools=python) apart from the rest.
function withBlocks(text) {
  const parts = String(text).split(/^(```(?:python|output)\n[\s\S]*?\n```)$/m);
  if (parts.length === 1) return `<pre>${esc(text)}</pre>`;
  return parts.filter(part => part.trim() !== "").map(part => {
    const block = part.match(/^```(python|output)\n([\s\S]*?)\n```$/);
    if (!block) return `<pre>${esc(part.replace(/^\n+|\n+$/g, ""))}</pre>`;
    const kind = block[1] === "python" ? "code" : "output";
    return `<pre class="tool-${kind}" data-label="${kind}">${esc(block[2])}</pre>`;
  }).join("");
}

async function showSample(run, r) {
  $("detail").innerHTML = await sampleView(run, r);
}

// ---- two-run comparison -------------------------------------------------------------
function problemStats(key) {
  const stats = new Map();
  for (const r of rows[key] || []) {
    const s = stats.get(r[ID]) || { right: 0, n: 0, rows: [] };
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
  diffs.sort((p, q2) => Math.abs(q2[3]) - Math.abs(p[3]) || (p[0] < q2[0] ? -1 : 1));
  const shown = diffs.slice(0, state.limit);
  $("list").tHead.innerHTML = `<tr><th>Problem</th><th title="samples run A answered right / samples">A right</th><th title="samples run B answered right / samples">B right</th><th>Change</th></tr>`;
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
  for (const t of document.querySelectorAll(".tab")) t.onclick = () => setMode(t.dataset.mode);
  $("tab-diff").disabled = RUNS.length < 2;
  const mode = new URLSearchParams(location.search).get("mode");
  setMode(mode === "diff" ? "diff" : "samples");
  setBusy();
}

init();
