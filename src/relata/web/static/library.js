// The library's first page, live (docs/decisions/0048-library-editing-and-attachments.md):
// new items appear and rows change status without a reload. The table's data-live-rows names
// GET /w/{slug}/library/rows with the page's filters; its answer is the first page's rows,
// each with the HTML the server renders for the page itself (escaped as the page is), and
// whether any is still being processed. A row not on the page yet is put in where the answer
// has it; a row whose status changed is replaced (its checkbox kept as it was ticked). Each
// poll names the rows the page shows (shown=...): those the answer calls gone (deleted, or no
// longer matching the filters) are removed, and those pushed off the first page by newer ones
// stay, replaced when their status changes (others), up to MAX_SHOWN rows on the page.
//
// Bounded: every FAST_MS while a row is being processed, else every SLOW_MS; after
// MAX_IDLE_POLLS answers in a row that changed nothing it stops and says to reload. Nothing
// is asked while the page is hidden; showing it again asks at once and starts the count
// again. Without this script the page shows what it had when it was served.
"use strict";

(function () {
  const FAST_MS = 2000;
  const SLOW_MS = 10000;
  const MAX_IDLE_POLLS = 60; // ten minutes with nothing pending and nothing new
  const MAX_SHOWN = 100; // the server's bound on shown= (library.py MAX_SHOWN)
  const FINAL = { ready: true, failed: true };

  function start() {
    const table = document.querySelector("table[data-live-rows]");
    if (!table || !window.fetch) return;
    const url = table.getAttribute("data-live-rows");
    const tbody = table.tBodies[0];
    const region = document.getElementById("status-announcer");
    let timer = null;
    let idle = 0;
    let stopped = false;
    let busy = false; // a request is on its way

    function rowOf(id) {
      for (const row of tbody.rows) if (row.getAttribute("data-row-of") === id) return row;
      return null;
    }

    function pendingShown() {
      for (const row of tbody.rows) if (!FINAL[row.getAttribute("data-status")]) return true;
      return false;
    }

    function build(html) {
      const holder = document.createElement("template");
      holder.innerHTML = html; // rendered and escaped by the server's own template
      const row = holder.content.firstElementChild;
      return row && row.tagName === "TR" ? row : null;
    }

    // What one answer changed, said at once in the aria-live region (see flush).
    let said = [];

    function announce(text) {
      said.push(text);
    }

    function flush() {
      if (region && said.length) region.textContent = said.join("; ");
      said = [];
    }

    function titleOf(row) {
      const link = row.querySelector("[data-title-of]");
      return link ? link.textContent : "an item";
    }

    // The rows endpoint with the ids of the rows shown.
    function pollUrl() {
      const params = new URLSearchParams();
      let n = 0;
      for (const row of tbody.rows) {
        if (n >= MAX_SHOWN) break;
        const id = row.getAttribute("data-row-of");
        if (id) params.append("shown", id);
        n += 1;
      }
      const extra = params.toString();
      if (!extra) return url;
      return url + (url.indexOf("?") === -1 ? "?" : "&") + extra;
    }

    // A shown row with a fresh copy from the server, its checkbox kept; true when replaced.
    function refresh(shown, entry) {
      if (shown.getAttribute("data-status") === entry.status) return false;
      const row = build(entry.html);
      if (!row) return false;
      const was = shown.querySelector("input[type=checkbox]");
      const box = row.querySelector("input[type=checkbox]");
      if (was && box) box.checked = was.checked;
      shown.replaceWith(row);
      announce(titleOf(row) + ": " + entry.status);
      return true;
    }

    // Removes the rows of items gone (deleted elsewhere, or no longer matching the filters);
    // true when one was removed.
    function drop(ids) {
      const gone = [];
      ids.forEach(function (id) {
        const row = rowOf(String(id));
        if (!row) return;
        gone.push(titleOf(row));
        row.remove();
      });
      if (gone.length === 1) announce("No longer in the list: " + gone[0]);
      else if (gone.length > 1) announce(gone.length + " items are no longer in the list");
      return gone.length > 0;
    }

    // The empty notice when no row is left, the table when one is.
    function showEmpty() {
      const holder = document.getElementById("library-rows");
      const empty = document.getElementById("library-empty");
      const none = tbody.rows.length === 0;
      if (holder) holder.hidden = none;
      if (empty) empty.hidden = !none;
    }

    // Keeps at most MAX_SHOWN rows: the oldest go (they are on the later pages).
    function trim() {
      let trimmed = false;
      while (tbody.rows.length > MAX_SHOWN) {
        tbody.rows[tbody.rows.length - 1].remove();
        trimmed = true;
      }
      if (trimmed) note("Older items are on the next pages: reload the page to page through them.");
    }

    // Puts the answer's rows in; true when the table changed.
    function apply(rows) {
      let changed = false;
      rows.forEach(function (entry, index) {
        const id = String(entry.id);
        const shown = rowOf(id);
        if (shown) {
          if (refresh(shown, entry)) changed = true;
          return;
        }
        const row = build(entry.html);
        if (!row) return;
        changed = true;
        // New: before the next row of the answer that is on the page, else after the one
        // before it (the answer's order is the page's), else first.
        let before = null;
        for (let k = index + 1; k < rows.length && !before; k++) before = rowOf(String(rows[k].id));
        let after = null;
        for (let k = index - 1; k >= 0 && !before && !after; k--) after = rowOf(String(rows[k].id));
        if (before) tbody.insertBefore(row, before);
        else if (after) after.after(row);
        else tbody.insertBefore(row, tbody.firstChild);
        announce("New in the library: " + titleOf(row) + " (" + entry.status + ")");
      });
      return changed;
    }

    function note(text) {
      let p = document.getElementById("library-live-note");
      if (!p) {
        p = document.createElement("p");
        p.id = "library-live-note";
        p.className = "hint";
        table.closest("#library-rows").after(p);
      }
      p.textContent = text;
    }

    function schedule(pending) {
      if (stopped || document.hidden) return;
      if (idle >= MAX_IDLE_POLLS) {
        stopped = true;
        note("The list stopped updating itself: reload the page to see new items.");
        return;
      }
      timer = window.setTimeout(poll, pending ? FAST_MS : SLOW_MS);
    }

    function poll() {
      timer = null;
      busy = true;
      fetch(pollUrl(), { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (response) {
          if (!response.ok) throw new Error("status " + response.status);
          return response.json();
        })
        .then(function (answer) {
          busy = false;
          let changed = drop(Array.isArray(answer.gone) ? answer.gone : []);
          if (apply(Array.isArray(answer.rows) ? answer.rows : [])) changed = true;
          (Array.isArray(answer.others) ? answer.others : []).forEach(function (entry) {
            const shown = rowOf(String(entry.id));
            if (shown && refresh(shown, entry)) changed = true;
          });
          if (changed) {
            trim();
            showEmpty();
          }
          flush();
          const pending = Boolean(answer.pending) || pendingShown();
          idle = changed || pending ? 0 : idle + 1;
          schedule(pending);
        })
        .catch(function () {
          busy = false;
          idle += 1; // offline or busy for a moment: try again later, within the bound
          schedule(false);
        });
    }

    document.addEventListener("visibilitychange", function () {
      if (document.hidden) {
        if (timer !== null) window.clearTimeout(timer);
        timer = null;
      } else if (!stopped && !busy && timer === null) {
        idle = 0;
        poll();
      }
    });

    schedule(pendingShown());
  }

  if (window.Relata && window.Relata.ready) window.Relata.ready(start);
  else if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
