// The approval inbox page: cards for pending items, answers posted to the JSON API, live over SSE.
// Every piece of server text is inserted as text (textContent, text nodes), never as HTML.
// No cookie: the address's token (in its fragment, never sent to a server) is taken out of the
// address bar and history, exchanged for a session kept in sessionStorage (this origin, this
// tab), and the session goes as a header on every request, the event stream's included.
"use strict";

(() => {
  const KIND = { sampling: "Sampling request", result: "Sampling result", form: "Form", url: "Link to open", done: "Link to finish" };
  const pendingBox = document.getElementById("pending");
  const historyBox = document.getElementById("history");
  const emptyNote = document.getElementById("empty");
  const connection = document.getElementById("connection");
  const cards = new Map();
  const historyIds = new Set();
  // A notification's link, items/ID, opens the page at that item: the inbox's own root is above it.
  const ITEM_PATH = location.pathname.match(/^(.*\/)items\/([A-Za-z0-9_-]+)$/);
  const ROOT = ITEM_PATH ? ITEM_PATH[1] : location.pathname.replace(/[^/]*$/, "");
  const FOCUS = ITEM_PATH ? ITEM_PATH[2] : null;
  const STORED = `host_receiver_inbox:${ROOT}`;
  const SESSION_HEADER = "X-Inbox-Session";
  const RECONNECT_MS = 3000;
  const RECONNECT_MAX_MS = 60000;
  const FOLD_CHARS = 400;
  const FOLD_LINES = 8;
  let session = null;
  let linkToken = null;
  let csrf = null;
  let closed = false;

  // el("p", {className: "x"}, "text", child): an element; strings become text nodes.
  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    Object.assign(node, props || {});
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return node;
  }

  // The server's name (and title); on a fleet's inbox, the host that received the request too.
  function serverName(item) {
    const name = !item.serverTitle || item.serverTitle === item.server ? item.server : `${item.serverTitle} (${item.server})`;
    return item.host ? `${name} on ${item.host}` : name;
  }

  function headingText(item) {
    return `${serverName(item)} · ${KIND[item.kind] || item.kind}`;
  }

  function clock(iso) {
    return new Date(iso).toLocaleTimeString();
  }

  function taskLabel(item) {
    if (!item.taskId) return "no task";
    return "task " + (item.taskId.length > 8 ? item.taskId.slice(0, 8) + "…" : item.taskId);
  }

  function row(list, name, ...values) {
    list.append(el("dt", {}, name), el("dd", {}, ...values));
  }

  // A long text is folded on a narrow screen (inbox.css), behind a button that shows all of it.
  function textBlock(text) {
    const node = el("div", { className: "text" }, text);
    if (text.length <= FOLD_CHARS && text.split("\n").length <= FOLD_LINES) return node;
    node.classList.add("folded");
    const more = button("Show all", () => { node.classList.remove("folded"); more.remove(); }, "show-all");
    return el("div", { className: "fold" }, node, more);
  }

  function block(content) {
    if (content.type === "image") {
      return el("img", { className: "media", src: `data:${content.mimeType};base64,${content.data}`, alt: "image from the server" });
    }
    if (content.type === "audio") {
      return el("audio", { controls: true, src: `data:${content.mimeType};base64,${content.data}` });
    }
    if (content.type === "tool_use") {
      return el("div", { className: "text" }, `[calls tool ${content.name} with ${content.input}]`);
    }
    if (content.type === "tool_result") {
      return el("div", { className: "text" }, `[result of tool call ${content.toolUseId}: ${content.text}]`);
    }
    return textBlock(content.text);
  }

  function button(name, onClick, className) {
    const node = el("button", { type: "button", className: className || "" }, name);
    node.addEventListener("click", onClick);
    return node;
  }

  function problemLine(id) {
    return el("p", { className: "problem", id, hidden: true, role: "alert" });
  }

  // --- answering --------------------------------------------------------------------

  async function answer(item, body, view) {
    view.status.textContent = "Sending…";
    for (const node of view.problems.values()) node.hidden = true;
    let response;
    try {
      response = await fetch(`${ROOT}api/items/${encodeURIComponent(item.id)}/answer`, {
        method: "POST",
        credentials: "omit",
        headers: { "Content-Type": "application/json", [SESSION_HEADER]: session, "X-CSRF-Token": csrf || "" },
        body: JSON.stringify(body),
      });
    } catch (error) {
      view.status.textContent = "Could not reach the host; try again.";
      return;
    }
    const reply = await response.json().catch(() => ({}));
    if (response.ok) {
      resolved(reply.item);
    } else if (response.status === 409) {
      view.status.textContent = "Already answered elsewhere.";
      if (reply.item) resolved(reply.item);
    } else if (response.status === 422) {
      view.status.textContent = "Please correct the marked fields.";
      for (const [name, text] of Object.entries(reply.problems || {})) {
        const node = view.problems.get(name) || view.problems.get("*");
        node.textContent = `${view.labels.get(name) || name} ${text}`;
        node.hidden = false;
      }
    } else {
      view.status.textContent = reply.error || `The host answered ${response.status}.`;
    }
  }

  // --- the cards ----------------------------------------------------------------------

  function card(item) {
    const status = el("p", { className: "status", role: "status" });
    const view = { status, problems: new Map([["*", problemLine(`p-${item.id}`)]]), labels: new Map() };
    const heading = el("h3", {}, headingText(item));
    const meta = el("p", { className: "meta" }, `${taskLabel(item)} · arrived ${clock(item.created)}`,
      item.expires ? ` · answer by ${clock(item.expires)}` : "");
    const article = el("article", { className: `card ${item.kind}` }, heading, meta);
    article.dataset.id = item.id;
    const parts = { sampling: samplingCard, result: resultCard, form: formCard, url: urlCard, done: doneCard }[item.kind];
    if (parts) article.append(...parts(item, view));
    // in the answer bar, so that what became of an answer shows where it was given
    (article.querySelector(".buttons") || article).append(view.problems.get("*"), status);
    return article;
  }

  function samplingCard(item, view) {
    const request = item.request;
    const facts = el("dl");
    const why = ["chosen by this host for this server"];
    if (request.modelHints.length) why.push(`the server prefers ${request.modelHints.join(", ")}`);
    why.push(`allowed: ${request.allowedModels.join(", ") || "none"}`);
    row(facts, "Model", el("strong", {}, request.model), ` (${why.join("; ")})`);
    let limit = String(request.maxTokens);
    if (request.requestedMaxTokens && request.requestedMaxTokens > request.maxTokens) {
      limit += ` (the server asked for ${request.requestedMaxTokens}; lowered to this host's limit)`;
    }
    row(facts, "Max tokens", limit);
    if (request.temperature !== null) row(facts, "Temperature", String(request.temperature));
    if (request.stopSequences.length) row(facts, "Stop sequences", request.stopSequences.join(" · "));
    if (request.includeContext && request.includeContext !== "none") {
      row(facts, "Context", `asks to include ${request.includeContext} (not provided by this host)`);
    }
    row(facts, "System prompt", request.systemPrompt === null ? "(none)" : textBlock(request.systemPrompt));
    if (request.tools.length) {
      const tools = el("ul");
      for (const tool of request.tools) {
        tools.append(el("li", {}, el("code", {}, tool.name), tool.description ? ` — ${tool.description}` : ""));
      }
      row(facts, "Tools", tools, `tool choice: ${request.toolChoice || "auto"}`);
    } else {
      row(facts, "Tools", "none");
    }
    const messages = el("ol", { className: "messages" });
    for (const message of request.messages) {
      messages.append(el("li", { className: "message" }, el("span", { className: "label" }, message.role),
        ...message.content.map(block)));
    }
    row(facts, "Messages", messages);

    const editor = el("div", { className: "editor", hidden: true });
    const system = el("textarea", { id: `sys-${item.id}`, value: request.systemPrompt || "" });
    editor.append(el("label", { htmlFor: system.id }, "System prompt"), system);
    const texts = request.messages.map((message, index) => {
      if (!message.editable) return null;
      const area = el("textarea", { id: `msg-${item.id}-${index}`, value: message.content[0].text });
      editor.append(el("label", { htmlFor: area.id }, `Message ${index + 1} (${message.role})`), area);
      return area;
    });
    const maxTokens = el("input", { type: "number", id: `max-${item.id}`, min: 1, max: request.maxTokens, step: 1,
      value: String(request.maxTokens) });
    editor.append(el("label", { htmlFor: maxTokens.id }, `Max tokens (1–${request.maxTokens})`), maxTokens);
    for (const name of ["systemPrompt", "messages", "maxTokens"]) {
      const line = problemLine(`p-${item.id}-${name}`);
      view.problems.set(name, line);
      editor.append(line);
    }
    view.labels.set("maxTokens", "Max tokens").set("systemPrompt", "System prompt").set("messages", "Messages");

    const approve = (remember) => () => {
      const body = { action: "approve", remember };
      if (!editor.hidden) {
        const tokens = Number(maxTokens.value);
        body.edits = {
          systemPrompt: system.value,
          messages: texts.map((area) => (area ? area.value : null)),
          maxTokens: Number.isInteger(tokens) ? tokens : maxTokens.value,
        };
      }
      answer(item, body, view);
    };
    const buttons = el("div", { className: "buttons" },
      button("Approve once", approve("once"), "primary"),
      button("Approve for this session", approve("session")),
      button("Always approve this server", approve("always")),
      button("Edit", () => { editor.hidden = false; system.focus(); }),
      button("Refuse", () => answer(item, { action: "refuse" }, view), "danger"),
      button("Never", () => answer(item, { action: "never" }, view), "danger"));
    return [facts, editor, buttons];
  }

  function resultCard(item, view) {
    const request = item.request;
    const facts = el("dl");
    row(facts, "Model", request.model);
    row(facts, "Stop reason", request.stopReason || "(none)");
    row(facts, "Reply", ...request.content.map(block));
    const editor = el("div", { className: "editor", hidden: true });
    const text = el("textarea", { id: `text-${item.id}`, value: request.editable ? request.content[0].text : "" });
    editor.append(el("label", { htmlFor: text.id }, "Text"), text);
    const problem = problemLine(`p-${item.id}-text`);
    view.problems.set("text", problem);
    editor.append(problem);
    const edit = button("Edit the text", () => { editor.hidden = false; text.focus(); });
    if (!request.editable) {
      edit.disabled = true;
      edit.title = "Only a plain text reply can be edited";
    }
    const send = () => answer(item, editor.hidden ? { action: "send" } : { action: "send", text: text.value }, view);
    const buttons = el("div", { className: "buttons" }, button("Send", send, "primary"), edit,
      button("Refuse", () => answer(item, { action: "refuse" }, view), "danger"));
    return [facts, editor, buttons];
  }

  function formField(item, field, view, index) {
    // field.key is the server's raw property name: to answer with, never shown (nor in an id).
    const id = `f-${item.id}-${index}`;
    const wrap = el("div", { className: "field" });
    const marker = field.required ? el("span", { className: "required", title: "required" }, " *") : null;
    const problem = problemLine(`${id}-problem`);
    view.problems.set(field.key, problem);
    view.labels.set(field.key, field.label);
    const description = field.description ? el("p", { className: "description", id: `${id}-description` }, field.description) : null;
    let read;
    if (field.type === "multi_enum") {
      const group = el("fieldset", { id }, el("legend", {}, field.label, marker));
      const chosen = new Set(field.value || []);
      const boxes = field.options.map((option, index) => {
        const box = el("input", { type: "checkbox", id: `${id}-${index}`, value: option.value, checked: chosen.has(option.value) });
        group.append(el("div", {}, box, el("label", { htmlFor: box.id, className: "option" }, option.label)));
        return box;
      });
      if (description) group.append(description);
      group.append(problem);
      wrap.append(group);
      read = () => {
        const values = boxes.filter((box) => box.checked).map((box) => box.value);
        return values.length || field.required ? values : undefined;
      };
      return { wrap, read };
    }
    let input;
    if (field.type === "boolean") {
      input = el("input", { type: "checkbox", id, checked: field.value === true });
      read = () => input.checked;
    } else if (field.type === "enum") {
      input = el("select", { id });
      if (field.value === null || field.value === undefined) input.append(el("option", { value: "" }, "—"));
      for (const option of field.options) {
        input.append(el("option", { value: option.value, selected: option.value === field.value }, option.label));
      }
      read = () => (input.value === "" ? undefined : input.value);
    } else if (field.type === "number" || field.type === "integer") {
      input = el("input", { type: "number", id, step: field.type === "integer" ? "1" : "any" });
      if (field.minimum !== null) input.min = String(field.minimum);
      if (field.maximum !== null) input.max = String(field.maximum);
      if (field.value !== null && field.value !== undefined) input.value = String(field.value);
      read = () => {
        if (input.value === "") return undefined;
        const number = Number(input.value);
        return Number.isFinite(number) ? number : input.value;
      };
    } else {
      const type = { email: "email", uri: "url", date: "date" }[field.format] || "text";
      input = el("input", { type, id, value: field.value === null || field.value === undefined ? "" : field.value });
      if (field.format === "date-time") input.placeholder = "YYYY-MM-DDTHH:MM:SS+00:00";
      read = () => (input.value === "" ? undefined : input.value);
    }
    input.required = field.required;
    input.setAttribute("aria-describedby", [description ? description.id : "", problem.id].join(" ").trim());
    const labelNode = el("label", { htmlFor: id }, field.label, marker);
    if (field.type === "boolean") wrap.append(input, " ", labelNode);
    else wrap.append(labelNode, input);
    if (description) wrap.append(description);
    wrap.append(problem);
    return { wrap, read };
  }

  function formCard(item, view) {
    const request = item.request;
    const message = textBlock(request.message);
    const form = el("form", { noValidate: true });
    const fields = request.fields.map((field, index) => [field.key, formField(item, field, view, index)]);
    for (const [, field] of fields) form.append(field.wrap);
    for (const [name, text] of Object.entries(request.problems || {})) {
      const node = view.problems.get(name);
      if (node) { node.textContent = `${view.labels.get(name)} ${text}`; node.hidden = false; }
    }
    const send = () => {
      const content = {};
      for (const [name, field] of fields) {
        const value = field.read();
        if (value !== undefined) content[name] = value;
      }
      answer(item, { action: "accept", content }, view);
    };
    form.addEventListener("submit", (event) => { event.preventDefault(); send(); });
    const buttons = el("div", { className: "buttons" }, button("Send", send, "primary"),
      button("Decline", () => answer(item, { action: "decline" }, view), "destructive"),
      button("Cancel", () => answer(item, { action: "cancel" }, view)));
    if (request.fields.length) {
      const note = el("p", { className: "meta" }, "Fields marked ", el("span", { className: "required" }, "*"), " are required.");
      return [message, form, note, buttons];
    }
    return [message, form, buttons];
  }

  function urlCard(item, view) {
    const request = item.request;
    const message = textBlock(request.message);
    const domain = el("p", {}, "This link leads to ", el("span", { className: "domain" }, request.domain || "(no host)"));
    const address = textBlock(request.url);
    const warnings = el("ul", { className: "warnings" });
    for (const warning of request.warnings) warnings.append(el("li", {}, `⚠ ${warning}`));
    const note = el("p", { className: "meta" }, "Nothing is opened unless you choose Open; it opens in a new tab.");
    let open;
    if (/^https?:\/\//i.test(request.url)) {
      open = el("a", { className: "button primary", href: request.url, target: "_blank", rel: "noopener noreferrer" }, "Open");
      open.setAttribute("role", "button");
      open.addEventListener("click", () => answer(item, { action: "accept" }, view));
    } else {
      open = el("button", { type: "button", disabled: true, title: "Not a web link" }, "Open");
    }
    const buttons = el("div", { className: "buttons" }, open,
      button("Decline", () => answer(item, { action: "decline" }, view), "destructive"));
    return [message, domain, address, warnings, note, buttons];
  }

  function doneCard(item, view) {
    const request = item.request;
    const message = textBlock(request.message);
    const what = el("p", {}, "The request waits until you have finished on ",
      el("span", { className: "domain" }, request.domain || "(no host)"),
      "; choose Done then and it is sent again (or Give up to end it).");
    const address = textBlock(request.url);
    const buttons = el("div", { className: "buttons" },
      button("Done", () => answer(item, { action: "done" }, view), "primary"),
      button("Give up", () => answer(item, { action: "cancel" }, view), "destructive"));
    return [message, what, address, buttons];
  }

  // --- the lists ------------------------------------------------------------------------

  function refreshEmpty() {
    emptyNote.hidden = cards.size > 0;
  }

  function added(item) {
    if (cards.has(item.id) || historyIds.has(item.id)) return;
    const node = card(item);
    cards.set(item.id, node);
    pendingBox.append(node);
    refreshEmpty();
  }

  // The audit line as a sentence: who ended the item, what it was, when, how; its id to find it in the log.
  function auditSentence(item) {
    const what = `the ${(KIND[item.kind] || item.kind).toLowerCase()} from ${serverName(item)} (${taskLabel(item)})`;
    const when = clock(item.answered);
    const who = item.person || { page: "Someone on the inbox page", api: "A program with the inbox's token" }[item.answeredBy];
    let sentence;
    if (who) sentence = `${who} answered ${what} at ${when}: ${item.outcome}.`;
    else if (item.answeredBy === "timeout") sentence = `Nobody answered ${what}; at ${when} it ended: ${item.outcome}.`;
    else if (item.answeredBy === "server") sentence = `The server withdrew ${what} at ${when}, before anyone answered.`;
    else sentence = `At ${when}, ${what} ended: ${item.outcome}.`;
    return `${sentence} Audit log: item ${item.id}.`;
  }

  function historyEntry(item) {
    const line = `${clock(item.answered)} · ${serverName(item)} · ${KIND[item.kind] || item.kind} (${taskLabel(item)}): ${item.outcome}`;
    const entry = el("li", {}, line, el("p", { className: "audit" }, auditSentence(item)));
    entry.dataset.id = item.id;
    return entry;
  }

  function resolved(item) {
    const node = cards.get(item.id);
    if (node) { node.remove(); cards.delete(item.id); }
    if (!historyIds.has(item.id)) {
      historyIds.add(item.id);
      historyBox.prepend(historyEntry(item));
    }
    refreshEmpty();
  }

  function snapshot(state) {
    const pending = new Set(state.pending.map((item) => item.id));
    for (const [id, node] of cards) {
      if (!pending.has(id)) { node.remove(); cards.delete(id); }
    }
    for (const item of state.pending) {  // a server's own title may have come since
      const node = cards.get(item.id);
      if (node) node.querySelector("h3").textContent = headingText(item);
    }
    historyBox.replaceChildren(...state.history.map(historyEntry));
    historyIds.clear();
    for (const item of state.history) historyIds.add(item.id);
    for (const item of state.pending) added(item);
    refreshEmpty();
    focusLinked();
  }

  // The page was opened at items/ID (a notification's link): show that item, once.
  let focused = false;
  function focusLinked() {
    if (!FOCUS || focused) return;
    focused = true;
    const node = cards.get(FOCUS) || historyBox.querySelector(`li[data-id="${CSS.escape(FOCUS)}"]`);
    if (!node) {
      connection.textContent = "The item of this link is no longer here.";
      return;
    }
    node.classList.add("linked");
    node.tabIndex = -1;
    node.scrollIntoView({ block: "start" });
    node.focus({ preventScroll: true });
  }

  // --- the session and the event stream ------------------------------------------------

  // The token of the address (#token=..., or ?token=... for the older address), taken out of the
  // address bar and the tab's history at once.
  // A signed link's token (#link=..., at items/ID) signs in for that one item instead.
  function takeToken() {
    const fragment = new URLSearchParams(location.hash.slice(1));
    const query = new URLSearchParams(location.search);
    const token = fragment.get("token") || query.get("token");
    linkToken = FOCUS ? fragment.get("link") : null;
    if (fragment.has("token") || query.has("token") || fragment.has("link")) {
      query.delete("token");
      const rest = query.toString();
      history.replaceState(null, "", location.pathname + (rest ? `?${rest}` : ""));
    }
    return token;
  }

  // A session: a new one for the address's token, else the one this tab kept; null when neither works.
  async function signIn() {
    const token = takeToken();
    if (linkToken) {
      const made = await fetch(`${ROOT}api/items/${encodeURIComponent(FOCUS)}/session`, {
        method: "POST", credentials: "omit", headers: { Authorization: `Link ${linkToken}` },
      });
      if (!made.ok) return false;
      ({ session, csrf } = await made.json());
      sessionStorage.setItem(STORED, session);
      return true;
    }
    if (token) {
      const made = await fetch(`${ROOT}api/session`, {
        method: "POST", credentials: "omit", headers: { Authorization: `Bearer ${token}` },
      });
      if (!made.ok) return false;
      ({ session, csrf } = await made.json());
      sessionStorage.setItem(STORED, session);
      return true;
    }
    session = sessionStorage.getItem(STORED);
    if (!session) return false;
    const known = await fetch(`${ROOT}api/session`, { credentials: "omit", headers: { [SESSION_HEADER]: session } });
    if (!known.ok) {
      sessionStorage.removeItem(STORED);
      return false;
    }
    csrf = (await known.json()).csrf;
    return true;
  }

  function signedOut() {
    connection.textContent = linkToken
      ? "This link no longer signs in: its request was answered, or its time is up."
      : "Not signed in: open the inbox's address with its token.";
  }

  // The host has stopped: nothing here can be answered any more, and nothing reconnects.
  function hostStopped() {
    closed = true;
    connection.textContent = "The host has stopped: this inbox is closed. Open the new address when it runs again.";
    for (const node of pendingBox.querySelectorAll("button")) node.disabled = true;
  }

  const HANDLERS = { snapshot, added, resolved, closed: hostStopped };

  // One server-sent event: "event: NAME" and "data: JSON" lines; comments (keep-alive) are skipped.
  function dispatch(block) {
    let name = "message";
    const data = [];
    for (const line of block.split("\n")) {
      const colon = line.indexOf(":");
      if (colon === 0) continue;
      const key = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (key === "event") name = value;
      else if (key === "data") data.push(value);
    }
    if (data.length && Object.hasOwn(HANDLERS, name)) HANDLERS[name](JSON.parse(data.join("\n")));
  }

  async function readEvents(body) {
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        dispatch(buffer.slice(0, end));
        buffer = buffer.slice(end + 2);
      }
    }
  }

  // The event stream, read with fetch (EventSource sends no header): reconnects after a pause
  // when it ends or fails, and gets a new snapshot; while the host does not answer, each pause
  // doubles (up to a minute) and the page says so; stops when the session is gone or the host
  // said it stopped.
  async function listen() {
    let failures = 0;
    let lastSeen = new Date();
    for (;;) {
      let response = null;
      try {
        response = await fetch(`${ROOT}api/events`, {
          credentials: "omit", headers: { [SESSION_HEADER]: session, Accept: "text/event-stream" },
        });
      } catch (error) {
        response = null;
      }
      if (response && response.status === 401) {
        sessionStorage.removeItem(STORED);
        signedOut();
        return;
      }
      let pause = RECONNECT_MS;
      if (response && response.ok && response.body) {
        failures = 0;
        connection.textContent = "Live";
        try {
          await readEvents(response.body);
        } catch (error) {
          // the connection dropped: reconnect below
        }
        if (closed) return;
        lastSeen = new Date();
        connection.textContent = "Reconnecting…";
      } else {
        failures += 1;
        pause = Math.min(RECONNECT_MS * 2 ** (failures - 1), RECONNECT_MAX_MS);
        connection.textContent = `The host has not answered since ${lastSeen.toLocaleTimeString()}: it may have stopped. ` +
          `Trying again in ${pause / 1000} s.`;
      }
      await new Promise((resume) => setTimeout(resume, pause));
    }
  }

  async function start() {
    if (await signIn()) listen();
    else signedOut();
  }

  start();
})();
