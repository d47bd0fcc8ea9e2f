// The run dashboard, an MCP App view. It speaks JSON-RPC over postMessage with its host
// (ui/initialize, then tool results from the host and tools/call to the host) and follows one
// run by polling the server's run tools through the host. No network, no libraries: the host's
// sandbox allows neither.
"use strict";

const APPS_PROTOCOL = "2026-01-26";
const POLL_MS = 1500;
const LOG_LINES = 40;
const TERMINAL = new Set(["completed", "failed", "stopped"]);
const SCORE_CURVES = [
  ["train/percent_correct", "train % correct", "--train"],
  ["eval/percent_correct", "eval % correct", "--eval"],
  ["reward/mean", "reward (mean)", "--reward"],
];
const LOSS_CURVES = [["train/loss", "train loss", "--loss"]];

const $ = (id) => document.getElementById(id);
const view = { runId: null, status: null, timer: null, polling: false, finalDone: false, lastResults: null, runDir: null, noticeFrom: null };

// ---- JSON-RPC with the host -------------------------------------------------------------

let nextId = 1;
const pending = new Map();

function send(message) {
  window.parent.postMessage({ jsonrpc: "2.0", ...message }, "*");
}

function request(method, params) {
  const id = nextId++;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    send({ id, method, params });
  });
}

function notify(method, params) {
  send({ method, params: params || {} });
}

const hostRequests = {
  ping: () => ({}),
  "ui/resource-teardown": () => { stopPolling(); return {}; },
};

const hostNotifications = {
  "ui/notifications/tool-result": (result) => showToolResult(result),
  "ui/notifications/tool-input": () => {},
  "ui/notifications/host-context-changed": (context) => applyHostContext(context),
  "ui/notifications/tool-cancelled": (params) => showNotice(`The tool call was cancelled${params && params.reason ? ": " + params.reason : ""}.`),
};

window.addEventListener("message", (event) => {
  if (event.source !== window.parent) return;
  const message = event.data;
  if (!message || message.jsonrpc !== "2.0") return;
  if (message.id !== undefined && message.method === undefined) {
    const waiter = pending.get(message.id);
    if (!waiter) return;
    pending.delete(message.id);
    if (message.error) waiter.reject(new Error(message.error.message || "the host refused the request"));
    else waiter.resolve(message.result);
    return;
  }
  if (message.id !== undefined) {
    const handler = hostRequests[message.method];
    if (handler) send({ id: message.id, result: handler(message.params) });
    else send({ id: message.id, error: { code: -32601, message: `the dashboard does not handle ${message.method}` } });
    return;
  }
  const handler = hostNotifications[message.method];
  if (handler) handler(message.params);
});

async function callTool(name, args) {
  const result = await request("tools/call", { name, arguments: args });
  const answer = result && result.structuredContent;
  if (result && result.isError) throw new Error(textOf(result) || `${name} failed`);
  if (answer && answer.refused) throw new Error(answer.reason);
  return answer;
}

function textOf(result) {
  return (result.content || []).filter((block) => block.type === "text").map((block) => block.text).join("\n");
}

// ---- Following a run ----------------------------------------------------------------------

function showToolResult(result) {
  const answer = result && result.structuredContent;
  if (!answer || answer.refused || !answer.run_id) {
    showNotice(answer && answer.refused ? `Refused: ${answer.reason}` : "This result names no run to show.");
    return;
  }
  if (view.runId !== answer.run_id) {
    view.runId = answer.run_id;
    view.finalDone = false;
  }
  $("run-id").textContent = `run ${answer.run_id}`;
  if (answer.environment) $("environment").textContent = answer.environment;
  if (answer.status) showStatus(answer.status);
  startPolling();
}

function startPolling() {
  if (view.polling) return;
  view.polling = true;
  tick();
}

function stopPolling() {
  view.polling = false;
  clearTimeout(view.timer);
}

async function tick() {
  if (!view.polling) return;
  try {
    await refresh();
  } catch (error) {
    showNotice(error.message);
  }
  if (TERMINAL.has(view.status) && view.finalDone) {
    view.polling = false;
    return;
  }
  if (TERMINAL.has(view.status)) view.finalDone = true; // one more round picks up the last metrics
  view.timer = setTimeout(tick, POLL_MS);
}

async function refresh() {
  const runId = view.runId;
  const [status, results, log] = await Promise.all([
    callTool("rl_check_status", { run_id: runId }),
    callTool("rl_get_results", { run_id: runId, picture: false }),
    callTool("rl_get_logs", { run_id: runId, component: $("log-component").value, lines: LOG_LINES }),
  ]);
  if (runId !== view.runId) return;
  showRunStatus(status);
  showResults(results);
  showLog(log);
}

