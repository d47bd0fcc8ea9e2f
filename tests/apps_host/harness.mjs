// The browser test's harness: the real server over stdio (TypeScript SDK client), a host page
// on 127.0.0.1 that uses the MCP Apps host bridge, and headless Chromium driven by Playwright.
// It follows one short run to completion on the dashboard, then stops a second run with the
// dashboard's button, and prints what it saw as one JSON line; the Python test judges it.
//
// Environment: APPS_HOST_MODULES (node_modules with the pinned packages), HERMES_RL_SERVER
// (the console script), HERMES_RL_HOME, CHROMIUM, BROWSER_PROFILE (a fresh directory),
// SCREENSHOT (where the PNG goes), ENVIRONMENT and FIRST_RUN_STEPS.
import http from "node:http";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(process.env.APPS_HOST_MODULES, "resolve-from-here.js"));
const { Client } = require("@modelcontextprotocol/client");
const { StdioClientTransport } = require("@modelcontextprotocol/client/stdio");
const { chromium } = require("playwright-core");
const esbuild = require("esbuild");

const APPS = "io.modelcontextprotocol/ui";
const FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync"];
const report = { blocked: [], console_errors: [], dialogs: [], statuses_seen: [] };
const cleanups = [];

async function main() {
  const client = new Client({ name: "hermes-rl-apps-test-host", version: "1.0.0" }, {
    capabilities: { extensions: { [APPS]: { mimeTypes: ["text/html;profile=mcp-app"] } } },
  });
  const transport = new StdioClientTransport({
    command: process.env.HERMES_RL_SERVER, args: [], stderr: "inherit",
    env: { HERMES_RL_HOME: process.env.HERMES_RL_HOME, PATH: process.env.PATH, HERMES_RL_TEST_MARKER: process.env.HERMES_RL_TEST_MARKER },
  });
  await client.connect(transport);
  cleanups.push(() => client.close());
  report.server_pid = transport.pid;
  report.protocol_version = client.getNegotiatedProtocolVersion();
  report.server_extensions = client.getServerCapabilities().extensions || {};

  const call = async (name, args) => {
    const result = await client.callTool({ name, arguments: args });
    if (result.isError || result.structuredContent?.refused) throw new Error(`${name}: ${JSON.stringify(result.content)}`);
    return result.structuredContent;
  };
  await call("rl_select_environment", { name: process.env.ENVIRONMENT });
  const steps = Number(process.env.FIRST_RUN_STEPS);
  for (const [field, value] of [["env.total_steps", steps], ["env.steps_per_eval", Math.max(1, steps / 4)], ["env.use_wandb", false]]) {
    await call("rl_edit_config", { field, value });
  }

  const bundle = await esbuild.build({
    entryPoints: [path.join(here, "host.js")], bundle: true, format: "esm", platform: "browser",
    write: false, logLevel: "silent", nodePaths: [process.env.APPS_HOST_MODULES],
  });
  const hostScript = bundle.outputFiles[0].text;
  const hostPage = (await import("node:fs")).readFileSync(path.join(here, "host.html"), "utf8");
  const server = http.createServer(async (request, response) => {
    if (request.method === "GET" && request.url === "/") return send(response, 200, "text/html", hostPage);
    if (request.method === "GET" && request.url === "/host.js") return send(response, 200, "text/javascript", hostScript);
    if (request.method === "POST" && request.url === "/rpc") {
      let body = "";
      for await (const chunk of request) body += chunk;
      const { method, params } = JSON.parse(body);
      try {
        const result = method === "tools/list" ? await client.listTools(params)
          : method === "tools/call" ? await client.callTool(params)
          : method === "resources/read" ? await client.readResource(params)
          : null;
        if (result === null) return send(response, 200, "application/json", JSON.stringify({ error: `the test host does not proxy ${method}` }));
        return send(response, 200, "application/json", JSON.stringify({ result }));
      } catch (error) {
        return send(response, 200, "application/json", JSON.stringify({ error: String(error.message || error) }));
      }
    }
    send(response, 404, "text/plain", "not found");
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(() => new Promise((resolve) => server.close(resolve)));
  const origin = `http://127.0.0.1:${server.address().port}`;

  const context = await chromium.launchPersistentContext(process.env.BROWSER_PROFILE, {
    executablePath: process.env.CHROMIUM, headless: true, args: FLAGS,
    viewport: { width: 930, height: 640 }, deviceScaleFactor: 1, offline: false,
  });
  cleanups.push(() => context.close());
  // Only the host page's own origin is reachable: anything else the dashboard asked for is recorded.
  await context.route("**/*", (route) => {
    const url = route.request().url();
    if (url.startsWith(origin + "/")) return route.continue();
    report.blocked.push(url);
    return route.abort();
  });
  const page = context.pages()[0] || await context.newPage();
  page.on("console", (message) => { if (message.type() === "error") report.console_errors.push(message.text()); });
  page.on("pageerror", (error) => report.console_errors.push(String(error)));
  // The user declines the first stop the host asks about and allows the next.
  page.on("dialog", (dialog) => {
    report.dialogs.push(dialog.message());
    return report.dialogs.length === 1 ? dialog.dismiss() : dialog.accept();
  });
  await page.goto(origin + "/");
  await page.waitForFunction(() => window.hostReady === true);

  // First run: started by the host as if the model had called rl_start_training.
  const first = await page.evaluate(() => window.showTool("rl_start_training", {}));
  report.first_run = first.run_id;
  const view = page.frameLocator("iframe");
  await followStatus(view, "completed", 240_000);
  // The last polling round fills in the final checkpoint; then the picture is complete.
  await view.locator("#checkpoints td", { hasText: "final" }).first().waitFor({ timeout: 20_000 });
  report.first = await view.locator("main").evaluate((main) => ({
    status: main.querySelector("#status").textContent,
    environment: main.querySelector("#environment").textContent,
    progress: main.querySelector("#progress-text").textContent,
    curves: Object.fromEntries([...main.querySelectorAll("polyline.curve")].map((line) => [line.dataset.metric, Number(line.dataset.points)])),
    best_marked: main.querySelectorAll("#score-chart .best").length,
    components: [...main.querySelectorAll("#components tr")].map((row) => row.textContent),
    checkpoints: main.querySelectorAll("#checkpoints tr").length,
    log: main.querySelector("#log").textContent.slice(-400),
    stop_disabled: main.querySelector("#stop").disabled,
  }));
  await page.waitForTimeout(300); // let the size change settle before the picture
  await page.locator("#frame-box").screenshot({ path: process.env.SCREENSHOT });

  // Second run: long enough to be running when the dashboard's stop button is pressed.
  await call("rl_edit_config", { field: "env.total_steps", value: 5000 });
  const second = await page.evaluate(() => window.showTool("rl_start_training", {}));
  report.second_run = second.run_id;
  await followStatus(view, "running", 120_000);
  await view.locator("#components td", { hasText: "running" }).first().waitFor({ timeout: 30_000 });
  report.second_running = await call("rl_check_status", { run_id: second.run_id });
  await view.locator("#stop").click();
  await view.locator("#notice", { hasText: "was not stopped" }).waitFor({ timeout: 10_000 });
  report.declined_notice = await view.locator("#notice").textContent();
  report.after_decline = (await call("rl_check_status", { run_id: second.run_id })).status;
  await page.waitForTimeout(2_000); // a polling round or more: the notice stays
  report.declined_notice_later = await view.locator("#notice:not([hidden])").textContent({ timeout: 1_000 });
  await view.locator("#stop:not([disabled])").click();
  await followStatus(view, "stopped", 60_000);
  report.second_status_shown = await view.locator("#status").textContent();
  report.second_after_stop = await call("rl_check_status", { run_id: second.run_id });
}

async function followStatus(view, wanted, timeout) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const shown = (await view.locator("#status").textContent({ timeout: 5_000 })).trim();
    if (report.statuses_seen.at(-1) !== shown) report.statuses_seen.push(shown);
    if (shown === wanted) return;
    if (["completed", "failed", "stopped"].includes(shown) && shown !== wanted) {
      throw new Error(`the dashboard shows ${shown}, not ${wanted}: ${await view.locator("#notice").textContent()}`);
    }
    if (Date.now() > deadline) throw new Error(`the dashboard still shows ${shown} after ${timeout} ms, not ${wanted}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

function send(response, code, type, body) {
  response.writeHead(code, { "content-type": `${type}; charset=utf-8`, "cache-control": "no-store" });
  response.end(body);
}

let failed = false;
try {
  await main();
} catch (error) {
  failed = true;
  report.error = String(error.stack || error);
} finally {
  for (const cleanup of cleanups.reverse()) {
    try { await cleanup(); } catch (error) { report.console_errors.push(`cleanup: ${error}`); }
  }
  process.stdout.write(JSON.stringify(report) + "\n");
  process.exit(failed ? 1 : 0);
}
