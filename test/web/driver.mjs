// driver.mjs: a browser the Go tests in this directory drive, one JSON
// command per line on stdin, one JSON answer per line on stdout. It runs
// Debian's chromium (AGENT_SUDO_TEST_CHROMIUM) through playwright-core,
// each page with the DevTools WebAuthn virtual authenticator (a CTAP2
// platform authenticator with resident keys and user verification, the
// user always verified) unless it is opened with "bare": a browser
// without any passkey.
import { chromium } from "playwright-core";
import readline from "node:readline";

const exe = process.env.AGENT_SUDO_TEST_CHROMIUM || "/usr/bin/chromium";
const browser = await chromium.launch({ executablePath: exe, headless: true, args: ["--no-sandbox"] });
const pages = new Map(); // name -> { page, captured: Map(path -> body) }
const dialogs = [];

async function newPage(name, bare) {
  const context = await browser.newContext();
  const page = await context.newPage();
  page.setDefaultTimeout(30000);
  // An alert would mean the agent's script ran.
  page.on("dialog", (d) => { dialogs.push(d.message()); d.dismiss(); });
  const entry = { page, captured: new Map(), hold: new Map() };
  if (!bare) {
    const cdp = await context.newCDPSession(page);
    await cdp.send("WebAuthn.enable");
    const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
      options: {
        protocol: "ctap2", transport: "internal", hasResidentKey: true,
        hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true,
      },
    });
    entry.authenticator = { cdp, authenticatorId };
  }
  pages.set(name, entry);
  return entry;
}

