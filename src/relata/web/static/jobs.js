// The jobs page's live status: while a job on the page is pending or running, poll
// GET /api/v1/jobs (the session cookie; the workspace by header) and update the rows in place,
// in an aria-live region. Bounded: at most MAX_POLLS requests, and it stops at the first error
// or once nothing on the page is still moving. Without this script the page shows the state
// on reload.
"use strict";

(function () {
  const INTERVAL_MS = 3000;
  const MAX_POLLS = 200; // 10 minutes
  const MOVING = ["pending", "running"];
  const KNOWN = ["pending", "running", "succeeded", "failed", "cancelled"];

  // "2024-05-01T12:34:56.789+00:00" -> "2024-05-01 12:34", as the page's `when` filter shows it.
  function when(iso) {
    return typeof iso === "string" && iso.length >= 16 ? iso.slice(0, 10) + " " + iso.slice(11, 16) : "";
  }

  function setText(row, name, text) {
    const cell = row.querySelector('[data-field="' + name + '"]');
    if (cell && cell.textContent !== text) cell.textContent = text;
  }

  function updateRow(row, job) {
    const status = KNOWN.indexOf(job.status) >= 0 ? job.status : "unknown";
    const chip = row.querySelector('[data-field="status"]');
    if (chip && chip.textContent !== status) {
      chip.textContent = status;
      chip.className = "status status-" + status;
    }
    setText(row, "attempts", job.attempts + " of " + job.max_attempts);
    setText(row, "started_at", when(job.started_at));
    setText(row, "finished_at", when(job.finished_at));
    setText(row, "last_error", job.last_error || "");
    const error = row.querySelector("[data-error]");
    if (error) error.hidden = !job.last_error;
    const retry = row.querySelector("form[data-retry]");
    if (retry) retry.hidden = status !== "failed";
    return MOVING.indexOf(status) >= 0;
  }

  function setup() {
    const region = document.getElementById("jobs-live");
    if (!region || region.getAttribute("data-live") !== "true") return;
    const url = region.getAttribute("data-api");
    const workspace = region.getAttribute("data-workspace");
    const note = region.querySelector("[data-live-note]");
    const firstPage = region.getAttribute("data-first-page") === "true";
    const rows = {};
    let newest = 0;
    region.querySelectorAll("tr[data-job-id]").forEach(function (row) {
      rows[row.getAttribute("data-job-id")] = row;
      const created = Date.parse(row.getAttribute("data-created") || "");
      if (created > newest) newest = created;
    });
    let polls = 0;

    function say(text) {
      if (!note) return;
      note.textContent = text;
      note.hidden = !text;
    }

    function apply(jobs) {
      let moving = false;
      let added = 0;
      jobs.forEach(function (job) {
        const row = rows[job.id];
        if (row) moving = updateRow(row, job) || moving;
        else if (firstPage && Date.parse(job.created_at) > newest) added += 1;
      });
      Object.keys(rows).forEach(function (id) {
        const chip = rows[id].querySelector('[data-field="status"]');
        if (chip && MOVING.indexOf(chip.textContent) >= 0) moving = true;
      });
      return { moving: moving, added: added };
    }

    function poll() {
      polls += 1;
      window.Relata.getJSON(url, workspace)
        .then(function (body) {
          const result = apply(Array.isArray(body.jobs) ? body.jobs : []);
          const more = result.added ? result.added + " new job" + (result.added === 1 ? "" : "s") +
            " since the page loaded: reload to see them. " : "";
          if (!result.moving) {
            say(more + "Every job on this page has finished.");
          } else if (polls >= MAX_POLLS) {
            say(more + "Live status paused: reload the page for the latest.");
          } else {
            say(more);
            window.setTimeout(poll, INTERVAL_MS);
          }
        })
        .catch(function () {
          say("Live status stopped: reload the page for the latest.");
        });
    }

    window.setTimeout(poll, INTERVAL_MS);
  }

  (window.Relata && window.Relata.ready ? window.Relata.ready : function (fn) {
    document.addEventListener("DOMContentLoaded", fn);
  })(setup);
})();
