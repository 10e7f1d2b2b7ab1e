// memkit's page: plain JS over the same API (GET /search, /topics/NAME, /pending, /recent; POST /edit, /forget).
// Every text from the vault is set with textContent, never as HTML.
"use strict";
const $ = (id) => document.getElementById(id);
let token = sessionStorage.getItem("memkit-token") || "";

async function api(method, path, body) {
  const headers = {};
  if (token) headers["Authorization"] = "Bearer " + token;
  if (method !== "GET") headers["Content-Type"] = "application/json";
  const resp = await fetch(path, {method, headers, body: method === "GET" ? undefined : JSON.stringify(body || {})});
  const data = await resp.json();
  if (resp.status === 401) { $("token-form").hidden = false; throw new Error("this server needs its token"); }
  if (!resp.ok) throw new Error(data.error || resp.statusText);
  return data;
}

function say(text) { $("status").textContent = text; }

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

function entryItem(entry, refresh) {
  const li = el("li");
  li.dataset.id = entry.id;
  const text = el("span", "text", entry.text);
  li.append(text);
  const meta = el("span", "meta", entry.topic + " · " + entry.id + " ");
  if (entry.confident !== undefined) {
    meta.append(el("span", "flag " + (entry.confident ? "confident" : "weak"), entry.confident ? "confident" : "weak"));
  }
  const edit = el("button", "edit", "edit");
  const forget = el("button", "forget", "forget");
  edit.onclick = () => {
    const area = el("textarea");
    area.value = entry.text;
    const save = el("button", "save", "save");
    save.onclick = async () => {
      try {
        await api("POST", "/edit", {id: entry.id, text: area.value});
        await refresh();
        say("edited " + entry.id);
      } catch (e) { say(e.message); }
    };
    text.replaceWith(area);
    edit.replaceWith(save);
  };
  forget.onclick = async () => {
    try {
      await api("POST", "/forget", {id: entry.id});
      await refresh();
      say("forgot " + entry.id + " (kept in archive.md)");
    } catch (e) { say(e.message); }
  };
  meta.append(" ", edit, " ", forget);
  li.append(meta);
  return li;
}

async function search() {
  const q = $("q").value.trim();
  if (!q) return;
  try {
    const data = await api("GET", "/search?k=10&q=" + encodeURIComponent(q));
    const list = $("hits");
    list.replaceChildren(...data.hits.map((h) => entryItem(h, search)));
    say(data.hits.length ? data.hits.length + " memories" : "no memories match");
    await sidebar();
  } catch (e) { say(e.message); }
}

async function showTopic(name) {
  try {
    const data = await api("GET", "/topics/" + encodeURIComponent(name));
    $("topic-box").hidden = false;
    $("topic-title").textContent = data.title || data.name;
    $("topic-entries").replaceChildren(...data.entries.map((e) => entryItem(e, () => showTopic(name))));
    await sidebar();
  } catch (e) { say(e.message); }
}

async function sidebar() {
  const [due, recent] = await Promise.all([api("GET", "/pending"), api("GET", "/recent")]);
  $("due").replaceChildren(...due.pending.map((f) => el("li", "", f.text.includes("(due ") ? f.text : f.text + " (due " + f.due + ")")));
  if (!due.pending.length) $("due").replaceChildren(el("li", "muted", "nothing due"));
  $("recent").replaceChildren(...recent.recent.map((r) => {
    const li = el("li");
    const a = el("a", "topic", r.topic);
    a.onclick = () => showTopic(r.topic);
    li.append(a);
    if (r.summary) li.append(el("span", "muted", " — " + r.summary));
    return li;
  }));
}

async function start() {
  try {
    const health = await api("GET", "/health");
    $("vault").textContent = health.vault;
    await sidebar();
    say("ready");
  } catch (e) { say(e.message); }
}

$("search-form").onsubmit = (ev) => { ev.preventDefault(); search(); };
$("token-form").onsubmit = (ev) => {
  ev.preventDefault();
  token = $("token").value;
  sessionStorage.setItem("memkit-token", token);
  $("token-form").hidden = true;
  start();
};
start();