async function run(cmd) {
  const p = pages.get(cmd.page || "main") || (cmd.op === "new" ? null : await newPage(cmd.page || "main", false));
  switch (cmd.op) {
    case "new":
      await newPage(cmd.page, !!cmd.bare);
      return {};
    case "goto":
      await p.page.goto(cmd.url);
      await p.page.waitForSelector("body[data-ready='1']");
      return { url: p.page.url() };
    case "click":
      await p.page.click(cmd.selector);
      return {};
    case "hold": {
      // The deliberate gesture: wait until the button is enabled, press,
      // wait until it says it is armed, release.
      // The page updates its list in place, never while a button is
      // held; a press lost all the same is tried again, at most 5 times.
      const sel = cmd.selector;
      for (let i = 0; ; i++) {
        await p.page.waitForSelector(sel + "[data-ready='1']:not([disabled])");
        await p.page.locator(sel).scrollIntoViewIfNeeded();
        const box = await p.page.locator(sel).boundingBox();
        await p.page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
        await p.page.mouse.down();
        try {
          await p.page.waitForSelector(sel + "[data-armed='1']", { timeout: 10000 });
        } catch (e) {
          await p.page.mouse.up();
          if (i < 4) continue;
          throw e;
        }
        await p.page.mouse.up();
        return {};
      }
    }
    case "tap": {
      // A plain click on a button that wants to be held: it must not act.
      await p.page.waitForSelector(cmd.selector + "[data-ready='1']:not([disabled])");
      await p.page.click(cmd.selector);
      return {};
    }
    case "wait":
      await p.page.waitForSelector(cmd.selector, { state: cmd.state || "visible" });
      return {};
    case "waitText":
      await p.page.waitForFunction(
        ([sel, text]) => { const e = document.querySelector(sel); return e && e.textContent.includes(text); },
        [cmd.selector, cmd.text]);
      return { text: await p.page.textContent(cmd.selector) };
    case "text":
      return { text: await p.page.textContent(cmd.selector) };
    case "html":
      return { html: await p.page.content() };
    case "count":
      return { count: await p.page.locator(cmd.selector).count() };
    case "capture": {
      // Record the body of the next POST to path; with abort, it never
      // reaches the server (a signed decision kept for later).
      await p.page.route("**" + cmd.path, async (route) => {
        p.captured.set(cmd.path, route.request().postData());
        if (cmd.abort) await route.abort(); else await route.continue();
      });
      return {};
    }
    case "uncapture":
      await p.page.unroute("**" + cmd.path);
      return {};
    case "captured":
      return { body: p.captured.get(cmd.path) || null };
    case "post": {
      // POST body to path from the page, as its script would.
      const r = await p.page.evaluate(async ([path, body]) => {
        // With the page's session, as its script sends it (none when
        // the page is not signed in).
        // eslint-disable-next-line no-undef
        const tok = typeof sessionToken === "string" ? sessionToken : "";
        const headers = { "Content-Type": "application/json" };
        if (tok) headers["Agent-Sudo-Session"] = tok;
        const r = await fetch(path, { method: "POST", headers: headers, body: body });
        return { status: r.status, text: await r.text() };
      }, [cmd.path, cmd.body]);
      return r;
    }
    case "credentials": {
      // The passkeys the page's virtual authenticator holds: each one's
      // credentialId (standard base64) and rpId.
      if (!p.authenticator) throw new Error("page " + (cmd.page || "main") + " has no authenticator");
      const { cdp, authenticatorId } = p.authenticator;
      const { credentials } = await cdp.send("WebAuthn.getCredentials", { authenticatorId });
      return { credentials: credentials.map((c) => ({ credentialId: c.credentialId, rpId: c.rpId })) };
    }
    case "viewport":
      // The page's size in CSS pixels (a phone: 390×844).
      await p.page.setViewportSize({ width: cmd.width, height: cmd.height });
      return {};
    case "screenshot":
      // A PNG of the element at selector, or of the viewport, at path.
      if (cmd.selector) await p.page.locator(cmd.selector).screenshot({ path: cmd.path });
      else await p.page.screenshot({ path: cmd.path });
      return {};
    case "dialogs":
      return { dialogs };
    case "storage":
      // What this page's origin keeps in localStorage or sessionStorage
      // under key, and every key of both.
      return await p.page.evaluate((k) => ({
        value: localStorage.getItem(k) ?? sessionStorage.getItem(k),
        keys: [...Object.keys(localStorage), ...Object.keys(sessionStorage)],
      }), cmd.key);
    case "watch":
      // Watch the button at selector (enabled now): from here on, note it
      // if it is disabled or leaves the page, and count the changes of the
      // list's version (body[data-version]). A reload ends the watch.
      await p.page.evaluate((sel) => {
        const button = document.querySelector(sel);
        const w = { broken: !button || button.disabled, why: button ? "" : "no such button", versions: 0 };
        window.agentSudoWatch = w;
        let v = document.body.dataset.version;
        new MutationObserver(() => {
          if (document.body.dataset.version !== v) {
            v = document.body.dataset.version;
            w.versions++;
          }
          if (w.broken) return;
          if (!button.isConnected) {
            w.broken = true;
            w.why = "the button left the page after " + w.versions + " changes of the list";
          } else if (button.disabled) {
            w.broken = true;
            w.why = "the button was disabled after " + w.versions + " changes of the list";
          }
        }).observe(document.body, { subtree: true, childList: true, attributes: true });
      }, cmd.selector);
      return {};
    case "rects":
      // Where each element matching each of selectors is, as the page
      // lays it out now (getBoundingClientRect, viewport coordinates),
      // with its text, its line height and whether it is visible; and the
      // viewport's size and the page's scroll.
      return await p.page.evaluate((sels) => {
        const out = { vw: window.innerWidth, vh: window.innerHeight, scrollY: window.scrollY, rects: {} };
        for (const sel of sels) {
          out.rects[sel] = [...document.querySelectorAll(sel)].map((e) => {
            const r = e.getBoundingClientRect();
            return {
              top: r.top, bottom: r.bottom, left: r.left, right: r.right, height: r.height,
              text: e.textContent, lineHeight: parseFloat(getComputedStyle(e).lineHeight) || 0,
              // checkVisibility sees a closed <details>' content as hidden.
              visible: e.checkVisibility(),
            };
          });
        }
        return out;
      }, cmd.selectors);
    case "watched":
      return await p.page.evaluate(() =>
        window.agentSudoWatch ? { installed: true, ...window.agentSudoWatch } : { installed: false });
    default:
      throw new Error("unknown op " + cmd.op);
  }
}

const rl = readline.createInterface({ input: process.stdin });
for await (const line of rl) {
  let out;
  try {
    out = { ok: true, ...(await run(JSON.parse(line))) };
  } catch (e) {
    out = { ok: false, error: String(e && e.message || e) };
  }
  process.stdout.write(JSON.stringify(out) + "\n");
}
await browser.close();
