// The playground's script: asks the router's REST API and shows the answers.
// Every string from the router (tool names, descriptions, schemas, upstream errors) comes from
// upstreams and is untrusted: it is only ever set as textContent, never parsed as HTML.
"use strict";

(() => {
  const TOKEN_KEY = "mcp-router.token";
  const FORMATS = [
    ["mcp", "MCP"],
    ["openai", "OpenAI"],
    ["anthropic", "Anthropic"],
  ];
  const byId = (id) => document.getElementById(id);

  class ApiError extends Error {
    constructor(status, detail) {
      super(detail);
      this.status = status;
    }
  }

  // --- the token: this tab only, sent to this router only --------------------------------

  function storedToken() {
    return sessionStorage.getItem(TOKEN_KEY) || "";
  }

  function showTokenState() {
    byId("token-state").textContent = storedToken()
      ? "A token is set for this tab (sessionStorage); it is sent as Authorization: Bearer."
      : "No token set. Kept in this tab only (sessionStorage) once set.";
  }

  // --- the REST API --------------------------------------------------------------------

  function detailOf(payload) {
    if (!payload || payload.detail === undefined) return "";
    if (typeof payload.detail === "string") return payload.detail;
    if (Array.isArray(payload.detail)) {
      return payload.detail.map((item) => String(item.msg ?? JSON.stringify(item))).join("; ");
    }
    return JSON.stringify(payload.detail);
  }

  // `path` is relative, so the page also works behind a proxy that serves it under a prefix.
  async function api(path, body, { acceptStatus = [] } = {}) {
    const headers = { Accept: "application/json" };
    const token = storedToken();
    if (token) headers.Authorization = `Bearer ${token}`;
    const init = { headers, cache: "no-store", credentials: "omit" };
    if (body !== undefined) {
      init.method = "POST";
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let response;
    try {
      response = await fetch(path, init);
    } catch (error) {
      throw new ApiError(0, `cannot reach the router (${error.message})`);
    }
    let payload = null;
    try {
      payload = await response.json();
    } catch {
      payload = null;
    }
    if (!response.ok && !(acceptStatus.includes(response.status) && payload)) {
      throw new ApiError(response.status, detailOf(payload) || response.statusText);
    }
    return payload;
  }

  function explain(error, what) {
    const detail = error.message;
    switch (error.status) {
      case 0:
        return `${what}: ${detail}.`;
      case 401:
        return storedToken()
          ? `The router did not accept the token (401): ${what} was refused. ` +
              "Check the token under Access and try again."
          : `This router requires a bearer token (401): ${what} was refused. ` +
              "Enter the token it was started with (ROUTER_TOKEN or --token) under Access, " +
              "then try again.";
      case 403:
        return `Refused (403): ${detail}.`;
      case 503:
        return `The router is still starting (503): ${detail}.`;
      case 422:
        return `The query was not accepted (422): ${detail}.`;
      default:
        return `${what} failed (${error.status}): ${detail}.`;
    }
  }

  function showMessage(text, kind = "error") {
    const message = byId("message");
    message.textContent = text;
    message.className = kind;
    message.hidden = false;
  }

  function clearMessage() {
    const message = byId("message");
    message.textContent = "";
    message.hidden = true;
  }

  // --- rendering (textContent only) ----------------------------------------------------

  function cell(text, className) {
    const td = document.createElement("td");
    td.textContent = text;
    if (className) td.className = className;
    return td;
  }

  const score = (value) => (value === null || value === undefined ? "–" : value.toFixed(4));
  const count = (value) => value.toLocaleString("en-US");

  function toolCell(result) {
    const td = document.createElement("td");
    td.className = "name";
    const name = document.createElement("code");
    name.textContent = result.name;
    td.append(name);
    for (const [flag, label] of [
      [result.exact_match, "named in the query"],
      [result.pinned, "pinned"],
    ]) {
      if (!flag) continue;
      const badge = document.createElement("span");
      badge.className = "badge";
      badge.textContent = label;
      td.append(" ", badge);
    }
    return td;
  }

  function schemaCell(definition) {
    const td = document.createElement("td");
    td.className = "definition";
    const description = document.createElement("p");
    description.className = "description";
    description.textContent = definition.description || "(no description)";
    const details = document.createElement("details");
    details.className = "schema";
    const summary = document.createElement("summary");
    summary.textContent = "input schema";
    const schema = document.createElement("pre");
    schema.textContent = JSON.stringify(definition.inputSchema ?? null, null, 2);
    details.append(summary, schema);
    td.append(description, details);
    return td;
  }

  function renderResults(answer) {
    const rows = answer.results.map((result, index) => {
      const row = document.createElement("tr");
      row.className = "tool";
      row.dataset.name = result.name;
      row.append(
        cell(result.rank === null ? "pin" : String(result.rank), "rank"),
        toolCell(result),
        cell(result.server, "server"),
        cell(score(result.score), "num score"),
        cell(score(result.bm25_score), "num bm25"),
        cell(score(result.dense_score), "num dense"),
        cell(count(result.tokens), "num tokens"),
        schemaCell(answer.tools[index] ?? {}),
      );
      return row;
    });
    byId("results").tBodies[0].replaceChildren(...rows);
    const limit = answer.k === null ? `a budget of ${count(answer.budget)} tokens` : `k ${answer.k}`;
    let summary =
      `${answer.results.length} of ${count(answer.catalog_tools)} tools for “${answer.query}”, ` +
      `ranked by ${answer.mode}, ${limit}.`;
    if (answer.pending.length) summary += ` Still indexing: ${answer.pending.join(", ")}.`;
    byId("results-summary").textContent = summary;
  }

  function renderTokens(answers) {
    const rows = answers.map((answer, index) => {
      const [format, label] = FORMATS[index];
      const { routed, full, saved_percent: percent } = answer.tokens;
      const row = document.createElement("tr");
      row.dataset.format = format;
      row.append(
        cell(label, "format"),
        cell(count(routed), "num routed"),
        cell(count(full), "num full"),
        cell(count(full - routed), "num saved"),
        cell(`${percent.toFixed(1)}%`, "num percent"),
      );
      return row;
    });
    byId("tokens").tBodies[0].replaceChildren(...rows);
    byId("tokens-note").textContent =
      `Counted with ${answers[0].tokens.encoding}: an estimate, each model's own tokenizer ` +
      "differs a little. The routed list is what a host sends instead of every tool.";
  }

  function renderHealth(health, catalog) {
    const rows = catalog.upstreams.map((upstream) => {
      const row = document.createElement("tr");
      row.dataset.upstream = upstream.name;
      const server = [upstream.server_name, upstream.server_version].filter(Boolean).join(" ");
      let error = upstream.last_error || "";
      if (upstream.retry_in !== null) error += ` (retry in ${upstream.retry_in.toFixed(0)} s)`;
      row.append(
        cell(upstream.name, "name"),
        cell(upstream.state, `state state-${upstream.state}`),
        cell(upstream.transport, "transport"),
        cell(count(upstream.tool_count), "num tools"),
        cell(upstream.indexed ? "yes" : "no", "indexed"),
        cell(server || "–", "server"),
        cell(error || "–", "error"),
      );
      return row;
    });
    byId("health").tBodies[0].replaceChildren(...rows);
    byId("health-summary").textContent =
      `${health.status}: ${count(health.tools)} tools, ${health.healthy_upstreams} of ` +
      `${health.upstreams} upstreams healthy, ${health.sessions} MCP sessions open.`;
  }

  // --- actions -------------------------------------------------------------------------

  async function loadHealth() {
    try {
      const [health, catalog] = await Promise.all([
        api("healthz", undefined, { acceptStatus: [503] }), // 503 "starting" has a body
        api("v1/tools?format=mcp&limit=1"), // for the upstreams, which every page has
      ]);
      renderHealth(health, catalog);
      return true;
    } catch (error) {
      byId("health").tBodies[0].replaceChildren();
      byId("health-summary").textContent = "Upstream health unknown.";
      showMessage(explain(error, "reading upstream health"));
      return false;
    }
  }

  async function route() {
    const query = byId("query").value;
    if (!query.trim()) {
      showMessage("Type a task first.", "info");
      return;
    }
    const k = byId("k").value ? Number(byId("k").value) : null;
    const button = byId("route");
    button.disabled = true;
    byId("results-section").setAttribute("aria-busy", "true");
    try {
      const answers = await Promise.all(
        FORMATS.map(([format]) => api("v1/route", k ? { query, format, k } : { query, format })),
      );
      clearMessage();
      renderResults(answers[0]);
      renderTokens(answers);
      byId("results-section").hidden = false;
    } catch (error) {
      byId("results-section").hidden = true;
      byId("results").tBodies[0].replaceChildren();
      byId("tokens").tBodies[0].replaceChildren();
      showMessage(explain(error, "routing the query"));
    } finally {
      button.disabled = false;
      byId("results-section").removeAttribute("aria-busy");
    }
  }

  async function useToken(value) {
    const token = value.trim();
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    else sessionStorage.removeItem(TOKEN_KEY);
    byId("token").value = token;
    showTokenState();
    clearMessage();
    const healthy = await loadHealth();
    if (healthy && byId("query").value.trim()) await route();
  }

  document.addEventListener("DOMContentLoaded", () => {
    byId("token").value = storedToken();
    showTokenState();
    byId("token-form").addEventListener("submit", (event) => {
      event.preventDefault();
      useToken(byId("token").value);
    });
    byId("forget-token").addEventListener("click", () => useToken(""));
    byId("query-form").addEventListener("submit", (event) => {
      event.preventDefault();
      route();
    });
    byId("refresh-health").addEventListener("click", () => {
      clearMessage();
      loadHealth();
    });
    loadHealth();
  });
})();
