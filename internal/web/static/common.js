// What the web approver's two pages share (base64url, the status line, a
// JSON POST), loaded before each page's own script. Served from the binary,
// never inline.
"use strict";

function b64url(buf) {
  const bytes = new Uint8Array(buf);
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function unb64url(s) {
  const bin = atob(s.replace(/-/g, "+").replace(/_/g, "/"));
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

function say(text) {
  document.getElementById("status").textContent = text;
}

// post sends body as JSON to path, with the extra headers, and returns
// the answer's JSON; it throws the refusal's error.
async function post(path, body, headers) {
  const r = await fetch(path, {
    method: "POST",
    headers: { "Content-Type": "application/json", ...(headers || {}) },
    body: JSON.stringify(body),
    credentials: "omit",
  });
  const j = await r.json().catch(() => ({ error: "bad answer (" + r.status + ")" }));
  if (!r.ok) throw new Error(j.error || "refused (" + r.status + ")");
  return j;
}
