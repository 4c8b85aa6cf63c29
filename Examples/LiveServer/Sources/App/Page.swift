/// The settings page: shows every setting, edits it with `PUT /settings/{key}`, and follows `GET /events`,
/// so a value written by another process (`defaults write …` in a shell) appears at once, highlighted.
enum Page {
    static func html(domain: String) -> String {
        """
        <!DOCTYPE html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <title>LiveServer settings</title>
        <style>
          body { font: 15px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 46rem; color: #1d1d1f; }
          h1 { font-size: 1.4rem; margin-bottom: .2rem; }
          p.sub { color: #666; margin-top: 0; }
          code { background: #f2f2f4; padding: .1rem .3rem; border-radius: 4px; }
          table { width: 100%; border-collapse: collapse; margin-top: 1rem; }
          td { padding: .55rem .4rem; border-bottom: 1px solid #e4e4e8; vertical-align: middle; }
          td.key { font-weight: 600; width: 9rem; }
          td.type { color: #888; font-size: .8rem; width: 12rem; }
          input[type=text], input[type=number], select { font: inherit; padding: .25rem .4rem; width: 16rem; }
          tr.flash td { animation: flash 2.5s ease-out; }
          @keyframes flash { from { background: #ffe58a; } to { background: transparent; } }
          #status { margin-top: 1rem; color: #666; }
          #error { color: #b00020; min-height: 1.2rem; }
          #log { margin-top: 1rem; font: 13px ui-monospace, monospace; color: #444; white-space: pre-wrap; }
        </style>
        </head>
        <body>
        <h1>LiveServer settings</h1>
        <p class="sub">Domain <code>\(domain)</code>. Change a value here, or from a shell:
        <code>defaults write \(domain) Greeting "Hi from the shell"</code></p>
        <table id="settings"><tbody></tbody></table>
        <div id="error"></div>
        <div id="status">connecting…</div>
        <div id="log"></div>
        <script>
        const types = {};
        const rows = {};
        function input(key, value) {
          const type = types[key] || "";
          if (key === "Maintenance") return `<input type="checkbox" id="${key}" ${value ? "checked" : ""}>`;
          if (key === "RateLimit") return `<input type="number" id="${key}" value="${value}">`;
          if (key === "LogLevel") {
            return `<select id="${key}">` + type.split("|").map(l => `<option ${l === value ? "selected" : ""}>${l}</option>`).join("") + `</select>`;
          }
          if (key === "Features") {
            return `<label><input type="checkbox" id="Features.search" ${value.search ? "checked" : ""}> search</label>
                    <input type="text" id="Features.banner" placeholder="banner" value="${escape(value.banner || "")}">`;
          }
          return `<input type="text" id="${key}" value="${escape(value)}">`;
        }
        function escape(text) { return String(text).replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;"); }
        function render(key, value, flash) {
          let row = rows[key];
          if (!row) {
            row = document.createElement("tr");
            document.querySelector("#settings tbody").appendChild(row);
            rows[key] = row;
          }
          row.innerHTML = `<td class="key">${key}</td><td>${input(key, value)}</td><td class="type">${types[key] || ""}</td>`;
          row.dataset.value = JSON.stringify(value);
          for (const element of row.querySelectorAll("input, select")) element.addEventListener("change", () => save(key));
          if (flash) { row.classList.remove("flash"); void row.offsetWidth; row.classList.add("flash"); }
        }
        function read(key) {
          if (key === "Maintenance") return document.getElementById(key).checked;
          if (key === "RateLimit") return Number(document.getElementById(key).value);
          if (key === "Features") {
            const banner = document.getElementById("Features.banner").value;
            return { search: document.getElementById("Features.search").checked, banner: banner === "" ? null : banner };
          }
          return document.getElementById(key).value;
        }
        async function save(key) {
          const response = await fetch(`/settings/${key}`, { method: "PUT", headers: { "Content-Type": "application/json" }, body: JSON.stringify(read(key)) });
          const answer = await response.json();
          document.getElementById("error").textContent = response.ok ? "" : `${key}: ${answer.error}`;
          if (!response.ok) render(key, JSON.parse(rows[key].dataset.value), false);
        }
        function log(line) {
          const element = document.getElementById("log");
          element.textContent = `${new Date().toLocaleTimeString()}  ${line}\\n` + element.textContent;
        }
        async function start() {
          Object.assign(types, await (await fetch("/settings/types")).json());
          const events = new EventSource("/events");
          events.addEventListener("settings", event => {
            const all = JSON.parse(event.data);
            for (const key of Object.keys(all).sort()) render(key, all[key], false);
            document.getElementById("status").textContent = "live: changes from anywhere appear here at once";
          });
          events.addEventListener("change", event => {
            const change = JSON.parse(event.data);
            render(change.key, change.value, true);
            log(`${change.key} = ${JSON.stringify(change.value)}  (${change.origin === "external" ? "another process" : "this page or the server"})`);
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