// ---- Rendering ----------------------------------------------------------------------------

function showStatus(status) {
  view.status = status;
  $("status").textContent = status;
  $("status").dataset.status = status;
  $("dashboard").dataset.status = status;
  $("stop").disabled = TERMINAL.has(status) || status === "stopping";
}

function showRunStatus(status) {
  view.runDir = status.run_dir;
  $("environment").textContent = `${status.environment} · ${status.backend}`;
  showStatus(status.status);
  const total = status.total_steps ? `/${status.total_steps}` : "";
  $("progress-fill").style.width = `${Math.round(100 * (status.progress || 0))}%`;
  $("progress-text").textContent = `step ${status.step}${total} · ${formatSeconds(status.running_seconds)}`;
  const problem = status.status === "failed" || status.status === "stopped"
    ? [status.reason, status.log_tail].filter(Boolean).join("\n") : "";
  // A failure or stop reason comes and goes with the status; what an action reported stays.
  if (problem) showNotice(problem, "status");
  else if (view.noticeFrom === "status") hideNotice();
  fillTable($("components"), Object.values(status.components).map((component) => {
    const detail = component.state === "exited" ? `exit ${component.exit_code}`
      : component.pid ? `pid ${component.pid}` : "";
    return [[component.name], [component.state, `state-${component.state} code-${component.exit_code}`], [detail, "muted"]];
  }));
  fillTable($("latest"), Object.entries(status.metrics).map(([name, value]) =>
    [[name, "muted"], [value === null ? "–" : formatNumber(value)]]));
}

function showResults(results) {
  view.lastResults = results;
  const lastStep = Math.max(results.total_steps || 0, results.step || 0, 1);
  drawChart($("score-chart"), results.history, SCORE_CURVES, lastStep, results.best_metrics["eval/percent_correct"]);
  drawChart($("loss-chart"), results.history, LOSS_CURVES, lastStep, null);
  const rows = results.checkpoints.map((checkpoint) =>
    [[`step ${checkpoint.step}`], [checkpoint.kind, "muted"], [checkpoint.path.split("/").slice(-2).join("/"), "muted"]]);
  fillTable($("checkpoints"), rows.length ? rows : [[["none yet", "muted"]]]);
}

function showLog(log) {
  const pre = $("log");
  const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
  // Paths inside the run directory read shorter relative to it.
  const text = view.runDir ? log.text.split(view.runDir + "/").join("") : log.text;
  pre.textContent = text || `(the ${log.component} log is empty)`;
  if (atEnd) pre.scrollTop = pre.scrollHeight;
}

function fillTable(table, rows) {
  const body = document.createElement("tbody");
  for (const cells of rows) {
    const row = body.insertRow();
    for (const [text, className] of cells) {
      const cell = row.insertCell();
      cell.textContent = text;
      if (className) cell.className = className;
    }
  }
  table.replaceChild(body, table.tBodies[0]);
}

const SVG = "http://www.w3.org/2000/svg";

function svgElement(name, attributes, text) {
  const element = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, value);
  if (text !== undefined) element.textContent = text;
  return element;
}

