// Keep the overview live: poll /api/status and redraw the counters, platforms and chats.
// Ask before a form that pops or forgets is sent (its data-confirm says what it does).
// On the settings page send only the keys changed; on the personas page redraw the
// preview of the chat picked, from /api/chats/{chat}/prompt.
// No framework and no inline script (the CSP forbids it); text goes in as textContent,
// in the words the page hands over (data-words on <body>, in bot.language).
"use strict";

const POLL_MS = 1500;
const WORDS = JSON.parse(document.body.dataset.words || "{}");

function say(name, fields = {}) {
  const template = WORDS[name] || name;
  return template.replace(/\{(\w+)\}/g, (whole, key) => (key in fields ? String(fields[key]) : whole));
}

function chatUrl(chat) {
  return "/chats/" + encodeURIComponent(chat).replace(/%3A/g, ":");
}

// Times as the server renders them: in the bot's zone, "YYYY-MM-DD HH:MM:SS" (Sweden's form).
const ZONE = document.querySelector('meta[name="time-zone"]')?.content || undefined;
const TIME_FORMAT = new Intl.DateTimeFormat("sv-SE", {
  timeZone: ZONE, year: "numeric", month: "2-digit", day: "2-digit",
  hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false,
});

function localTime(iso) {
  return iso ? TIME_FORMAT.format(new Date(iso)) : "—";
}

function cell(row, content) {
  const td = document.createElement("td");
  if (content instanceof Node) td.appendChild(content); else td.textContent = content;
  row.appendChild(td);
}

// A chat is named by its title first (a group's title, a private chatter's name), its key second.
function chatName(c) {
  const named = document.createDocumentFragment();
  const link = document.createElement("a");
  link.href = chatUrl(c.chat);
  link.textContent = c.name || c.chat;
  named.append(link);
  if (c.name) {
    const key = document.createElement("span");
    key.className = "key";
    key.textContent = c.chat;
    named.append(" ", key);
  }
  return named;
}

function drawChats(chats) {
  const body = document.querySelector("#chats tbody");
  const rows = chats.map((c) => {
    const row = document.createElement("tr");
    row.dataset.chat = c.chat;
    cell(row, chatName(c));
    const phase = document.createElement("span");
    phase.className = "phase " + c.phase;
    phase.textContent = say("phase_" + c.phase);
    cell(row, phase);
    cell(row, String(c.message_count));
    cell(row, localTime(c.last_message_at));
    return row;
  });
  if (rows.length === 0) {
    const row = document.createElement("tr");
    row.className = "empty";
    const td = document.createElement("td");
    td.colSpan = 4;
    td.textContent = say("no_chat_yet");
    row.appendChild(td);
    rows.push(row);
  }
  body.replaceChildren(...rows);
}

function drawPlatforms(platforms) {
  const items = platforms.map((p) => {
    const li = document.createElement("li");
    const state = p.connected === true ? "up" : p.connected === false ? "down" : "unknown";
    li.className = state;
    li.textContent = `${p.name}: ${say("platform_" + state)}`;
    return li;
  });
  document.getElementById("platforms").replaceChildren(...items);
}

async function poll() {
  const live = document.getElementById("live");
  try {
    const response = await fetch("/api/status", { credentials: "same-origin", cache: "no-store" });
    if (response.status === 401) {
      live.textContent = say("live_logged_out");
      return;
    }
    const status = await response.json();
    for (const field of ["waiting_messages", "queued_replies", "llm_errors_last_hour"]) {
      document.querySelector(`[data-field="${field}"]`).textContent = String(status[field]);
    }
    for (const cell of document.querySelectorAll("[data-sent]")) {
      cell.textContent = String(status.sent_today[cell.dataset.sent] || 0);
    }
    const bot = status.llm_today.bot;
    document.querySelector('[data-llm="total_tokens"]').textContent = bot.total_tokens.toLocaleString("en-US");
    // Without prices the page says so in its own words; a cost is redrawn only when there is one.
    if (bot.priced) document.querySelector('[data-llm="cost_text"]').textContent = bot.cost_text;
    document.getElementById("hard-cap").hidden = !status.llm_today.hard_cap_reached;
    drawPlatforms(status.platforms);
    drawChats(status.chats);
    live.textContent = say("live_at", { time: localTime(new Date().toISOString()) });
  } catch (error) {
    live.textContent = say("live_unreachable");
  }
  setTimeout(poll, POLL_MS);
}

// Pop, forget, forget-this-person, the switch and a reset say what they will do and wait
// for a yes: a form by its own data-confirm, or the button that sent it by its.
for (const form of document.querySelectorAll("form")) {
  form.addEventListener("submit", (event) => {
    const asked = event.submitter?.dataset.confirm ?? form.dataset.confirm;
    if (asked && !window.confirm(asked)) event.preventDefault();
  });
}

// A key's inputs hold what the file gives it (data-initial): those left as they were are
// not sent, so a Save posts only what changed (a switch is a hidden "false" and a checkbox
// "true" under one name; the server compares again, for a browser without script).
function sendOnlyChanged(form) {
  for (const field of form.querySelectorAll("[data-initial]:not([type=hidden])")) {
    const value = field.type === "checkbox" ? String(field.checked) : field.value;
    if (value !== field.dataset.initial) continue;
    for (const named of form.querySelectorAll(`[name="${CSS.escape(field.name)}"]`)) {
      named.disabled = true;
    }
  }
}

const settingsForm = document.getElementById("settings-form");
if (settingsForm) {
  settingsForm.addEventListener("submit", (event) => {
    if (!event.defaultPrevented) sendOnlyChanged(settingsForm);
  });
  window.addEventListener("pageshow", () => {  // back to a page the browser kept
    for (const field of settingsForm.querySelectorAll("[data-initial]")) field.disabled = false;
  });
}

// The personas page redraws the preview of the chat picked from the API, without a
// reload; without script (or when the API fails) the form asks the server for the page.
async function drawPreview(chat) {
  const key = document.getElementById("preview-key");
  if (key === null) return false;
  const response = await fetch("/api" + chatUrl(chat) + "/prompt", { credentials: "same-origin", cache: "no-store" });
  if (!response.ok) return false;
  const shown = await response.json();
  key.textContent = shown.chat;
  document.getElementById("preview-profile").textContent = shown.profile || say("profile_base");
  document.getElementById("preview-tokens").textContent = say("preview_tokens", { tokens: shown.tokens });
  document.getElementById("preview-prompt").textContent = shown.prompt;
  for (const kept of document.querySelectorAll('.persona-form input[name="chat"]')) kept.value = shown.chat;
  history.replaceState(null, "", "/personas?" + new URLSearchParams({ chat: shown.chat }));
  return true;
}

const previewPick = document.getElementById("preview-chat");
if (previewPick) {
  previewPick.addEventListener("change", async () => {
    document.getElementById("preview-typed").value = "";
    if (!(await drawPreview(previewPick.value))) document.getElementById("preview-form").submit();
  });
}

if (document.body.dataset.page === "overview") {
  setTimeout(poll, POLL_MS);
}
