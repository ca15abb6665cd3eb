// The settings pages' conveniences; both work without this script.
// - Re-embedding progress: while the latest re-embed job is pending or running, poll
//   GET /api/v1/settings/models (the session cookie; the workspace by header) and move the
//   <progress>. Bounded: at most MAX_POLLS requests; it stops at the first error or when the
//   job is done. Without the script the page shows the state on reload.
// - A "Copy" button beside a new token's secret (the secret stays on the page only).
"use strict";

(function () {
  const INTERVAL_MS = 3000;
  const MAX_POLLS = 200; // 10 minutes
  const MOVING = ["pending", "running"];

  function part(section, name) {
    return section.querySelector('[data-reembed="' + name + '"]');
  }

  function show(section, body) {
    const counts = body.counts || {};
    const job = body.reembed;
    const progress = section.querySelector("progress");
    const chunks = Number(counts.chunks) || 0;
    const current = Number(counts.embedded_with_current_model) || 0;
    if (progress) {
      progress.max = Math.max(chunks, 1);
      progress.value = Math.min(current, progress.max);
      progress.textContent = current + " of " + chunks;
    }
    const summary = part(section, "summary");
    if (summary) summary.textContent = current + " of " + chunks;
    if (!job) return false;
    const status = part(section, "status");
    if (status && status.textContent !== job.status) {
      status.textContent = job.status;
      status.className = "status status-" + (/^[a-z]+$/.test(job.status) ? job.status : "unknown");
    }
    const done = part(section, "done");
    if (done) done.textContent = String(job.chunks_done);
    const error = part(section, "error");
    const errorText = part(section, "error-text");
    if (error && errorText) {
      errorText.textContent = job.last_error || "";
      error.hidden = !job.last_error;
    }
    return MOVING.indexOf(job.status) >= 0;
  }

  function reembedProgress() {
    const section = document.getElementById("reembed");
    if (!section || section.getAttribute("data-live") !== "true") return;
    const url = section.getAttribute("data-api");
    const workspace = section.getAttribute("data-workspace");
    let polls = 0;

    function poll() {
      polls += 1;
      window.Relata.getJSON(url, workspace)
        .then(function (body) {
          if (show(section, body) && polls < MAX_POLLS) window.setTimeout(poll, INTERVAL_MS);
        })
        .catch(function () { /* the page still shows the state on reload */ });
    }

    window.setTimeout(poll, INTERVAL_MS);
  }

  function copyButtons() {
    document.querySelectorAll("button[data-copy]").forEach(function (button) {
      const field = document.getElementById(button.getAttribute("data-copy"));
      const status = document.querySelector("[data-copy-status]");
      if (!field || !navigator.clipboard) return;
      button.hidden = false;
      button.addEventListener("click", function () {
        navigator.clipboard.writeText(field.value).then(
          function () { if (status) status.textContent = "Copied."; },
          function () {
            field.select();
            if (status) status.textContent = "Could not copy: the token is selected, copy it yourself.";
          }
        );
      });
    });
  }

  (window.Relata && window.Relata.ready ? window.Relata.ready : function (fn) {
    document.addEventListener("DOMContentLoaded", fn);
  })(function () {
    reembedProgress();
    copyButtons();
  });
})();
