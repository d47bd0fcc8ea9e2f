// A minimal MCP Apps host for the browser test. It does what a chat host does when a model calls
// a tool whose _meta.ui names a ui:// resource: call the tool, read the resource, show it in a
// sandboxed iframe, connect the extension's own AppBridge to it, hand it the tool's input and
// result, and proxy the view's tool calls to the server (the harness holds the MCP client).
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";

const APP_MIME_TYPE = "text/html;profile=mcp-app";
// What a host applies when a resource declares no domains: inline code, nothing from anywhere.
const SANDBOX_CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; font-src data:; connect-src 'none'; frame-src 'none'; base-uri 'none'; form-action 'none'";

async function rpc(method, params) {
  const response = await fetch("/rpc", { method: "POST", body: JSON.stringify({ method, params }) });
  const answer = await response.json();
  if (answer.error) throw new Error(answer.error);
  return answer.result;
}

let current = null;

// Called by the test: run one tool as the model would, and show its UI.
window.showTool = async (name, args) => {
  const { tools } = await rpc("tools/list", {});
  const tool = tools.find((t) => t.name === name);
  const uri = tool && tool._meta && tool._meta.ui && tool._meta.ui.resourceUri;
  if (!uri) throw new Error(`${name} declares no UI resource`);
  const result = await rpc("tools/call", { name, arguments: args });
  const { contents } = await rpc("resources/read", { uri });
  const page = contents.find((c) => c.uri === uri);
  if (!page || page.mimeType !== APP_MIME_TYPE) throw new Error(`${uri} is not served as ${APP_MIME_TYPE}`);

  if (current) {
    await current.bridge.teardownResource({});
    current.iframe.remove();
  }
  const iframe = document.createElement("iframe");
  iframe.setAttribute("sandbox", "allow-scripts"); // no same-origin: the view cannot reach the host page
  iframe.title = "run dashboard";
  document.getElementById("frame-box").append(iframe);

  const bridge = new AppBridge(
    null,
    { name: "hermes-rl-test-host", version: "1.0.0" },
    { serverTools: {}, logging: {} },
    { hostContext: { theme: "light", displayMode: "inline", platform: "web" } },
  );
  bridge.oncalltool = async (params) => {
    if (params.name === "rl_stop_training" && !window.confirm(`The dashboard asks to stop run ${params.arguments.run_id}. Allow?`)) {
      throw new Error("the user did not allow the stop");
    }
    return rpc("tools/call", params);
  };
  bridge.onsizechange = ({ height }) => { if (height) iframe.style.height = `${Math.min(height, 900)}px`; };
  const initialized = new Promise((resolve) => { bridge.oninitialized = resolve; });
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  const csp = `<meta http-equiv="Content-Security-Policy" content="${SANDBOX_CSP}">`;
  iframe.srcdoc = page.text.replace(/<head>/i, `<head>${csp}`);
  await initialized;
  await bridge.sendToolInput({ arguments: args });
  await bridge.sendToolResult(result);
  current = { bridge, iframe };
  return result.structuredContent;
};
window.hostReady = true;
