// A client on the official TypeScript SDK (@modelcontextprotocol/sdk) that
// exercises `toolgate serve`. Usage:
//   node sdk_client.mjs SDK_DIR stdio ROOT AUDIT TOOLGATE_BIN
//   node sdk_client.mjs SDK_DIR http URL ROOT
// SDK_DIR is the installed package's folder. Prints one JSON object.
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const [sdkDir, mode, ...rest] = process.argv.slice(2);
const load = (p) => import(pathToFileURL(join(sdkDir, "dist", "esm", p)).href);
const { Client } = await load("client/index.js");

let transport, root;
if (mode === "stdio") {
  const { StdioClientTransport } = await load("client/stdio.js");
  const [r, audit, bin] = rest;
  root = r;
  transport = new StdioClientTransport({ command: bin, args: ["serve", "--root", root, "--audit", audit] });
} else {
  const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");
  const [url, r] = rest;
  root = r;
  transport = new StreamableHTTPClientTransport(new URL(url));
}
const client = new Client({ name: "ts-sdk-probe", version: "1.0.0" });
await client.connect(transport);
const out = {};
out.tools = (await client.listTools()).tools.map((t) => t.name);
const ok = await client.callTool({ name: "read_file", arguments: { path: "a.txt" } });
out.ok = { isError: ok.isError ?? false, text: ok.content[0].text };
const denied = await client.callTool({ name: "read_file", arguments: { path: "/etc/passwd" } });
out.denied = { isError: denied.isError, type: denied.structuredContent?.type, text: denied.content[0].text };
try {
  await client.callTool({ name: "no_such_tool", arguments: {} });
  out.unknown = "no error";
} catch (e) {
  out.unknown = { code: e.code, message: String(e.message) };
}
const res = await client.readResource({ uri: "file://" + root + "/a.txt" });
out.resource = res.contents[0].text;
out.prompts = (await client.listPrompts()).prompts.map((p) => p.name);
const review = await client.getPrompt({ name: "code_review", arguments: { language: "JavaScript", code: "let x = 1" } });
out.review = review.messages[0].content.text.includes("let x = 1");
await client.close();
console.log(JSON.stringify(out));
