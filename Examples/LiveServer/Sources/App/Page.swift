/// The settings page: a form generated from the domain's published schema (`GET /settings/schema`) — an
/// input that fits each key's type (a number with its range, a select of its choices, a checkbox for a
/// Boolean, a password field for a secret, JSON for a structure), its summary and what it accepts — saved
/// with `PUT /settings/{key}`, where the library checks it; a refused value shows the message and changes
/// nothing. Several edited fields are saved together with "Save all changes" (`PUT /settings`, one
/// transaction). It follows `GET /events`, so a value written by another process (`defaults write …` in a
/// shell) appears at once, highlighted; each event carries every setting from one version, and the page shows
/// all of a change at once, never part of it. Nothing here names a key.
enum Page {
    static func html(domain: String) -> String {
        """
        <!DOCTYPE html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <title>LiveServer settings</title>
        <style>
          body { font: 15px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 58rem; color: #1d1d1f; }
          h1 { font-size: 1.4rem; margin-bottom: .2rem; }
          p.sub { color: #666; margin-top: 0; }
          code { background: #f2f2f4; padding: .1rem .3rem; border-radius: 4px; }
          table { width: 100%; border-collapse: collapse; margin-top: 1rem; }
          td { padding: .55rem .4rem; border-bottom: 1px solid #e4e4e8; vertical-align: top; }
          td.key { width: 17rem; }
          td.key b { display: block; }
          .summary { color: #555; font-size: .85rem; }
          .accepted { color: #888; font-size: .8rem; margin-top: .2rem; }
          .source { color: #2a5d8a; font-size: .8rem; margin-top: .2rem; }
          form { display: flex; gap: .5rem; align-items: center; margin: 0; }
          input[type=text], input[type=number], input[type=password], select, textarea {
            font: inherit; padding: .25rem .4rem; width: 18rem; }
          textarea { font: 13px ui-monospace, monospace; height: 3.2rem; }
          .secret { color: #888; font-family: ui-monospace, monospace; }
          .message { color: #b00020; font-size: .85rem; min-height: 1rem; }
          .refused { color: #8a5a00; font-size: .85rem; }
          .invalid { outline: 2px solid #b00020; }
          tr.flash td { animation: flash 2.5s ease-out; }
          @keyframes flash { from { background: #ffe58a; } to { background: transparent; } }
          #status { margin-top: 1rem; color: #666; }
          #save-all-row { margin-top: .8rem; display: flex; gap: .8rem; align-items: center; }
          #log { margin-top: 1rem; font: 13px ui-monospace, monospace; color: #444; white-space: pre-wrap; }
        </style>
        </head>
        <body>
        <h1>LiveServer settings</h1>
        <p class="sub">Domain <code>\(domain)</code>, generated from its published schema. Change a value here,
        or from a shell: <code>defaults write \(domain) Greeting "Hi from the shell"</code></p>
        <table id="settings"><tbody></tbody></table>
        <div id="save-all-row"><button id="save-all" disabled>Save all changes</button>
          <span class="message" id="message-all"></span></div>
        <div id="status">connecting…</div>
        <div id="log"></div>
        <h2>Last refused version</h2>
        <p class="sub">A version that breaks the server's rule across settings (an open server serves at most
        10,000 requests a minute) is refused whole: the server keeps the settings it ran, and after a restart runs
        the last version its change log holds that the rule accepts.</p>
        <p id="refusal">none</p>
        <h2>Temporary changes</h2>
        <p class="sub">Settings a <code>defaults write --for 30m</code> holds for a while: at the time shown each
        returns to the value it had before (unless changed again meanwhile).</p>
        <table id="temporary"><tbody></tbody></table>
        <h2>Recent changes</h2>
        <p class="sub">From the domain's change log: this page, the <code>defaults</code> command, the fleet
        agent, and edits no LiveDefaults writer made (<code>external</code>).</p>
        <table id="changes"><tbody></tbody></table>
        <script>
        const keys = {};
        const values = {};
        // Fields edited here and not saved yet (saved together by "Save all changes").
        const edited = new Set();
        // What the page showed after each event: every setting, as one version (tests read it).
        const shownVersions = [];
        window.shownVersions = shownVersions;
        function markEdited(name) {
          edited.add(name);
          document.getElementById("save-all").disabled = false;
        }
        function clearEdited(name) {
          edited.delete(name);
          document.getElementById("save-all").disabled = edited.size === 0;
        }
        function escape(text) {
          return String(text).replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
        }
        const element = (kind, name) => document.getElementById(`${kind}-${name}`);
        // The input that fits a key: chosen by its schema alone.
        function input(key) {
          const id = `field-${escape(key.name)}`;
          const bound = (name, value) => value === undefined ? "" : ` ${name}="${escape(value)}"`;
          if (key.secret) return `<input type="password" id="${id}" autocomplete="new-password" placeholder="new value">`;
          if (key.choices) {
            return `<select id="${id}">` + key.choices.map((choice, index) =>
              `<option value="${index}">${escape(typeof choice === "string" ? choice : JSON.stringify(choice))}</option>`).join("") + `</select>`;
          }
          switch (key.type) {
            case "boolean": return `<input type="checkbox" id="${id}">`;
            case "integer": return `<input type="number" step="1" id="${id}"${bound("min", key.minimum)}${bound("max", key.maximum)}>`;
            case "real": return `<input type="number" step="any" id="${id}"${bound("min", key.minimum)}${bound("max", key.maximum)}>`;
            case "date": return `<input type="text" id="${id}" placeholder="2026-01-31T09:00:00Z">`;
            case "data": return `<input type="text" id="${id}" placeholder="base64">`;
            case "string": return `<input type="text" id="${id}">`;
            default: return `<textarea id="${id}" spellcheck="false" placeholder="JSON"></textarea>`;
          }
        }
        function addRow(key) {
          keys[key.name] = key;
          const row = document.createElement("tr");
          row.id = `row-${key.name}`;
          row.innerHTML = `<td class="key"><b>${escape(key.name)}</b><div class="summary">${escape(key.summary || "")}</div></td>
            <td><form id="form-${escape(key.name)}" novalidate>${input(key)}<button type="submit" id="save-${escape(key.name)}">Save</button>
              ${key.secret ? `<span class="secret" id="shown-${escape(key.name)}">&lt;secret&gt;</span>` : ""}</form>
              <div class="message" id="message-${escape(key.name)}"></div>
              <div class="refused" id="refused-${escape(key.name)}"></div>
              <div class="source" id="source-${escape(key.name)}">from ${escape(key.source || "the default")}</div>
              <div class="accepted">${escape(key.accepted)}${key.default !== undefined && !key.secret ? `; default ${escape(JSON.stringify(key.default))}` : ""}</div></td>`;
          document.querySelector("#settings tbody").appendChild(row);
          element("form", key.name).addEventListener("submit", event => { event.preventDefault(); save(key.name); });
          if (key.type === "boolean" && !key.choices && !key.secret) element("field", key.name).addEventListener("change", () => save(key.name));
          else for (const kind of ["input", "change"]) element("field", key.name).addEventListener(kind, () => markEdited(key.name));
          showRefused(key.name, key.refused);
        }
        function show(name, value, flash) {
          const key = keys[name];
          if (!key) return;
          values[name] = value;
          clearEdited(name);
          const field = element("field", name);
          field.classList.remove("invalid");
          element("message", name).textContent = "";
          if (key.secret) field.value = "";
          else if (key.choices) field.value = String(key.choices.findIndex(choice => JSON.stringify(choice) === JSON.stringify(value)));
          else if (key.type === "boolean") field.checked = value === true;
          else if (["integer", "real", "date", "data", "string"].includes(key.type)) field.value = value === null ? "" : String(value);
          else field.value = JSON.stringify(value);
          if (flash) { const row = element("row", name); row.classList.remove("flash"); void row.offsetWidth; row.classList.add("flash"); }
          refreshSources();
        }
        // Where each value comes from (the settings file, an environment variable that pins it, the default),
        // asked again after a change: a write may move a key from its default to the file.
        // One request at a time; a change during one asks once more after it.
        let sourcesPending = false, sourcesAgain = false;
        async function refreshSources() {
          if (sourcesPending) { sourcesAgain = true; return; }
          sourcesPending = true;
          try {
            const response = await fetch("/settings/sources");
            const sources = await response.json();
            for (const [name, source] of Object.entries(sources)) {
              const line = document.getElementById(`source-${name}`);
              if (line) line.textContent = `from ${source}`;
            }
          } catch (error) {
            // The next change asks again.
          } finally {
            sourcesPending = false;
            if (sourcesAgain) { sourcesAgain = false; refreshSources(); }
          }
        }
        function showRefused(name, text) {
          element("refused", name).textContent = text ? `The stored value is refused, so the server keeps its last valid one: ${text}` : "";
        }
        // The field's value as JSON, or an exception with a message for the person.
        function read(name) {
          const key = keys[name];
          const field = element("field", name);
          if (key.secret) return field.value;
          if (key.choices) return key.choices[Number(field.value)];
          switch (key.type) {
            case "boolean": return field.checked;
            case "integer": case "real":
              if (field.value.trim() === "" || !isFinite(Number(field.value))) throw new Error(`${name} needs a number`);
              return Number(field.value);
            case "date": case "data": case "string": return field.value;
            default:
              try { return JSON.parse(field.value); } catch (error) { throw new Error(`${name} needs JSON: ${error.message}`); }
          }
        }
        async function save(name) {
          const field = element("field", name);
          const message = element("message", name);
          let value;
          try { value = read(name); } catch (error) { message.textContent = error.message; field.classList.add("invalid"); return; }
          const response = await fetch(`/settings/${encodeURIComponent(name)}`, {
            method: "PUT", headers: { "Content-Type": "application/json" }, body: JSON.stringify(value) });
          const answer = await response.json();
          if (response.ok) {
            show(name, answer[name], false);
            message.textContent = "";
          } else {
            message.textContent = answer.error;
            field.classList.add("invalid");
          }
        }
        // Every edited field in one request: stored together (one transaction) or not at all.
        async function saveAll() {
          const settings = {};
          const message = document.getElementById("message-all");
          for (const name of edited) {
            try { settings[name] = read(name); } catch (error) {
              element("message", name).textContent = error.message;
              element("field", name).classList.add("invalid");
              message.textContent = "nothing saved: fix the fields marked above";
              return;
            }
          }
          const response = await fetch("/settings", {
            method: "PUT", headers: { "Content-Type": "application/json" }, body: JSON.stringify(settings) });
          const answer = await response.json();
          if (response.ok) {
            for (const name of Object.keys(answer)) show(name, answer[name], false);
            message.textContent = "";
          } else {
            message.textContent = `nothing saved: ${answer.error}`;
          }
        }
        function log(line) {
          const view = document.getElementById("log");
          view.textContent = `${new Date().toLocaleTimeString()}  ${line}\\n` + view.textContent;
        }
        async function loadChanges() {
          const changes = await (await fetch("/changes?limit=20")).json();
          const text = value => value === null ? "(absent)" : JSON.stringify(value);
          document.querySelector("#changes tbody").innerHTML = changes.map(change =>
            `<tr><td>${escape(change.time)}</td><td>${escape(change.key)}</td>
             <td>${escape(text(change.old))} → ${escape(text(change.new))}</td>
             <td>${escape(change.origin)}${change.who ? ": " + escape(change.who) : ""}</td>
             <td>${change.reason ? escape(change.reason) : ""}</td></tr>`).join("");
        }
        async function loadTemporary() {
          const pending = await (await fetch("/temporary")).json();
          const text = value => value === null ? "(absent)" : JSON.stringify(value);
          const rows = Array.isArray(pending) ? pending.flatMap(change => Object.entries(change.keys).map(([key, v]) =>
            `<tr><td>${escape(key)}</td><td>${escape(text(v.now))} until ${escape(change.expires)},
             then ${escape(text(v.returnsTo))}</td><td>${change.reason ? escape(change.reason) : ""}</td></tr>`))
            : [`<tr><td>${escape(pending.error)}</td></tr>`];
          document.querySelector("#temporary tbody").innerHTML = rows.length ? rows.join("") : "<tr><td>none</td></tr>";
        }
        async function loadRefusal() {
          const refusal = await (await fetch("/refusal")).json();
          if (refusal === null) { document.getElementById("refusal").textContent = "none"; return; }
          const running = refusal.fallback === "changeLog" ? `running version ${refusal.running} from the log: `
            : refusal.fallback === "defaults" ? "running the defaults (no version of the file is accepted): " : "";
          document.getElementById("refusal").textContent = refusal.reason === undefined
            ? `${running}the file's version cannot be read`
            : `${running}the file's version ${refusal.version} is refused because ${refusal.reason} (${refusal.time})`;
        }
        async function start() {
          const schema = await (await fetch("/settings/schema")).json();
          for (const key of schema.keys) addRow(key);
          document.getElementById("save-all").addEventListener("click", saveAll);
          loadChanges();
          loadTemporary();
          loadRefusal();
          // A refused version changes no setting, so no event tells of it: the page asks.
          setInterval(loadRefusal, 2000);
          const events = new EventSource("/events");
          events.addEventListener("settings", event => {
            const all = JSON.parse(event.data);
            for (const name of Object.keys(all)) show(name, all[name], false);
            shownVersions.push({ ...values });
            document.getElementById("status").textContent = "live: changes from anywhere appear here at once";
          });
          events.addEventListener("change", event => {
            const change = JSON.parse(event.data);
            // The whole version the change belongs to, shown in one go: the keys changed with it too.
            const all = change.values || { [change.key]: change.value };
            for (const name of Object.keys(all)) {
              if (JSON.stringify(values[name]) !== JSON.stringify(all[name])) show(name, all[name], true);
            }
            showRefused(change.key, change.refused);
            shownVersions.push({ ...values });
            log(`${change.key} = ${JSON.stringify(change.value)}  (${change.origin === "external" ? "another process" : "this page or the server"})`);
            loadChanges();
            loadTemporary();
          });
          events.onerror = () => { document.getElementById("status").textContent = "reconnecting…"; };
        }
        start();
        </script>
        </body>
        </html>
        """
    }
}