// One chart: the given metrics against step, shared y axis, a legend, the best eval starred.
function drawChart(svg, history, curves, lastStep, best) {
  const [, , width, height] = svg.getAttribute("viewBox").split(" ").map(Number);
  const box = { left: 40, right: width - 10, top: 16, bottom: height - 20 };
  const shown = curves.filter(([name]) => history[name] && history[name].steps.length);
  svg.replaceChildren();
  if (!shown.length) {
    svg.append(svgElement("text", { x: width / 2, y: height / 2, "text-anchor": "middle" }, "no metrics logged yet"));
    return;
  }
  const values = shown.flatMap(([name]) => history[name].values);
  let low = Math.min(...values), high = Math.max(...values);
  if (high - low < 1e-9) { low -= 0.5; high += 0.5; }
  const pad = (high - low) * 0.08;
  low -= pad; high += pad;
  const x = (step) => box.left + (box.right - box.left) * step / lastStep;
  const y = (value) => box.bottom - (box.bottom - box.top) * (value - low) / (high - low);
  svg.append(svgElement("line", { class: "axis", x1: box.left, x2: box.right, y1: box.bottom, y2: box.bottom }));
  svg.append(svgElement("line", { class: "axis", x1: box.left, x2: box.left, y1: box.top, y2: box.bottom }));
  // Ticks share one precision, chosen from the span, so 0.70 and 0.007 are not mixed.
  const span = high - low - 2 * pad || 1;
  const decimals = span >= 10 ? 0 : span >= 1 ? 1 : span >= 0.1 ? 2 : 3;
  for (const value of [low + pad, (low + high) / 2, high - pad]) {
    svg.append(svgElement("text", { x: box.left - 4, y: y(value) + 3, "text-anchor": "end" }, value.toFixed(decimals)));
  }
  svg.append(svgElement("text", { x: box.left, y: height - 5 }, "0"));
  svg.append(svgElement("text", { x: box.right, y: height - 5, "text-anchor": "end" }, `step ${lastStep}`));
  let legendX = box.left + 6;
  for (const [name, label, colour] of shown) {
    const series = history[name];
    const stroke = getComputedStyle(document.documentElement).getPropertyValue(colour).trim();
    const points = series.steps.map((step, i) => `${x(step).toFixed(1)},${y(series.values[i]).toFixed(1)}`);
    svg.append(svgElement("polyline", { class: "curve", points: points.join(" "), stroke, "data-metric": name, "data-points": points.length }));
    if (points.length < 12) {
      series.steps.forEach((step, i) => svg.append(svgElement("circle", { cx: x(step), cy: y(series.values[i]), r: 2.5, fill: stroke })));
    }
    svg.append(svgElement("rect", { x: legendX, y: 4, width: 10, height: 3, fill: stroke }));
    svg.append(svgElement("text", { x: legendX + 13, y: 9 }, label));
    legendX += 16 + label.length * 5.6;
  }
  if (best && shown.some(([name]) => name === "eval/percent_correct")) {
    const stroke = getComputedStyle(document.documentElement).getPropertyValue("--eval").trim();
    svg.append(svgElement("text", { x: x(best.step), y: y(best.value) + 5, "text-anchor": "middle", fill: stroke, style: `fill:${stroke};font-size:16px`, class: "best" }, "★"));
    // The label sits above the star, on whichever side has room.
    const leftOfStar = x(best.step) > (box.left + box.right) / 2;
    svg.append(svgElement("text", {
      x: x(best.step) + (leftOfStar ? -10 : 10), y: Math.max(box.top + 8, y(best.value) - 8),
      "text-anchor": leftOfStar ? "end" : "start",
    }, `best eval ${formatNumber(best.value)} @ step ${best.step}`));
  }
}

function formatNumber(value) {
  const size = Math.abs(value);
  if (size !== 0 && (size < 0.01 || size >= 1e5)) return value.toExponential(1);
  return value.toFixed(size >= 100 ? 0 : 2);
}

function formatSeconds(seconds) {
  const whole = Math.round(seconds || 0);
  return whole < 60 ? `${whole} s` : `${Math.floor(whole / 60)} min ${whole % 60} s`;
}

function showNotice(text, from = "action") {
  view.noticeFrom = from;
  $("notice").textContent = text;
  $("notice").hidden = false;
}

function hideNotice() {
  $("notice").hidden = true;
}

function applyHostContext(context) {
  if (context && context.theme) document.documentElement.dataset.theme = context.theme;
  if (view.runId && view.lastResults) showResults(view.lastResults);
}

// ---- Controls -----------------------------------------------------------------------------

$("stop").addEventListener("click", async () => {
  if (!view.runId) return;
  $("stop").disabled = true;
  $("stop").textContent = "Stopping…";
  try {
    const stopped = await callTool("rl_stop_training", { run_id: view.runId });
    showStatus(stopped.status);
    view.finalDone = false;
    startPolling();
  } catch (error) {
    showNotice(`The run was not stopped: ${error.message}`);
    $("stop").disabled = TERMINAL.has(view.status);
  } finally {
    $("stop").textContent = "Stop run";
  }
});

$("log-component").addEventListener("change", async () => {
  if (!view.runId) return;
  try {
    showLog(await callTool("rl_get_logs", { run_id: view.runId, component: $("log-component").value, lines: LOG_LINES }));
  } catch (error) {
    showNotice(error.message);
  }
});

// ---- Start-up -----------------------------------------------------------------------------

new ResizeObserver(() => {
  notify("ui/notifications/size-changed", { height: document.documentElement.scrollHeight });
}).observe(document.body);

(async () => {
  try {
    const init = await request("ui/initialize", {
      appInfo: { name: "hermes-rl-dashboard", version: "1" },
      appCapabilities: {},
      protocolVersion: APPS_PROTOCOL,
    });
    applyHostContext(init && init.hostContext);
    notify("ui/notifications/initialized");
  } catch (error) {
    showNotice(`The host did not start the dashboard: ${error.message}`);
  }
})();
